// coretodump: an ELF core file, or a live process stopped for the read, on
// glibc's malloc into a libdump heap dump (docs/COREDUMP.md) that readdump,
// heapview and dumptohprof read as they read the runtime's own.
//
// Exit codes as the other tools: 0 ok, 1 invalid input (one line naming the
// file or process and what is wrong) or a refused or failed output, 2 usage.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core_image.h"
#include "dump_emitter.h"
#include "heap_walker.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "detach_on_signal.h"
#include "live_copy.h"
#include "live_image.h"
#include "module_files.h"
#include "number_option.h"
#include "output_file.h"
#include "version.h"

namespace po = boost::program_options;
using namespace libdump;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;

int Usage(const std::string& why) {
  std::cerr << "coretodump: " << why << "\nTry 'coretodump --help'.\n";
  return kExitUsage;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

struct Options {
  std::string core, exe, out, pid, debug_dir;
  std::vector<std::string> binaries;
  bool zstd = false, quiet = false, force = false;
};

// The allocator's walk of the image: the first walker that recognises it.
// A heap no walker reads is named in one line (through *error).
std::optional<heapwalk::HeapWalk> WalkHeap(const procimage::ProcessImage& image, std::string* error) {
  if (std::string other = heapwalk::OtherAllocator(image); !other.empty()) {
    *error = image.Describe() + ": " + other;
    return std::nullopt;
  }
  std::string reasons;
  for (const auto& walker : heapwalk::AllWalkers()) {
    std::string why;
    if (walker->Recognise(image, &why)) return walker->Walk(image);
    reasons += (reasons.empty() ? "" : "; ") + std::string(walker->Name()) + ": " + why;
  }
  *error = image.Describe() + ": no heap coretodump reads (" + reasons + ")";
  return std::nullopt;
}

// Where the live copy's temporary file goes: beside the output, which
// needs room of the same order; $TMPDIR for standard output.
std::string CopyDir(const std::string& out) {
  if (out != "-") {
    const auto slash = out.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash);
  }
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != 0 ? tmp : "/tmp";
}

struct Converted {
  heapwalk::HeapWalk walk;
  coretodump::EmitResult emitted;
};

// Walks the image and writes its dump. Throws OutputError.
std::optional<Converted> Convert(const procimage::ProcessImage& image, const Options& o, tools::OutputFile& out,
                                 std::string* error) {
  std::optional<heapwalk::HeapWalk> walk = WalkHeap(image, error);
  if (!walk) return std::nullopt;
  coretodump::ModuleFiles files(o.binaries);
  coretodump::EmitOptions eo;
  eo.unwind.debug_dir = o.debug_dir;
  eo.unwind.module_file = [&](const procimage::ImageModule& m) { return files.FileFor(m); };
  format::FdSink fd(out.fd());
  std::optional<format::ZstdSink> zstd;
  if (o.zstd) zstd.emplace(fd, 3);
  format::Sink& sink = zstd ? static_cast<format::Sink&>(*zstd) : fd;
  Converted c;
  {
    format::Writer w(sink);
    c.emitted = coretodump::EmitDump(image, *walk, w, eo);
    w.Flush();
  }
  if (zstd) zstd->Finish();
  if (sink.error() != 0 || fd.error() != 0) {
    throw tools::OutputError(out.path() + ": write failed: " + std::strerror(sink.error() ? sink.error() : fd.error()));
  }
  for (const std::string& p : files.problems()) c.emitted.damage.push_back(p);
  c.walk = std::move(*walk);
  return c;
}

void PrintSummary(const procimage::ProcessImage& image, const Converted& c, double seconds, double stopped) {
  const heapwalk::HeapWalk& w = c.walk;
  const uint64_t damage = w.damage.size() + c.emitted.damaged_objects;
  std::printf("%s: %s (%s): %zu live objects, %llu bytes; %llu free blocks, %llu bytes; %llu damaged; %.2f s",
              image.Describe().c_str(), w.allocator.c_str(), w.found_by.c_str(), w.blocks.size(),
              static_cast<unsigned long long>(w.live_bytes), static_cast<unsigned long long>(w.free_blocks),
              static_cast<unsigned long long>(w.free_bytes), static_cast<unsigned long long>(damage), seconds);
  if (stopped >= 0) std::printf("; target stopped %.3f s", stopped);
  std::printf("\n");
}

void PrintDamage(const procimage::ProcessImage& image, const Converted& c) {
  size_t shown = 0;
  auto line = [&](const std::string& s) {
    if (shown++ < 20) std::cerr << "coretodump: damage: " << s << "\n";
  };
  for (const std::string& d : image.Damage()) line(d);
  for (const heapwalk::HeapDamage& d : c.walk.damage) {
    char at[24];
    std::snprintf(at, sizeof at, "0x%llx", static_cast<unsigned long long>(d.addr));
    line(std::string(at) + ": " + d.what);
  }
  for (const std::string& d : c.emitted.damage) line(d);
  if (shown > 20) std::cerr << "coretodump: damage: ... and " << shown - 20 << " more\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  po::options_description visible(
      "usage: coretodump [options] CORE [EXE] -o OUT.dump\n"
      "       coretodump [options] --pid PID -o OUT.dump\n"
      "Writes the glibc malloc heap of an ELF core file (gcore, the kernel's) or of a running\n"
      "process (stopped while its memory is copied once, into an unlinked file beside OUT or in $TMPDIR;\n"
      "resumed on every exit path) as a libdump heap dump.\n"
      "EXE is the executable when it is not where the core says. An existing OUT is kept unless --force.\n"
      "exit status: 0 ok, 1 invalid input or failed output, 2 usage error\n"
      "Options");
  visible.add_options()
      ("help,h", "show this help")
      ("version,V", "print the version and exit")
      ("output,o", po::value(&o.out)->value_name("OUT"), "the dump to write")
      ("pid,p", po::value(&o.pid)->value_name("PID"), "read the running process PID (ptrace) instead of a core")
      ("binary", po::value<std::vector<std::string>>(&o.binaries)->value_name("FILE")->composing(),
       "a module's file when it is not at the path the image names, matched by build-id (repeatable)")
      ("debug-dir", po::value(&o.debug_dir)->value_name("DIR"),
       "a directory of separate debug files (.build-id/xx/yyyy.debug) besides /usr/lib/debug")
      ("force,f", po::bool_switch(&o.force), "replace an existing OUT (never a symlink or device, never the core)")
      ("zstd", po::bool_switch(&o.zstd), "compress the dump with zstd")
      ("quiet,q", po::bool_switch(&o.quiet), "no summary line");
  po::options_description hidden;
  hidden.add_options()("core", po::value(&o.core))("exe", po::value(&o.exe));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("core", 1).add("exe", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return Usage(e.what());
  }
  if (vm.count("help")) {
    std::cout << visible;
    return kExitOk;
  }
  if (vm.count("version")) {
    tools::PrintVersion(std::cout, "coretodump");
    return kExitOk;
  }
  if (o.out.empty()) return Usage("needs -o OUT.dump");
  if (o.pid.empty() == o.core.empty()) return Usage("needs a CORE file or --pid PID, not both");
  if (!o.pid.empty() && !o.exe.empty()) return Usage("EXE goes with a CORE file, not --pid");
  if (o.out == "-" && ::isatty(STDOUT_FILENO)) return Usage("standard output is a terminal; redirect it");
  std::optional<uint64_t> pid;
  if (!o.pid.empty()) {
    pid = tools::ParseUintOption(o.pid, 1, 0x3fffffff);
    if (!pid) return Usage("--pid needs a process id, not '" + o.pid + "'");
  }

  const auto start = std::chrono::steady_clock::now();
  try {
    struct stat core_st;
    const bool have_core_st = !o.core.empty() && ::stat(o.core.c_str(), &core_st) == 0;
    tools::OutputFile out(tools::OutputSpec{o.out, o.force, 0600, have_core_st ? &core_st : nullptr});
    std::string error;
    std::optional<Converted> c;
    double stopped = -1;
    std::unique_ptr<procimage::ProcessImage> image;
    if (pid) {
      procimage::LiveOptions lo;
      lo.binaries = o.binaries;
      auto live = procimage::LiveImage::Attach(static_cast<int>(*pid), lo);
      std::unique_ptr<procimage::LiveCopy> copy;
      {
        // A signal to the tool lets the target go before the tool dies (after
        // the output file's own handler: made later, it runs first).
        procimage::DetachOnSignal guard(live->StoppedThreads());
        // The target is stopped only while its memory is copied; the walk
        // and the payloads read the copy (docs/COREDUMP.md).
        copy = procimage::LiveCopy::Take(std::move(live), CopyDir(o.out));
      }
      stopped = std::chrono::duration<double>(copy->StoppedFor()).count();
      c = Convert(*copy, o, out, &error);
      image = std::move(copy);
    } else {
      procimage::CoreOptions co;
      co.executable = o.exe;
      co.binaries = o.binaries;
      if (!o.exe.empty()) o.binaries.push_back(o.exe);
      image = procimage::CoreImage::Open(o.core, co);
      c = Convert(*image, o, out, &error);
    }
    if (!c) {
      // A damaged image says first what it lacks and where (a truncated
      // core: the offset where it ends), then why no heap could be read.
      const std::vector<std::string> damage = image->Damage();
      auto cause = std::find_if(damage.begin(), damage.end(),
                                [](const std::string& d) { return d.find("PT_NOTE") != std::string::npos; });
      if (cause == damage.end() && !damage.empty()) cause = damage.begin();
      if (cause != damage.end()) error = *cause + "; " + error;
      std::cerr << "coretodump: " << error << "\n";
      return kExitInvalid;
    }
    out.Commit();
    PrintDamage(*image, *c);
    if (!o.quiet) PrintSummary(*image, *c, Seconds(start), stopped);
  } catch (const std::exception& e) {
    // CoreError, LiveError, OutputError: one line naming the file or process.
    std::cerr << "coretodump: " << e.what() << "\n";
    return kExitInvalid;
  }
  return kExitOk;
}
