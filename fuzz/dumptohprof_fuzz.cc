// dumptohprof's whole conversion (both passes, the parallel one on two
// threads with small chunks) of any input into memory: a FormatError or an
// hprof file, never a crash, hang or runaway allocation.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "converter.h"
#include "libdump/format/reader.h"
#include "libdump/format/hprof_writer.h"

namespace {

// The input as a file (the converter opens its input by path, twice and in
// chunks): one memfd, rewritten for each input.
int InputFd() {
  static const int fd = memfd_create("dumptohprof_fuzz", MFD_CLOEXEC);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = InputFd();
  if (fd < 0 || ftruncate(fd, 0) != 0) __builtin_trap();
  for (size_t done = 0; done < size;) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  libdump::format::hprof::StringOutput out;
  libdump::dumptohprof::ConvertOptions options;
  options.threads = 2;
  options.chunk_bytes = 512;
  options.max_segment = 1 << 16;
  try {
    libdump::dumptohprof::Convert(path, out, options);
  } catch (const libdump::format::FormatError&) {
  }
  return 0;
}
