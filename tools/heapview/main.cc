// heapview: serves a heap dump (libdump's, plain, zstd or gzip; or an hprof)
// as HTML pages at http://127.0.0.1:7000/ - jhat's pages plus retained
// sizes, dominators, leak suspects and a baseline diff (docs/HEAPVIEW.md).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "heap_graph.h"
#include "libdump/format/reader.h"
#include "load.h"
#include "server.h"
#include "site.h"
#include "typing.h"

namespace {

namespace po = boost::program_options;
using libdump::heapgraph::HeapGraph;

constexpr const char* kUsage =
    "usage: heapview [--port 7000] [--bind 127.0.0.1] [--baseline OLD] FILE\n"
    "\n"
    "Indexes FILE (a libdump heap dump, plain, zstd or gzip, or a JAVA PROFILE\n"
    "1.0.1/1.0.2 hprof) and serves it at http://127.0.0.1:PORT/ until Ctrl-C.\n"
    "jhat's -port and -baseline are accepted too.\n"
    "\n"
    "exit status: 0 stopped by a signal, 1 bad input or cannot listen, 2 usage error\n"
    "\n";

bool IsLoopback(const std::string& a) { return a == "127.0.0.1" || a == "::1" || a == "localhost" || a.starts_with("127."); }

// Opens one file, printing a progress line on stderr while it reads.
void OpenWithProgress(const std::string& path, HeapGraph& g, const libdump::typing::Options& typing, bool quiet) {
  const bool tty = isatty(2);
  std::string last;
  libdump::typing::Open(path, g, typing, [&](const char* step, uint64_t offset) {
    if (quiet) return;
    std::string line = "heapview: indexing " + path + ": " + step;
    if (offset) line += " " + std::to_string(offset >> 20) + " MB";
    if (tty) {
      std::cerr << '\r' << line << "\033[K" << std::flush;
    } else if (std::string(step) != last) {
      std::cerr << line << '\n';
    }
    last = step;
  });
  if (tty && !quiet) std::cerr << '\r' << "\033[K";
}

}  // namespace

int main(int argc, char** argv) {
  std::string file, baseline, bind = "127.0.0.1";
  unsigned port = 7000, threads = 0;
  bool quiet = false;
  libdump::typing::Options typing;
  po::options_description visible("options");
  visible.add_options()("help,h", "print this help and exit")(
      "port", po::value<unsigned>(&port)->value_name("N"), "TCP port (default 7000; 0 picks a free one)")(
      "bind", po::value<std::string>(&bind)->value_name("ADDR"),
      "address to listen on (default 127.0.0.1; any other is reachable from other machines: a warning says so)")(
      "baseline", po::value<std::string>(&baseline)->value_name("OLD"),
      "an older dump of the same program: new objects are marked and /diff shows the histogram delta")(
      "threads", po::value<unsigned>(&threads)->value_name("N"), "server threads (default: cores, at least 2)")(
      "quiet,q", po::bool_switch(&quiet), "no progress line")(
      "binary", po::value<std::vector<std::string>>(&typing.binaries)->value_name("FILE")->composing(),
      "an ELF file of the dumped process with symbols or DWARF, for typing (repeatable; docs/TYPING.md)")(
      "debug-dir", po::value<std::vector<std::string>>(&typing.debug_dirs)->value_name("DIR")->composing(),
      "a directory of separate debug files (.build-id/xx/yyyy.debug), for typing (repeatable)")(
      "no-typing", "keep the dump's own classes: no typing pass");
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::string>(&file));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  try {
    // allow_long_disguise: jhat's single-dash "-port 7000" and "-baseline OLD".
    po::store(po::command_line_parser(argc, argv)
                  .options(all)
                  .positional(positional)
                  .style(po::command_line_style::default_style | po::command_line_style::allow_long_disguise)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "heapview: " << e.what() << "\nTry 'heapview --help'.\n";
    return 2;
  }
  if (vm.count("no-typing")) typing.enabled = false;
  if (vm.count("help")) {
    std::cout << kUsage << visible;
    return 0;
  }
  if (file.empty()) {
    std::cerr << "heapview: no FILE given\nTry 'heapview --help'.\n";
    return 2;
  }
  if (port > 65535) {
    std::cerr << "heapview: --port must be at most 65535\n";
    return 2;
  }
  if (!IsLoopback(bind)) {
    std::cerr << "heapview: warning: listening on " << bind
              << ": other machines can read every byte of this heap; use --bind 127.0.0.1 to keep it local\n";
  }

  HeapGraph g, base;
  std::string current = file;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    OpenWithProgress(file, g, typing, quiet);
    if (!baseline.empty()) {
      current = baseline;
      OpenWithProgress(baseline, base, typing, quiet);
      current = file;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char line[256];
    snprintf(line, sizeof line, "heapview: %s: %zu objects, %llu bytes, %zu classes, indexed in %.2f s\n",
             file.c_str(), g.size(), static_cast<unsigned long long>(g.total_bytes), g.classes.size(), secs);
    if (!quiet) std::cerr << line;
  } catch (const libdump::format::FormatError& e) {
    std::cerr << current << ':' << e.what() << '\n';
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << current << ": out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << current << ": " << e.what() << '\n';
    return 1;
  }

  libdump::heapview::Site site(g, baseline.empty() ? nullptr : &base);
  libdump::heapview::ServerOptions so;
  so.bind = bind == "localhost" ? "127.0.0.1" : bind;
  so.port = static_cast<uint16_t>(port);
  so.threads = threads ? threads : std::max(2u, std::thread::hardware_concurrency());
  try {
    libdump::heapview::Serve(site, so, [](const std::string& url) {
      std::cout << "heapview: serving " << url << " (Ctrl-C stops)" << std::endl;
    });
  } catch (const std::exception& e) {
    std::cerr << "heapview: " << e.what() << '\n';
    return 1;
  }
  std::cerr << "heapview: stopped\n";
  return 0;
}
