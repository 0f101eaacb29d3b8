#include "platform/proc/thread_list.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace libdump::proc {

namespace {

// The kernel's linux_dirent64; glibc's readdir would allocate a DIR.
struct Dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

bool ParseTid(const char* s, pid_t* tid) {
  if (*s == '\0') return false;
  long v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    v = v * 10 + (*s - '0');
  }
  *tid = static_cast<pid_t>(v);
  return true;
}

ssize_t ReadSmallFile(const char* path, char* buf, size_t size) {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return -1;
  ssize_t n = 0;
  while (static_cast<size_t>(n) < size - 1) {
    const ssize_t got = syscall(SYS_read, fd, buf + n, size - 1 - n);
    if (got <= 0) break;
    n += got;
  }
  syscall(SYS_close, fd);
  buf[n] = '\0';
  return n;
}

}  // namespace

long ListThreads(pid_t* out, size_t max) {
  const int fd = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd < 0) return -1;
  alignas(8) char buf[4096];
  long count = 0;
  for (;;) {
    const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<Dirent64*>(buf + off);
      pid_t tid;
      if (ParseTid(d->d_name, &tid)) {
        if (static_cast<size_t>(count) < max) out[count] = tid;
        ++count;
      }
      off += d->d_reclen;
    }
  }
  syscall(SYS_close, fd);
  std::sort(out, out + std::min(static_cast<size_t>(count), max));
  return count;
}

std::vector<pid_t> ListThreads() {
  std::vector<pid_t> tids(64);
  for (;;) {
    const long n = ListThreads(tids.data(), tids.size());
    if (n <= static_cast<long>(tids.size())) {
      tids.resize(n < 0 ? 0 : static_cast<size_t>(n));
      return tids;
    }
    tids.resize(static_cast<size_t>(n) + 16);  // room for threads started meanwhile
  }
}

bool ReadThreadStat(pid_t tid, char* name, size_t name_size, char* state) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  char buf[512];
  if (ReadSmallFile(path, buf, sizeof buf) <= 0) return false;
  // "tid (comm) S ...": comm may itself contain ')' so take the last one.
  const char* open = std::strchr(buf, '(');
  const char* close = std::strrchr(buf, ')');
  if (open == nullptr || close == nullptr || close < open || close[1] != ' ') return false;
  const size_t len = std::min<size_t>(static_cast<size_t>(close - open - 1), name_size - 1);
  std::memcpy(name, open + 1, len);
  name[len] = '\0';
  *state = close[2];
  return true;
}

long ReadThreadSyscall(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", static_cast<int>(tid));
  char buf[64];
  if (ReadSmallFile(path, buf, sizeof buf) <= 0 || buf[0] < '0' || buf[0] > '9') return -1;
  long nr = 0;
  for (const char* p = buf; *p >= '0' && *p <= '9'; ++p) nr = nr * 10 + (*p - '0');
  return nr;
}

}  // namespace libdump::proc
