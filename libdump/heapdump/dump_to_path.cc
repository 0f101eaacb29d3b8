#include "dump_to_path.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

namespace libdump::heapdump {

std::string ExpandDumpPath(const char* pattern) {
  if (pattern == nullptr || *pattern == '\0') pattern = kDefaultDumpPath;
  std::string out;
  for (const char* p = pattern; *p; ++p) {
    if (*p != '%' || p[1] == '\0') {
      out += *p;
      continue;
    }
    ++p;
    if (*p == 'p') out += std::to_string(getpid());
    else if (*p == 't') out += std::to_string(static_cast<long long>(std::time(nullptr)));
    else out += *p;
  }
  return out;
}

int DumpToPath(const char* pattern, const HeapDumpOptions& options, const char* why) {
  const std::string path = ExpandDumpPath(pattern);
  // Written under a temporary name and renamed when complete: whoever waits
  // for the file never reads half a dump, and a failed one leaves nothing.
  const std::string partial = path + ".partial";
  const int fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    std::fprintf(stderr, "libdump: cannot create heap dump %s %s: %s\n", partial.c_str(), why, std::strerror(err));
    return err;
  }
  int err = WriteHeapDump(fd, options);
  if (close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && rename(partial.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    unlink(partial.c_str());
    std::fprintf(stderr, "libdump: heap dump %s %s failed: %s\n", path.c_str(), why, std::strerror(err));
  } else {
    std::fprintf(stderr, "libdump: heap dump %s written to %s\n", why, path.c_str());
  }
  return err;
}

}  // namespace libdump::heapdump
