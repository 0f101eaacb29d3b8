// dumptohprof: converts a heap dump to a Java HPROF file for VisualVM,
// Eclipse MAT and jhat (docs/HPROF.md).
//
// Exit codes as readdump: 0 ok, 1 invalid input (one line FILE:OFFSET: kind
// K: reason; a missing file, a directory) or a refused or failed output, 2
// usage (unknown option, a value out of range).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>

#include "converter.h"
#include "own_line.h"
#include "dwarf_loader.h"
#include "input_file.h"
#include "libdump/format/hprof_threaded_output.h"
#include "libdump/format/hprof_writer.h"
#include "libdump/format/reader.h"
#include "number_option.h"
#include "output_file.h"
#include "progress.h"
#include "typing.h"
#include "version.h"

namespace po = boost::program_options;
using namespace libdump;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;

uint64_t MtimeMs(const struct stat& st) {
  return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000 + static_cast<uint64_t>(st.st_mtim.tv_nsec) / 1000000;
}

uint64_t NowMs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

int Usage(const std::string& why) {
  std::cerr << "dumptohprof: " << why << "\nTry 'dumptohprof --help'.\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dump, out, class_map, binary, threads = "0", segment = "1024";
  libdump::typing::Options typing;
  dumptohprof::ConvertOptions options;
  bool quiet = false, force = false;
  po::options_description visible(
      "usage: dumptohprof [options] DUMP OUT.hprof\n"
      "Converts a libdump heap dump (plain, zstd or gzip) to JAVA PROFILE 1.0.2 for VisualVM,\n"
      "Eclipse MAT and jhat. DUMP '-' reads standard input, OUT '-' writes standard output.\n"
      "An existing OUT is kept unless --force; OUT takes DUMP's permissions.\n"
      "exit status: 0 ok, 1 invalid input or failed output, 2 usage error\n"
      "Options");
  visible.add_options()
      ("help,h", "show this help")
      ("version,V", "print the version and exit")
      ("force,f", po::bool_switch(&force), "replace an existing OUT (and --class-map file); never a symlink or device")
      ("redact", po::bool_switch(&options.redact), "write zeros for every byte that is not a pointer")
      ("include-own", po::bool_switch(&options.include_own),
       "convert libdump's own memory (its dump writer, symbolizer, buffers) too, one class per component; "
       "left out by default")
      ("class-map", po::value(&class_map)->value_name("FILE"),
       "write TYPEID<TAB>CLASS<TAB>COUNT lines for every dump type to FILE ('-': standard output)")
      ("binary", po::value(&binary)->value_name("PROG"),
       "a Go runtime's dump: name its objects by the Go types in PROG's DWARF (the program that wrote it)")
      ("no-typing", "a libdump dump's untyped objects stay (untyped): no typing pass (docs/TYPING.md)")
      ("debug-dir", po::value<std::vector<std::string>>(&typing.debug_dirs)->value_name("DIR")->composing(),
       "a directory of separate debug files (.build-id/xx/yyyy.debug), for typing (repeatable)")
      ("segment-mb", po::value(&segment)->value_name("N")->default_value("1024"), "heap dump segment size in MiB (1..4095)")
      ("threads", po::value(&threads)->value_name("N")->default_value("0"),
       "threads converting objects, 0..256 (0: cores - 1, at most 4; one thread on 2 cores); "
       "the output is the same for any number")
      ("quiet,q", po::bool_switch(&quiet), "no progress line and no summary");
  po::options_description hidden;
  hidden.add_options()("dump", po::value(&dump))("out", po::value(&out));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("dump", 1).add("out", 1);
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
  if (vm.count("no-typing")) typing.enabled = false;
  if (vm.count("version")) {
    tools::PrintVersion(std::cout, "dumptohprof");
    return kExitOk;
  }
  if (dump.empty() || out.empty()) return Usage("needs DUMP and OUT.hprof");
  const auto segment_mb = tools::ParseUintOption(segment, 1, 4095);
  if (!segment_mb) return Usage("--segment-mb needs a number from 1 to 4095, not '" + segment + "'");
  const auto thread_count = tools::ParseUintOption(threads, 0, 256);
  if (!thread_count) return Usage("--threads needs a number from 0 to 256, not '" + threads + "'");
  if (out == class_map) return Usage("OUT and --class-map name the same file");
  if (out == "-" && ::isatty(STDOUT_FILENO) && !force) {
    return Usage("standard output is a terminal; redirect it or use --force");
  }
  options.max_segment = *segment_mb << 20;
  options.threads = static_cast<unsigned>(*thread_count);

  // The program is read before anything is written: a wrong one costs nothing.
  std::optional<godwarf::GoProgram> program;
  if (!binary.empty()) {
    try {
      program.emplace(godwarf::LoadGoProgram(binary));
    } catch (const godwarf::LoadError& e) {
      std::cerr << binary << ": " << e.what() << "\n";
      return kExitInvalid;
    }
    options.program = &*program;
  }

  std::optional<tools::InputFile> input;
  try {
    input.emplace(dump);
  } catch (const tools::InputError& e) {
    std::cerr << (dump == "-" ? "<stdin>" : dump) << ": " << e.what() << "\n";
    return kExitInvalid;
  }
  const std::string& name = input->name();
  const struct stat& st = input->stat();
  options.timestamp_ms = S_ISREG(st.st_mode) ? MtimeMs(st) : NowMs();

  // The summary goes where the hprof does not.
  FILE* const report = out == "-" || class_map == "-" ? stderr : stdout;
  dumptohprof::ProgressLine progress(!quiet && ::isatty(STDERR_FILENO));
  uint64_t pass1_total = 0;
  options.progress = [&](int pass, uint64_t offset) {
    if (pass == 1) {
      pass1_total = offset;
    } else {
      progress.set_total(pass1_total);
    }
    progress.Update(pass, offset);
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    // Both outputs are checked before the conversion starts: a refusal costs nothing.
    const tools::OutputSpec spec{out, force, tools::OutputModeFor(st), &st};
    tools::OutputFile hprof(spec);
    std::optional<tools::OutputFile> map;
    if (!class_map.empty()) map.emplace(tools::OutputSpec{class_map, force, spec.mode, &st});
    input->MakeRereadable();  // two passes: standard input is copied first
    // The typing pass names what the dump leaves untyped (docs/TYPING.md).
    // A dump it cannot read is converted without it: the conversion then
    // reports the problem in its own words.
    dumptohprof::NamedObjects named;
    if (typing.enabled && options.program == nullptr) {
      try {
        heapgraph::HeapGraph g;
        heapgraph::LoadDump(input->path(), g);
        libdump::typing::Type(g, typing);
        std::vector<uint32_t> k_of(g.classes.size(), 0);
        for (heapgraph::Index i = 0; i < g.size(); ++i) {
          const uint32_t c = g.cls[i];
          const heapgraph::NamedBy r = g.classes[c].named_by;
          // Objects without pointers stay byte[], as untyped ones do: readers
          // show their bytes (a string's text).
          if (r == heapgraph::NamedBy::kDump || r == heapgraph::NamedBy::kNothing || g.Out(i).empty()) continue;
          if (k_of[c] == 0) {
            k_of[c] = static_cast<uint32_t>(named.names.size());
            named.names.push_back(g.classes[c].name);
          }
          named.of_address.push_back({g.ids[i], k_of[c]});
        }
      } catch (const std::exception&) {
        named = {};
      }
      options.named = &named;
    }
    // Uncompressed, pass 1 knows its total from the start; compressed, only pass 2 does.
    if (format::Reader::Open(input->path())->compression() == format::Compression::kNone) {
      struct stat spooled;
      if (::stat(input->path().c_str(), &spooled) == 0) progress.set_total(static_cast<uint64_t>(spooled.st_size));
    }
    dumptohprof::ConvertStats s;
    {
      format::hprof::ThreadedFdOutput output(hprof.fd());
      s = dumptohprof::Convert(input->path(), output, options);
    }
    hprof.Commit();
    progress.Done();
    if (map) {
      std::ostringstream m;
      dumptohprof::WriteClassMap(m, s);
      map->Write(m.str());
      map->Commit();
    }
    if (!quiet) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(report, "%s: %llu objects (%llu instances, %llu object arrays, %llu primitive arrays), %llu classes, "
                  "%llu threads, %llu frames, %llu roots (%llu dump roots to no object dropped), %llu finalizers, "
                  "%llu objects with allocation stacks; "
                  "%.1f MB dump -> %.1f MB hprof in %llu segments, %.2f s, %.0f MB/s\n",
                  out.c_str(), (unsigned long long)s.objects, (unsigned long long)s.instances,
                  (unsigned long long)s.object_arrays, (unsigned long long)s.primitive_arrays,
                  (unsigned long long)s.classes, (unsigned long long)s.threads, (unsigned long long)s.frames,
                  (unsigned long long)s.roots, (unsigned long long)s.unresolved_roots,
                  (unsigned long long)s.finalizers, (unsigned long long)s.alloc_stacks, s.dump_bytes / 1e6, s.hprof_bytes / 1e6,
                  (unsigned long long)s.segments, secs, secs > 0 ? s.dump_bytes / 1e6 / secs : 0.0);
      if (s.go_typed) {
        const dumptohprof::GoTypingStats& g = s.go;
        std::fprintf(report, "Go types from %s: %llu of %llu objects typed (%.1f%%), %llu of %llu bytes (%.1f%%)\n",
                     binary.c_str(), (unsigned long long)g.typed_objects, (unsigned long long)g.objects,
                     g.objects ? 100.0 * g.typed_objects / g.objects : 0.0, (unsigned long long)g.typed_bytes,
                     (unsigned long long)g.bytes, g.bytes ? 100.0 * g.typed_bytes / g.bytes : 0.0);
      }
      if (s.truncated_arrays) std::fprintf(report, "%llu arrays longer than 4 GiB truncated\n", (unsigned long long)s.truncated_arrays);
      if (const std::string own = tools::OwnLine(s.own_objects, s.own_bytes, options.include_own); !own.empty()) {
        std::fprintf(report, "%s\n", own.c_str());
      }
    }
    return kExitOk;
  } catch (const format::FormatError& e) {
    progress.Done();
    std::cerr << name << ":" << e.what() << "\n";
  } catch (const tools::OutputError& e) {
    progress.Done();
    std::cerr << "dumptohprof: " << e.what() << "\n";
  } catch (const tools::InputError& e) {
    progress.Done();
    std::cerr << name << ": " << e.what() << "\n";
  } catch (const dumptohprof::BinaryMismatch& e) {
    progress.Done();
    std::cerr << name << ": " << e.what() << "\n";
  } catch (const std::system_error& e) {
    progress.Done();
    std::cerr << "dumptohprof: " << e.what() << "\n";
  } catch (const std::exception& e) {
    progress.Done();
    std::cerr << name << ": " << e.what() << "\n";
  }
  return kExitInvalid;
}
