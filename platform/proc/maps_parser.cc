#include "platform/proc/maps_parser.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace libdump::proc {

namespace {

bool ParseHex(const char*& p, const char* end, uint64_t* v) {
  const char* begin = p;
  uint64_t x = 0;
  for (; p < end; ++p) {
    const char c = *p;
    if (c >= '0' && c <= '9') x = x * 16 + static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') x = x * 16 + static_cast<uint64_t>(c - 'a' + 10);
    else break;
  }
  *v = x;
  return p != begin;
}

bool Expect(const char*& p, const char* end, char c) {
  if (p == end || *p != c) return false;
  ++p;
  return true;
}

void SkipField(const char*& p, const char* end) {
  while (p < end && *p != ' ') ++p;
}

void SkipBlanks(const char*& p, const char* end) {
  while (p < end && *p == ' ') ++p;
}

}  // namespace

bool ParseMapsLine(std::string_view line, MapsLine* out) {
  const char* p = line.data();
  const char* end = p + line.size();
  MapsLine m;
  if (!ParseHex(p, end, &m.start) || !Expect(p, end, '-') || !ParseHex(p, end, &m.end)) return false;
  if (!Expect(p, end, ' ') || end - p < 4) return false;
  m.readable = p[0] == 'r';
  m.writable = p[1] == 'w';
  m.executable = p[2] == 'x';
  p += 4;
  if (!Expect(p, end, ' ') || !ParseHex(p, end, &m.offset) || !Expect(p, end, ' ')) return false;
  SkipField(p, end);  // dev
  SkipBlanks(p, end);
  SkipField(p, end);  // inode
  SkipBlanks(p, end);
  const char* path_end = end;
  while (path_end > p && (path_end[-1] == ' ' || path_end[-1] == '\n')) --path_end;
  m.path = std::string_view(p, static_cast<size_t>(path_end - p));
  *out = m;
  return true;
}

bool ReadMaps(MapsVisitor visit, void* arg, const char* path) {
  // Raw system calls: the stopped world may hold a thread inside libc, and
  // the allocator's first call comes before libc is fully set up.
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return false;
  char buf[kMapsLineMax];
  size_t have = 0;
  bool ok = true;
  for (;;) {
    const ssize_t got = syscall(SYS_read, fd, buf + have, sizeof buf - have);
    if (got < 0) {
      ok = false;
      break;
    }
    have += static_cast<size_t>(got);
    // Hand out the complete lines; keep a partial one for the next read
    // (or, at the end of the file, take it as the last line).
    size_t line_start = 0;
    for (size_t i = 0; i < have && ok; ++i) {
      if (buf[i] != '\n') continue;
      MapsLine m;
      if (ParseMapsLine(std::string_view(buf + line_start, i - line_start), &m)) ok = visit(m, arg);
      line_start = i + 1;
    }
    if (!ok) break;
    std::memmove(buf, buf + line_start, have - line_start);
    have -= line_start;
    if (got == 0) {
      MapsLine m;
      if (have > 0 && ParseMapsLine(std::string_view(buf, have), &m)) ok = visit(m, arg);
      break;
    }
    if (have == sizeof buf) {  // a line longer than the buffer
      ok = false;
      break;
    }
  }
  syscall(SYS_close, fd);
  return ok;
}

}  // namespace libdump::proc
