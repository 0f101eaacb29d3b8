// heapview: serves a heap dump (libdump's, plain, zstd or gzip; or an hprof)
// as HTML pages at http://127.0.0.1:7000/ - jhat's pages plus retained
// sizes, dominators, leak suspects and a baseline diff (docs/HEAPVIEW.md).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

#include "growth.h"
#include "heap_graph.h"
#include "index_cache.h"
#include "libdump/format/reader.h"
#include "platform/net/host_names.h"
#include "load.h"
#include "open_progress.h"
#include "progress_line.h"
#include "report.h"
#include "server.h"
#include "site.h"
#include "typing.h"
#include "waiting_page.h"

namespace {

namespace po = boost::program_options;
using libdump::heapgraph::HeapGraph;

constexpr const char* kUsage =
    "usage: heapview [--port 7000] [--bind 127.0.0.1] [--baseline OLD] FILE\n"
    "       heapview [options] --series OLD... NEW\n"
    "\n"
    "Indexes FILE (a libdump heap dump, plain, zstd or gzip, or a JAVA PROFILE\n"
    "1.0.1/1.0.2 hprof) and serves it at http://127.0.0.1:PORT/ until Ctrl-C.\n"
    "jhat's -port and -baseline are accepted too.\n"
    "\n"
    "exit status: 0 stopped by a signal once serving, 130 Ctrl-C during the open,\n"
    "1 bad input or cannot listen, 2 usage error\n"
    "\n";

bool IsLoopback(const std::string& a) { return a == "localhost" || libdump::net::IsLoopbackAddress(a); }

// Where an open reports: the progress line on stderr and the snapshot the
// waiting page shows. `hold`: a test's file, see --hold-open.
struct Reporting {
  libdump::heapview::OpenProgress& state;
  size_t files;
  size_t next = 1;
  std::string hold;
};

// Waits until `path` exists (a poll: the test that made it may be slow).
void HoldUntil(const std::string& path) {
  while (!std::filesystem::exists(path)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Opens one file, printing a progress line on stderr while it reads and
// telling the waiting page how far it is.
libdump::heapgraph::IndexReport OpenWithProgress(const std::string& path, HeapGraph& g,
                                                 const libdump::typing::Options& typing,
                                                 const libdump::heapgraph::IndexOptions& index, bool quiet,
                                                 bool include_own, Reporting& rep) {
  using libdump::heapgraph::ProgressUnit;
  const uint64_t file_total = rep.state.StartFile(path, rep.next++, rep.files);
  libdump::heapgraph::ProgressLine line("heapview: indexing " + path, file_total, !quiet);
  const libdump::heapgraph::Progress progress = [&](const char* step, uint64_t done, uint64_t total,
                                                    ProgressUnit unit) {
    line.Update(step, done, total, unit);
    rep.state.Update(step, done, total, unit);
    if (!rep.hold.empty() && unit == ProgressUnit::kObjects && done > 0) {
      HoldUntil(rep.hold);
      rep.hold.clear();
    }
  };
  libdump::heapgraph::IndexOptions io = index;
  io.salt = libdump::typing::CacheSalt(typing) + (include_own ? "+own" : "");
  g.include_own = include_own;
  const auto report = libdump::heapgraph::OpenIndexed(path, g, progress, io, [&](HeapGraph& h) {
    h.include_own = include_own;
    libdump::typing::Open(path, h, typing, progress);
  });
  line.Clear();
  using libdump::heapgraph::IndexUse;
  if (report.use == IndexUse::kUnsaved) {
    std::cerr << "heapview: " << path << ": index not written: " << report.note << '\n';
  } else if (!quiet && report.use == IndexUse::kSaved && !report.note.empty()) {
    std::cerr << "heapview: " << path << ": index rebuilt (" << report.note << ")\n";
  }
  return report;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file, baseline, bind = "127.0.0.1";
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> files;
  bool series_flag = false;
  unsigned port = 7000, threads = 0;
  bool quiet = false, include_own = false;
  libdump::typing::Options typing;
  libdump::heapgraph::IndexOptions index;
  std::string memory;
  po::options_description visible("options");
  visible.add_options()("help,h", "print this help and exit")(
      "port", po::value<unsigned>(&port)->value_name("N"), "TCP port (default 7000; 0 picks a free one)")(
      "bind", po::value<std::string>(&bind)->value_name("ADDR"),
      "address to listen on (default 127.0.0.1; any other is reachable from other machines: a warning says so)")(
      "allow-host", po::value<std::vector<std::string>>(&allowed_hosts)->value_name("NAME"),
      "a Host name to answer besides the bound address, localhost and loopback addresses (repeatable)")(
      "baseline", po::value<std::string>(&baseline)->value_name("OLD"),
      "an older dump of the same program: new objects are marked and /diff shows the histogram delta")(
      "series", po::bool_switch(&series_flag),
      "--series OLD... NEW: serve NEW, and at /series what grows across the dumps, oldest first")(
      "threads", po::value<unsigned>(&threads)->value_name("N"),
      "server threads, 1 to 64 (default: cores, at least 2)")(
      "quiet,q", po::bool_switch(&quiet), "no progress line")(
      "index-dir", po::value<std::string>(&index.dir)->value_name("DIR"),
      "keep the analysed graph here and reopen it from there (default: $XDG_CACHE_HOME/libdump, "
      "for dumps of 64 MiB or more; with DIR, every dump)")(
      "no-index-cache", po::bool_switch(), "neither read nor write an index")(
      "include-own", po::bool_switch(&include_own),
      "show libdump's own memory (its dump writer, symbolizer, buffers), one class per component; left out by "
      "default")(
      "memory", po::value<std::string>(&memory)->value_name("SIZE"),
      "bound the open's resident memory to SIZE (512M, 2G; default a quarter of physical memory; "
      "'unlimited'): past half of it the graph's arrays go to files in the index directory, read back as "
      "pages are needed")(
      "binary", po::value<std::vector<std::string>>(&typing.binaries)->value_name("FILE")->composing(),
      "an ELF file of the dumped process with symbols or DWARF, for typing (repeatable; docs/TYPING.md)")(
      "debug-dir", po::value<std::vector<std::string>>(&typing.debug_dirs)->value_name("DIR")->composing(),
      "a directory of separate debug files (.build-id/xx/yyyy.debug), for typing (repeatable)")(
      "no-typing", "keep the dump's own classes: no typing pass");
  po::options_description hidden;
  std::string hold;
  // Tests only: the open stops at its first count of objects until FILE
  // exists, so that a test sees the waiting page mid-phase on a small dump.
  hidden.add_options()("file", po::value<std::vector<std::string>>(&files))(
      "hold-open", po::value<std::string>(&hold));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("file", -1);
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
  if (files.empty() || files.back().empty()) {
    std::cerr << "heapview: no FILE given\nTry 'heapview --help'.\n";
    return 2;
  }
  if (vm.count("threads") && (threads < 1 || threads > libdump::heapview::kMaxThreads)) {
    std::cerr << "heapview: --threads must be from 1 to " << libdump::heapview::kMaxThreads << "\n";
    return 2;
  }
  file = files.back();
  if (series_flag ? files.size() < 2 : files.size() > 1) {
    std::cerr << (series_flag ? "heapview: --series needs two dumps or more, oldest first\n"
                              : "heapview: one FILE only (several dumps: --series OLD... NEW)\n");
    return 2;
  }
  files.pop_back();  // the older dumps of a series
  if (port > 65535) {
    std::cerr << "heapview: --port must be at most 65535\n";
    return 2;
  }
  if (std::string why; !libdump::heapgraph::ConfigureMemory(memory, index, &why)) {
    std::cerr << "heapview: " << why << '\n';
    return 2;
  }
  if (!IsLoopback(bind)) {
    std::cerr << "heapview: warning: listening on " << bind
              << ": other machines can read every byte of this heap; use --bind 127.0.0.1 to keep it local\n";
  }

  // Each input is opened once before listening, so that a missing file is
  // one line and no server (standard input is read by the open itself).
  {
    std::vector<std::string> inputs = files;
    inputs.push_back(file);
    if (!baseline.empty()) inputs.push_back(baseline);
    for (const std::string& f : inputs) {
      if (f == "-") continue;
      try {
        libdump::heapgraph::OpenInput(f);
      } catch (const std::exception& e) {
        std::cerr << f << ": " << e.what() << '\n';
        return 1;
      }
    }
  }

  // The server listens before the open, which may take minutes: until the
  // graph is published it answers every page with the waiting page.
  libdump::heapview::OpenProgress open_progress;
  libdump::heapview::Gate gate(open_progress);
  libdump::heapview::ServerOptions so;
  so.bind = bind == "localhost" ? "127.0.0.1" : bind;
  so.port = static_cast<uint16_t>(port);
  for (std::string& h : allowed_hosts) {
    for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  so.allowed_hosts = allowed_hosts;
  so.threads = threads ? threads : std::clamp(std::thread::hardware_concurrency(), 2u, libdump::heapview::kMaxThreads);
  std::optional<libdump::heapview::Server> server;
  try {
    server.emplace([&gate](const std::string& target) { return gate.Handle(target); }, so);
    server->Start();
  } catch (const std::exception& e) {
    std::cerr << "heapview: " << e.what() << '\n';
    return 1;
  }
  if (!quiet) std::cerr << "heapview: " << server->url() << " shows the progress until the dump is open\n";

  HeapGraph g, base;
  std::vector<HeapGraph> older(files.size());
  libdump::heapgraph::Growth growth;
  std::string current = file;
  Reporting reporting{open_progress, 1 + files.size() + (baseline.empty() ? 0 : 1), 1, hold};
  try {
    const auto t0 = std::chrono::steady_clock::now();
    if (vm["no-index-cache"].as<bool>()) index.enabled = false;
    const bool from_index =
        OpenWithProgress(file, g, typing, index, quiet, include_own, reporting).use == libdump::heapgraph::IndexUse::kLoaded;
    if (series_flag) {
      std::vector<const HeapGraph*> series;
      for (size_t k = 0; k < files.size(); ++k) {
        current = files[k];
        OpenWithProgress(files[k], older[k], typing, index, quiet, include_own, reporting);
        series.push_back(&older[k]);
      }
      current = file;
      series.push_back(&g);
      open_progress.Update("what grows across the series", 0, 0, libdump::heapgraph::ProgressUnit::kFileBytes);
      growth = libdump::heapgraph::AnalyzeGrowth(series);
    }
    if (!baseline.empty()) {
      current = baseline;
      OpenWithProgress(baseline, base, typing, index, quiet, include_own, reporting);
      current = file;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char line[256];
    snprintf(line, sizeof line, "heapview: %s: %zu objects, %llu bytes, %zu classes, %s in %.2f s\n",
             file.c_str(), g.size(), static_cast<unsigned long long>(g.total_bytes), g.classes.size(),
             from_index ? "read from its index" : "indexed", secs);
    if (!quiet) std::cerr << line;
    if (const std::string own = libdump::heapgraph::OwnLine(g); !quiet && !own.empty()) {
      std::cerr << "heapview: " << own << '\n';
    }
    if (const auto m = libdump::heapgraph::GetMemoryStats(); !quiet && m.file_arrays) {
      std::cerr << "heapview: " << m.file_arrays << " arrays in files, budget "
                << (libdump::heapgraph::MemoryBudget() >> 20) << " MiB\n";
    }
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
  if (series_flag) site.SetSeries(&growth);
  gate.Publish(&site);
  std::cout << "heapview: serving " << server->url() << " (Ctrl-C stops)" << std::endl;
  server->Run();
  server.reset();
  std::cerr << "heapview: stopped\n";
  return 0;
}
