#include "memory_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace libdump::capture {

namespace {

uint64_t ParseHex(const char*& p, const char* end) {
  uint64_t v = 0;
  for (; p < end; ++p) {
    const char c = *p;
    if (c >= '0' && c <= '9') v = v * 16 + static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v = v * 16 + static_cast<uint64_t>(c - 'a' + 10);
    else break;
  }
  return v;
}

}  // namespace

MemoryMap::MemoryMap(size_t capacity) : capacity_(capacity) {
  void* p = mmap(nullptr, capacity * sizeof(Mapping), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  maps_ = p == MAP_FAILED ? nullptr : static_cast<Mapping*>(p);
  if (maps_ == nullptr) capacity_ = 0;
}

MemoryMap::~MemoryMap() {
  if (maps_ != nullptr) munmap(maps_, capacity_ * sizeof(Mapping));
}

bool MemoryMap::Read() {
  size_ = 0;
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  char buf[8192];
  size_t have = 0;
  bool ok = true;
  for (;;) {
    const ssize_t got = syscall(SYS_read, fd, buf + have, sizeof buf - have);
    if (got < 0) { ok = false; break; }
    have += static_cast<size_t>(got);
    // Parse the complete lines; keep a partial one for the next read.
    size_t line_start = 0;
    for (size_t i = 0; i < have; ++i) {
      if (buf[i] != '\n') continue;
      const char* p = buf + line_start;
      const char* end = buf + i;
      Mapping m;
      m.start = ParseHex(p, end);
      if (p < end && *p == '-') ++p;
      m.end = ParseHex(p, end);
      if (p + 4 < end) {
        m.readable = p[1] == 'r';
        m.writable = p[2] == 'w';
        m.executable = p[3] == 'x';
      }
      const char* tag = static_cast<const char*>(memmem(p, static_cast<size_t>(end - p), "[stack]", 7));
      m.is_stack = tag != nullptr;
      if (size_ == capacity_) { ok = false; break; }
      maps_[size_++] = m;
      line_start = i + 1;
    }
    if (!ok) break;
    std::memmove(buf, buf + line_start, have - line_start);
    have -= line_start;
    if (got == 0) break;
    if (have == sizeof buf) { ok = false; break; }  // a line longer than the buffer
  }
  syscall(SYS_close, fd);
  return ok;
}

const Mapping* MemoryMap::Find(uint64_t addr) const {
  // /proc/self/maps is sorted by address.
  size_t lo = 0, hi = size_;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (maps_[mid].end <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo < size_ && maps_[lo].start <= addr ? &maps_[lo] : nullptr;
}

bool MemoryMap::Readable(uint64_t addr, uint64_t len) const {
  // A range may span adjacent mappings (a stack next to its guard never does
  // that readably, but two anonymous maps can).
  while (len > 0) {
    const Mapping* m = Find(addr);
    if (m == nullptr || !m->readable) return false;
    const uint64_t here = m->end - addr;
    if (here >= len) return true;
    addr += here;
    len -= here;
  }
  return true;
}

}  // namespace libdump::capture
