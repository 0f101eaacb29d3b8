// dumptohprof: converts a heap dump to a Java HPROF file for VisualVM,
// Eclipse MAT and jhat (docs/HPROF.md).
//
// Exit codes as readdump: 0 ok, 1 invalid input or failed output (one line
// FILE:OFFSET: kind K: reason), 2 usage.
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
#include <string>
#include <system_error>

#include "converter.h"
#include "libdump/format/hprof_threaded_output.h"
#include "libdump/format/hprof_writer.h"
#include "libdump/format/reader.h"
#include "progress.h"

namespace po = boost::program_options;
using namespace libdump;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitUsage = 2;

// The output goes to a temporary file beside OUT, renamed over it only once
// complete: a failed conversion never leaves a half-written hprof.
class TempFile {
 public:
  explicit TempFile(const std::string& final_path) : final_(final_path), path_(final_path + ".tmpXXXXXX") {
    fd_ = ::mkstemp(path_.data());
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "cannot create " + path_);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  void Commit() {
    if (::fchmod(fd_, 0644) != 0 || ::fsync(fd_) != 0 || ::close(fd_) != 0) {
      fd_ = -1;
      throw std::system_error(errno, std::generic_category(), "cannot write " + final_);
    }
    fd_ = -1;
    if (::rename(path_.c_str(), final_.c_str()) != 0) {
      throw std::system_error(errno, std::generic_category(), "cannot rename to " + final_);
    }
    committed_ = true;
  }

 private:
  std::string final_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

uint64_t MtimeMs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000 + static_cast<uint64_t>(st.st_mtim.tv_nsec) / 1000000;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dump, out, class_map;
  dumptohprof::ConvertOptions options;
  bool quiet = false;
  uint64_t segment_mb = 1024;
  po::options_description visible(
      "usage: dumptohprof [options] DUMP OUT.hprof\n"
      "Converts a libdump heap dump (plain, zstd or gzip) to JAVA PROFILE 1.0.2 for VisualVM,\n"
      "Eclipse MAT and jhat. Options");
  visible.add_options()
      ("help,h", "show this help")
      ("redact", po::bool_switch(&options.redact), "write zeros for every byte that is not a pointer")
      ("class-map", po::value(&class_map), "write TYPEID<TAB>CLASS<TAB>COUNT lines for every dump type to this file")
      ("segment-mb", po::value(&segment_mb)->default_value(1024), "heap dump segment size in MiB (1..4095)")
      ("threads", po::value(&options.threads)->default_value(0),
       "threads converting objects (0: cores - 1, at most 4; one thread on 2 cores); the output is the same for any number")
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
    std::cerr << "dumptohprof: " << e.what() << "\n" << visible;
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << visible;
    return kExitOk;
  }
  if (dump.empty() || out.empty() || segment_mb == 0 || segment_mb >= 4096) {
    std::cerr << visible;
    return kExitUsage;
  }
  options.max_segment = segment_mb << 20;
  options.timestamp_ms = MtimeMs(dump);
  struct stat st;
  if (::stat(dump.c_str(), &st) != 0) {
    std::cerr << dump << ": cannot open: " << std::strerror(errno) << "\n";
    return kExitInvalid;
  }
  if (!S_ISREG(st.st_mode)) {
    std::cerr << dump << ": not a regular file (dumptohprof reads it twice)\n";
    return kExitUsage;
  }

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
    TempFile tmp(out);
    // Uncompressed, pass 1 knows its total from the start; compressed, only pass 2 does.
    if (format::Reader::Open(dump)->compression() == format::Compression::kNone) {
      progress.set_total(static_cast<uint64_t>(st.st_size));
    }
    format::hprof::ThreadedFdOutput output(tmp.fd());
    const dumptohprof::ConvertStats s = dumptohprof::Convert(dump, output, options);
    tmp.Commit();
    progress.Done();
    if (!class_map.empty()) {
      std::ofstream m(class_map);
      dumptohprof::WriteClassMap(m, s);
      if (!m.flush()) throw std::system_error(errno, std::generic_category(), "cannot write " + class_map);
    }
    if (!quiet) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%s: %llu objects (%llu instances, %llu object arrays, %llu primitive arrays), %llu classes, "
                  "%llu threads, %llu frames, %llu roots (%llu dump roots to no object dropped), %llu finalizers, "
                  "%llu objects with allocation stacks; "
                  "%.1f MB dump -> %.1f MB hprof in %llu segments, %.2f s, %.0f MB/s\n",
                  out.c_str(), (unsigned long long)s.objects, (unsigned long long)s.instances,
                  (unsigned long long)s.object_arrays, (unsigned long long)s.primitive_arrays,
                  (unsigned long long)s.classes, (unsigned long long)s.threads, (unsigned long long)s.frames,
                  (unsigned long long)s.roots, (unsigned long long)s.unresolved_roots,
                  (unsigned long long)s.finalizers, (unsigned long long)s.alloc_stacks, s.dump_bytes / 1e6, s.hprof_bytes / 1e6,
                  (unsigned long long)s.segments, secs, secs > 0 ? s.dump_bytes / 1e6 / secs : 0.0);
      if (s.truncated_arrays) std::printf("%llu arrays longer than 4 GiB truncated\n", (unsigned long long)s.truncated_arrays);
    }
    return kExitOk;
  } catch (const format::FormatError& e) {
    progress.Done();
    std::cerr << dump << ":" << e.what() << "\n";
  } catch (const std::system_error& e) {
    progress.Done();
    std::cerr << "dumptohprof: " << e.what() << "\n";
  } catch (const std::exception& e) {
    progress.Done();
    std::cerr << dump << ": " << e.what() << "\n";
  }
  return kExitInvalid;
}
