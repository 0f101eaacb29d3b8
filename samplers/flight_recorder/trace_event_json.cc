#include "samplers/flight_recorder/trace_event_json.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "samplers/flight_recorder/flight_recorder_buffer.h"
#include "samplers/flight_recorder/flight_recorder_clock.h"
#include "samplers/flight_recorder/flight_recorder_names.h"
#include "samplers/flight_recorder/frame_namer.h"
#include "samplers/flight_recorder/window_events.h"

namespace libdump::samplers {

void JsonOut::Flush() {
  size_t off = 0;
  while (off < len_ && error_ == 0) {
    const ssize_t n = write(fd_, buf_ + off, len_ - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
    } else {
      off += static_cast<size_t>(n);
    }
  }
  written_ += static_cast<int64_t>(off);
  len_ = 0;
}

void JsonOut::Raw(std::string_view s) {
  for (char c : s) Put(c);
}

namespace {
// Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
// surrogates, at most U+10FFFF), or 0.
size_t Utf8Length(const unsigned char* s, size_t n) {
  const unsigned c = s[0];
  size_t len;
  unsigned min;
  if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
  else return 0;
  if (n < len) return 0;
  unsigned cp = c & (0xff >> (len + 1));
  for (size_t i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}
}  // namespace

void JsonOut::String(std::string_view s) {
  Put('"');
  Escaped(s);
  Put('"');
}

void JsonOut::Escaped(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = p[i];
    if (c == '"' || c == '\\') {
      Put('\\');
      Put(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      Raw("\\u00");
      Put(kHex[c >> 4]);
      Put(kHex[c & 15]);
      ++i;
    } else if (c < 0x80) {
      Put(static_cast<char>(c));
      ++i;
    } else if (const size_t len = Utf8Length(p + i, s.size() - i); len != 0) {
      for (size_t k = 0; k < len; ++k) Put(static_cast<char>(p[i + k]));
      i += len;
    } else {
      Raw("\\ufffd");
      ++i;
    }
  }
}

void JsonOut::Uint(uint64_t v) {
  char d[20];
  int n = 0;
  do {
    d[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) Put(d[--n]);
}

void JsonOut::Int(int64_t v) {
  if (v < 0) {
    Put('-');
    Uint(static_cast<uint64_t>(0) - static_cast<uint64_t>(v));
  } else {
    Uint(static_cast<uint64_t>(v));
  }
}

void JsonOut::Micros(int64_t ns) {
  if (ns < 0) {
    Put('-');
    ns = -ns;
  }
  Uint(static_cast<uint64_t>(ns / 1000));
  const int frac = static_cast<int>(ns % 1000);
  Put('.');
  Put(static_cast<char>('0' + frac / 100));
  Put(static_cast<char>('0' + frac / 10 % 10));
  Put(static_cast<char>('0' + frac % 10));
}

void JsonOut::Hex(uint64_t v) {
  static const char kHex[] = "0123456789abcdef";
  char d[16];
  int n = 0;
  do {
    d[n++] = kHex[v & 15];
    v >>= 4;
  } while (v != 0);
  Raw("\"0x");
  while (n > 0) Put(d[--n]);
  Put('"');
}

}  // namespace libdump::samplers

namespace libdump::samplers::flight {
namespace {

constexpr size_t kMaxOpen = 64;  // open regions per thread a snapshot closes

class TaskSet {
 public:
  TaskSet(uint64_t* slots, size_t cap) : s_(slots), cap_(cap) { std::memset(s_, 0, cap * 8); }
  void Insert(uint64_t id) {
    for (size_t i = 0; i < cap_; ++i) {
      uint64_t& x = s_[(id * 0x9e3779b97f4a7c15ULL + i) % cap_];
      if (x == 0 || x == id) {
        x = id;
        return;
      }
    }
  }
  bool Has(uint64_t id) const {
    for (size_t i = 0; i < cap_; ++i) {
      const uint64_t x = s_[(id * 0x9e3779b97f4a7c15ULL + i) % cap_];
      if (x == id) return true;
      if (x == 0) return false;
    }
    return false;
  }

 private:
  uint64_t* s_;
  size_t cap_;
};

struct Emitter {
  JsonOut& o;
  int pid;
  ClockMap clock;  // events' ticks to CLOCK_MONOTONIC, one map for the whole snapshot
  bool first = true;

  void Dur(int64_t begin, int64_t end) {
    o.Raw(",\"dur\":");
    o.Micros(std::max<int64_t>(0, clock.Ns(end) - clock.Ns(begin)));
  }

  void Begin(const char* ph, const char* cat, uint32_t tid, int64_t ts) {
    o.Raw(first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    first = false;
    o.Raw(ph);
    o.Raw("\",\"cat\":\"");
    o.Raw(cat);
    o.Raw("\",\"pid\":");
    o.Int(pid);
    o.Raw(",\"tid\":");
    o.Uint(tid);
    o.Raw(",\"ts\":");
    o.Micros(ph[0] == 'M' ? 0 : clock.Ns(ts));
  }
  void Name(std::string_view n) {
    o.Raw(",\"name\":");
    o.String(n);
  }
  // trim_own: symbolized, a wait's or an allocation's stack starts below
  // libdump's own frames, as the block and heap profiles' do.
  void Stack(Namer* namer, const uint8_t* pcs, size_t n, bool trim_own = false) {
    o.Raw("\"stack\":[");
    size_t skip = 0;
    if (trim_own && namer != nullptr) {
      while (skip + 1 < n && namer->IsOwnFrame(Get64(pcs + 8 * skip))) ++skip;
    }
    for (size_t i = skip; i < n; ++i) {
      if (i > skip) o.Raw(",");
      const uintptr_t pc = Get64(pcs + 8 * i);
      if (namer != nullptr) namer->Write(o, pc);
      else o.Hex(pc);
    }
    o.Raw("]");
  }
};

// Reads a small /proc file into buf (NUL-terminated, newline cut); length.
size_t ReadSmallFile(const char* path, char* buf, size_t cap) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  size_t len = n > 0 ? static_cast<size_t>(n) : 0;
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\0')) --len;
  buf[len] = '\0';
  return len;
}

void FormatTaskPath(uint32_t tid, char* out) {
  char digits[12];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + tid % 10);
    tid /= 10;
  } while (tid != 0);
  const char* pre = "/proc/self/task/";
  size_t k = 0;
  while (*pre) out[k++] = *pre++;
  while (n > 0) out[k++] = digits[--n];
  const char* post = "/comm";
  while (*post) out[k++] = *post++;
  out[k] = '\0';
}

// Whether any pinned chunk (order[0, n), sorted by tid) belongs to tid.
bool HasTrack(const Window& w, const uint32_t* order, size_t n, uint32_t tid) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (w.header(order[mid]).tid < tid) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && w.header(order[lo]).tid == tid;
}

struct OpenRegion {
  int64_t ts;
  uint64_t task;
  const char* name;
  uint32_t len;
};

// The whole snapshot, with the window pinned. Allocates nothing unless the
// namer does; the caller holds the writer lock.
}  // namespace

int64_t WriteTraceEvents(Window& w, uint32_t* order, uint64_t* task_set, int fd, int sig, Namer* namer) {
  char buf[8192];
  JsonOut o(fd, buf, sizeof buf);
  w.snapshotting().store(true, std::memory_order_seq_cst);
  const size_t n = w.Pin(order);
  const int64_t now = Ticks();
  TaskSet ended(task_set, kTaskSet);
  int64_t oldest = now;
  for (size_t k = 0; k < n; ++k) {
    ForEachEvent(w, order[k], [&](const EventHeader& e, const uint8_t* p) {
      oldest = std::min(oldest, e.ts);
      if (e.type == kTaskEnd) ended.Insert(Get64(p));
    });
  }
  Emitter em{o, static_cast<int>(getpid()), CurrentClockMap()};
  o.Raw("{\"traceEvents\":[");
  char comm[64];
  ReadSmallFile("/proc/self/comm", comm, sizeof comm);
  em.Begin("M", "__metadata", 0, 0);
  o.Raw(",\"name\":\"process_name\",\"args\":{\"name\":");
  o.String(comm);
  o.Raw("}}");
  for (size_t g = 0; g < n;) {
    const uint32_t tid = w.header(order[g]).tid;
    size_t end = g;
    while (end < n && w.header(order[end]).tid == tid) ++end;
    // Thread name: the live one, else the last the thread recorded.
    const char* name = nullptr;
    uint32_t name_len = 0;
    for (size_t k = g; k < end; ++k) {
      ForEachEvent(w, order[k], [&](const EventHeader& e, const uint8_t* p) {
        if (e.type == kThreadName) name = reinterpret_cast<const char*>(p), name_len = e.aux;
      });
    }
    char path[48];
    FormatTaskPath(tid, path);
    char live[32];
    if (const size_t len = ThreadAlive(tid) ? ReadSmallFile(path, live, sizeof live) : 0; len > 0) {
      name = live, name_len = static_cast<uint32_t>(len);
    }
    em.Begin("M", "__metadata", tid, 0);
    o.Raw(",\"name\":\"thread_name\",\"args\":{\"name\":");
    if (name != nullptr) {
      o.String({name, name_len});
    } else {  // its name event left the window with the thread
      o.Raw("\"thread ");
      o.Uint(tid);
      o.Raw("\"");
    }
    o.Raw("}}");

    OpenRegion open[kMaxOpen];
    size_t depth = 0;
    for (size_t k = g; k < end; ++k) {
      ForEachEvent(w, order[k], [&](const EventHeader& e, const uint8_t* p) {
        switch (e.type) {
          case kRegionBegin:
          case kRegionBeginId:
            if (depth < kMaxOpen) {
              const std::string_view name = e.type == kRegionBeginId
                                                ? InternedName(e.aux)
                                                : std::string_view{reinterpret_cast<const char*>(p + 8), e.aux};
              open[depth++] = {e.ts, Get64(p), name.data(), static_cast<uint32_t>(name.size())};
            }
            break;
          case kRegionEnd:
          case kRegionEndId: {
            const int64_t begin = static_cast<int64_t>(Get64(p));
            for (size_t d = depth; d > 0; --d) {
              if (open[d - 1].ts == begin) {
                depth = d - 1;
                break;
              }
            }
            em.Begin("X", "region", tid, begin);
            em.Dur(begin, e.ts);
            em.Name(e.type == kRegionEndId ? InternedName(e.aux)
                                           : std::string_view{reinterpret_cast<const char*>(p + 16), e.aux});
            o.Raw(",\"args\":{\"task\":");
            o.Uint(Get64(p + 8));
            o.Raw("}}");
            break;
          }
          case kTaskBegin:
            if (!ended.Has(Get64(p))) {
              for (int side = 0; side < 2; ++side) {
                em.Begin(side == 0 ? "b" : "e", "task", tid, side == 0 ? e.ts : now);
                o.Raw(",\"id\":");
                o.Uint(Get64(p));
                em.Name({reinterpret_cast<const char*>(p + 16), e.aux});
                o.Raw(",\"args\":{\"parent\":");
                o.Uint(Get64(p + 8));
                o.Raw(",\"open\":true}}");
              }
            }
            break;
          case kTaskEnd:
            for (int side = 0; side < 2; ++side) {
              em.Begin(side == 0 ? "b" : "e", "task", tid, side == 0 ? static_cast<int64_t>(Get64(p + 8)) : e.ts);
              o.Raw(",\"id\":");
              o.Uint(Get64(p));
              em.Name({reinterpret_cast<const char*>(p + 16), e.aux});
              o.Raw("}");
            }
            break;
          case kLog: {
            uint32_t clen, tlen;
            std::memcpy(&clen, p + 8, 4);
            std::memcpy(&tlen, p + 12, 4);
            em.Begin("i", "log", tid, e.ts);
            o.Raw(",\"s\":\"t\"");
            em.Name({reinterpret_cast<const char*>(p + 16), clen});
            o.Raw(",\"args\":{\"message\":");
            o.String({reinterpret_cast<const char*>(p + 16 + clen), tlen});
            o.Raw(",\"task\":");
            o.Uint(Get64(p));
            o.Raw("}}");
            break;
          }
          case kThreadExit: {
            const auto exited = static_cast<uint32_t>(Get64(p));
            // A thread with nothing else left in the window gets its track
            // named here (order is sorted by tid).
            if (!HasTrack(w, order, n, exited)) {
              em.Begin("M", "__metadata", exited, 0);
              o.Raw(",\"name\":\"thread_name\",\"args\":{\"name\":\"thread ");
              o.Uint(exited);
              o.Raw("\"}}");
            }
            em.Begin("i", "thread", exited, e.ts);
            o.Raw(",\"s\":\"t\",\"name\":\"thread exit\"}");
            break;
          }
          case kCpuSample:
            // A zero-length slice rather than an instant: speedscope shows
            // slices only, and its frame's label carries the stack.
            em.Begin("X", "cpu", tid, e.ts);
            o.Raw(",\"dur\":0,\"name\":\"cpu sample\",\"args\":{\"weight\":");
            o.Uint(Get64(p));
            o.Raw(",");
            em.Stack(namer, p + 8, e.aux);
            o.Raw("}}");
            break;
          case kHeap:
            em.Begin("C", "heap", tid, e.ts);
            o.Raw(",\"name\":\"heap\",\"args\":{\"in_use_bytes\":");
            o.Uint(Get64(p));
            if (e.aux == 1) {
              o.Raw(",\"allocated_bytes\":");
              o.Uint(Get64(p + 8));
              o.Raw(",\"released_bytes\":");
              o.Uint(Get64(p + 16));
            }
            o.Raw("}}");
            break;
          case kAlloc:
            em.Begin("i", "alloc", tid, e.ts);
            o.Raw(",\"s\":\"t\",\"name\":\"allocation\",\"args\":{\"size\":");
            o.Uint(Get64(p));
            o.Raw(",\"address\":");
            o.Hex(Get64(p + 8));
            o.Raw(",");
            em.Stack(namer, p + 16, e.aux, true);
            o.Raw("}}");
            break;
          case kWait: {
            const int64_t begin = static_cast<int64_t>(Get64(p));
            uint32_t wlen;
            std::memcpy(&wlen, p + 8, 4);
            em.Begin("X", "wait", tid, begin);
            em.Dur(begin, e.ts);
            em.Name({reinterpret_cast<const char*>(p + 16 + 8 * e.aux), wlen});
            o.Raw(",\"args\":{");
            em.Stack(namer, p + 16, e.aux, true);
            o.Raw("}}");
            break;
          }
          default:
            break;
        }
      });
    }
    // Regions still open at the snapshot end there, marked open.
    for (size_t d = 0; d < depth; ++d) {
      em.Begin("X", "region", tid, open[d].ts);
      em.Dur(open[d].ts, now);
      em.Name({open[d].name, open[d].len});
      o.Raw(",\"args\":{\"task\":");
      o.Uint(open[d].task);
      o.Raw(",\"open\":true}}");
    }
    g = end;
  }
  const WindowStats& st = w.stats();
  o.Raw("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"recorder\":\"libdump flight recorder\",\"window_start_us\":");
  o.Micros(em.clock.Ns(oldest));
  o.Raw(",\"window_end_us\":");
  o.Micros(em.clock.Ns(now));
  o.Raw(",\"dropped\":");
  o.Uint(st.dropped.load(std::memory_order_relaxed));
  if (sig != 0) {
    o.Raw(",\"signal\":");
    o.Int(sig);
  }
  if (namer == nullptr || namer->MayLeaveAddresses()) {
    // Stacks may hold raw addresses: the mappings let a reader symbolize
    // them (readdump --symbolize).
    o.Raw(",\"maps\":\"");
    if (const int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC); mfd >= 0) {
      char chunk[2048];
      for (ssize_t r; (r = read(mfd, chunk, sizeof chunk)) > 0;) o.Escaped({chunk, static_cast<size_t>(r)});
      close(mfd);
    }
    o.Raw("\"");
  }
  o.Raw("}}\n");
  w.Unpin();
  w.snapshotting().store(false, std::memory_order_release);
  o.Flush();
  if (!o.ok()) {
    errno = o.error();
    return -1;
  }
  return o.written();
}

}  // namespace libdump::samplers::flight
