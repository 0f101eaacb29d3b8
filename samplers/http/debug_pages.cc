#include "samplers/http/debug_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "libdump/format/pprof_profile.h"
#include "libdump/profiler.h"
#include "samplers/common/own_allocations.h"
#include "samplers/contention/block_profiler.h"
#include "samplers/flight_recorder/flight_recorder.h"
#include "samplers/heap/heap_profiler.h"
#include "samplers/interpose/wait_state.h"
#include "samplers/symbolize/pprof_symbolizer.h"

namespace libdump::samplers::debug_http {
namespace {

// What a Write*Profile(fd) call wrote, through an in-memory file.
template <typename WriteFn>
bool Capture(WriteFn write, std::string* out) {
  const int fd = memfd_create("libdump-profile", MFD_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd);
  const off_t n = lseek(fd, 0, SEEK_END);
  out->resize(n > 0 ? static_cast<size_t>(n) : 0);
  const bool read_all = n >= 0 && pread(fd, out->data(), out->size(), 0) == static_cast<ssize_t>(out->size());
  close(fd);
  return ok && read_all;
}

Response Profile(std::string bytes, const std::string& name) {
  Response r = Reply(http::status::ok, std::move(bytes), "application/octet-stream");
  r.set(http::field::content_disposition, "attachment; filename=\"" + name + "\"");
  return r;
}

}  // namespace

Response Reply(http::status status, std::string body, const char* type) {
  Response r{status, 11};
  r.set(http::field::content_type, type);
  r.set("X-Content-Type-Options", "nosniff");
  r.body() = std::move(body);
  return r;
}

// The query as a map; false with *error set on a malformed one.
bool ParseQuery(std::string_view q, std::map<std::string, std::string>* out, std::string* error) {
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view kv = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (kv.empty()) continue;
    const size_t eq = kv.find('=');
    (*out)[std::string(kv.substr(0, eq))] = eq == std::string_view::npos ? "" : std::string(kv.substr(eq + 1));
  }
  return true;
}

// An integer parameter in [lo, hi], or def when absent; false with *error.
bool IntParam(const std::map<std::string, std::string>& q, const char* name, long lo, long hi, long def, long* v,
              std::string* error) {
  const auto it = q.find(name);
  if (it == q.end()) {
    *v = def;
    return true;
  }
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || *v < lo || *v > hi) {
    *error = std::string(name) + "=" + s + ": want an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    return false;
  }
  return true;
}

namespace {

Response Interrupted(const std::string& name) {
  return Reply(http::status::service_unavailable,
               name + ": interrupted (the program changed its credentials); retry\n");
}

const char kIndex[] = R"(<html>
<head><title>/debug/pprof/</title></head>
<body>
/debug/pprof/<br>
<br>
Types of profiles available:
<table>
<tr><td><a href="allocs?debug=0">allocs</a></td><td>A sampling of all past memory allocations</td></tr>
<tr><td><a href="block?debug=0">block</a></td><td>Stack traces that led to blocking on pthread locks, condition variables, semaphores, barriers and joins</td></tr>
<tr><td><a href="cmdline">cmdline</a></td><td>The command line of the current program</td></tr>
<tr><td><a href="goroutine?debug=1">goroutine</a></td><td>Stack traces of all current threads (also /threads); debug=2 one block per thread</td></tr>
<tr><td><a href="flightrecorder">flightrecorder</a></td><td>The flight recorder's window as Trace Event JSON (?format=pprof: its CPU samples), when one runs</td></tr>
<tr><td><a href="heap?debug=0">heap</a></td><td>A sampling of memory allocations of live objects</td></tr>
<tr><td><a href="heapdump">heapdump</a></td><td>A heap dump of the process (libdump's format; ?zstd=1 compresses)</td></tr>
<tr><td><a href="mutex?debug=0">mutex</a></td><td>Stack traces of holders of contended mutexes and rwlocks</td></tr>
<tr><td><a href="profile">profile</a></td><td>CPU profile; ?seconds=N (default 30)</td></tr>
<tr><td><a href="symbol">symbol</a></td><td>Maps program counters to function names</td></tr>
<tr><td><a href="threadcreate?debug=1">threadcreate</a></td><td>Stack traces that led to the creation of each live thread</td></tr>
</table>
</body>
</html>
)";

}  // namespace

Response Handle(const http::request<http::string_body>& req) {
  const std::string_view target(req.target().data(), req.target().size());
  const size_t qm = target.find('?');
  const std::string_view path = target.substr(0, qm);
  std::map<std::string, std::string> q;
  std::string error;
  ParseQuery(qm == std::string_view::npos ? std::string_view() : target.substr(qm + 1), &q, &error);
  constexpr std::string_view kPrefix = "/debug/pprof/";
  if (path == "/debug/pprof") {
    Response r = Reply(http::status::moved_permanently, "");
    r.set(http::field::location, "/debug/pprof/");
    return r;
  }
  if (!path.starts_with(kPrefix)) return Reply(http::status::not_found, "404 page not found\n");
  const std::string name(path.substr(kPrefix.size()));
  if (name.empty()) return Reply(http::status::ok, kIndex, "text/html; charset=utf-8");
  if (name == "cmdline") {
    std::string s;
    Capture([](int fd) {
      std::FILE* f = std::fopen("/proc/self/cmdline", "re");
      if (f == nullptr) return false;
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) (void)!write(fd, buf, n);
      std::fclose(f);
      return true;
    }, &s);
    if (!s.empty() && s.back() == '\0') s.pop_back();
    return Reply(http::status::ok, s);
  }
  if (name == "symbol") {
    // GET: whether symbols are served; POST: "0xPC+0xPC..." -> "0xPC name".
    if (req.method() != http::verb::post) return Reply(http::status::ok, "num_symbols: 1\n");
    pprof::ProfileBuilder b({{"x", "count"}}, {"x", "count"}, 1);
    ProfileSymbolizer sym(b);
    std::ostringstream out;
    std::string_view body = req.body();
    while (!body.empty()) {
      const size_t plus = body.find('+');
      std::string word(body.substr(0, plus));
      body = plus == std::string_view::npos ? std::string_view() : body.substr(plus + 1);
      uint64_t pc = 0;
      const char* begin = word.data() + (word.starts_with("0x") ? 2 : 0);
      const auto [end, ec] = std::from_chars(begin, word.data() + word.size(), pc, 16);
      if (ec != std::errc() || end != word.data() + word.size()) {
        return Reply(http::status::bad_request, "symbol: \"" + word + "\" is not a hexadecimal address\n");
      }
      // Lookup as for a return address (pc - 1): pass pc + 1.
      const std::string fn = sym.FunctionName(static_cast<uintptr_t>(pc) + 1);
      if (!fn.empty()) out << word << ' ' << fn << '\n';
    }
    return Reply(http::status::ok, out.str());
  }
  long debug = 0;
  if (name == "goroutine" || name == "threads") {
    if (!IntParam(q, "debug", 0, 2, 0, &debug, &error)) return Reply(http::status::bad_request, error + "\n");
    if (q.count("seconds") != 0) {
      return Reply(http::status::bad_request, "seconds: delta profiles are not served for " + name + "\n");
    }
    std::string bytes;
    if (!Capture([debug](int fd) { return WriteThreadProfile(fd, static_cast<int>(debug)); }, &bytes)) {
      return Reply(http::status::internal_server_error, name + " profile not written\n");
    }
    if (debug == 0) return Profile(std::move(bytes), name);
    return Reply(http::status::ok, std::move(bytes));
  }
  if (name == "threadcreate") {
    if (!IntParam(q, "debug", 0, 1, 0, &debug, &error)) return Reply(http::status::bad_request, error + "\n");
    if (q.count("seconds") != 0) {
      return Reply(http::status::bad_request, "seconds: delta profiles are not served for " + name + "\n");
    }
    std::string bytes;
    if (!Capture([debug](int fd) { return WriteThreadCreateProfile(fd, static_cast<int>(debug)); }, &bytes)) {
      return Reply(http::status::internal_server_error, name + " profile not written\n");
    }
    if (debug == 0) return Profile(std::move(bytes), name);
    return Reply(http::status::ok, std::move(bytes));
  }
  if (name == "heap" || name == "allocs") {
    if (!IntParam(q, "debug", 0, 1, 0, &debug, &error)) return Reply(http::status::bad_request, error + "\n");
    long seconds = 0;
    if (q.count("seconds") != 0) {
      if (!IntParam(q, "seconds", 1, 3600, 0, &seconds, &error)) return Reply(http::status::bad_request, error + "\n");
      if (debug != 0) return Reply(http::status::bad_request, "seconds: a delta profile is served as pprof (debug=0)\n");
    }
    if (debug == 1) return Reply(http::status::ok, HeapProfileText(GlobalHeapTable().Snapshot(), MemProfileRate()));
    const HeapProfileKind kind = name == "heap" ? HeapProfileKind::kHeap : HeapProfileKind::kAllocs;
    if (seconds == 0) {
      std::string bytes;
      if (!Capture([kind](int fd) { return WriteHeapProfile(fd, kind); }, &bytes)) {
        return Reply(http::status::internal_server_error, name + " profile not written\n");
      }
      return Profile(std::move(bytes), name);
    }
    // A delta profile, as Go's: what each bucket gained over the seconds
    // (in use may shrink: negative values, as Go's).
    const std::vector<HeapBucketSnapshot> before = GlobalHeapTable().Snapshot();
    if (!Nap(seconds)) return Interrupted(name);
    pprof::ProfileBuilder b = NewHeapProfileBuilder(kind, MemProfileRate());
    b.set_duration_nanos(seconds * 1000000000LL);
    BuildHeapProfile(b, GlobalHeapTable().Snapshot(), &before);
    return Profile(b.EncodeGzip(), name);
  }
  if (name == "flightrecorder") {
    // The flight recorder's window: Trace Event JSON, or ?format=pprof for
    // its CPU samples.
    const auto f = q.find("format");
    const std::string format = f == q.end() ? "json" : f->second;
    if (format != "json" && format != "pprof") {
      return Reply(http::status::bad_request, "format=" + format + ": want json or pprof\n");
    }
    std::string bytes;
    int err = 0;
    const bool ok = Capture(
        [&](int fd) {
          const bool done = format == "pprof" ? flight::WriteWindowCPUProfile(fd) : flight::WriteWindow(fd) >= 0;
          if (!done) err = errno;
          return done;
        },
        &bytes);
    if (!ok && err == EINVAL) {
      return Reply(http::status::not_found,
                   "flightrecorder: no flight recorder runs (LIBDUMP_FLIGHT_RECORDER=1, or libdump::FlightRecorder)\n");
    }
    if (!ok && err == EBUSY) {
      return Reply(http::status::service_unavailable, "flightrecorder: another snapshot is being written\n");
    }
    if (!ok) return Reply(http::status::internal_server_error, "flightrecorder: " + std::string(strerror(err)) + "\n");
    if (format == "pprof") return Profile(std::move(bytes), "flightrecorder.pprof");
    Response r = Reply(http::status::ok, std::move(bytes), "application/json");
    r.set(http::field::content_disposition, "attachment; filename=\"flightrecorder.json\"");
    return r;
  }
  if ((name == "block" || name == "mutex") && q.count("seconds") == 0) {
    if (!IntParam(q, "debug", 0, 1, 0, &debug, &error)) return Reply(http::status::bad_request, error + "\n");
    if (debug == 1) {
      // Go's legacy text: delay (cycles at 1e9/s, so nanoseconds) and count
      // per stack, then a # line per frame.
      const int fraction = SetMutexProfileFraction(-1);
      const double scale = name == "mutex" && fraction > 0 ? fraction : 1;
      pprof::ProfileBuilder dummy({{"x", "count"}}, {"x", "count"}, 1);
      ProfileSymbolizer sym(dummy);
      std::ostringstream out;
      out << "--- contention:\ncycles/second=1000000000\n";
      if (name == "mutex") out << "sampling period=" << (fraction > 0 ? fraction : 0) << "\n";
      for (auto& b : (name == "block" ? BlockTable() : MutexTable()).Snapshot()) {
        // The profilers' own frames go, as in the pprof form.
        size_t skip = 0;
        while (skip + 1 < b.stack.size()) {
          const std::string fn = sym.FunctionName(b.stack[skip]);
          const size_t ns = fn.find("libdump::samplers::");
          if (ns == std::string::npos || ns > fn.find('(')) break;
          ++skip;
        }
        b.stack.erase(b.stack.begin(), b.stack.begin() + static_cast<std::ptrdiff_t>(skip));
        out << std::llround(b.delay_ns * scale) << " " << std::llround(b.count * scale) << " @";
        for (uintptr_t pc : b.stack) out << " 0x" << std::hex << pc << std::dec;
        out << "\n";
        for (uintptr_t pc : b.stack) {
          const std::string fn = sym.FunctionName(pc);
          out << "#\t0x" << std::hex << pc - 1 << std::dec << "\t" << (fn.empty() ? "?" : fn) << "\n";
        }
        out << "\n";
      }
      return Reply(http::status::ok, out.str());
    }
  } else if (!IntParam(q, "debug", 0, 0, 0, &debug, &error)) {
    return Reply(http::status::bad_request, "debug: only debug=0 (pprof) is served: " + error + "\n");
  }
  if (name == "profile") {
    long seconds;
    if (!IntParam(q, "seconds", 1, 3600, 30, &seconds, &error)) return Reply(http::status::bad_request, error + "\n");
    if (!StartCPUProfile(-1)) {
      return Reply(http::status::internal_server_error,
                   "Could not enable CPU profiling: cpu profiling already in use\n");
    }
    const bool slept = Nap(seconds);
    std::string bytes;
    const bool written = Capture([](int fd) { return StopCPUProfile(fd); }, &bytes);
    if (!slept) return Interrupted(name);
    if (!written) {
      return Reply(http::status::internal_server_error, "CPU profile not written: " + std::string(strerror(errno)) + "\n");
    }
    return Profile(std::move(bytes), "profile");
  }
  if (q.count("seconds") != 0 && (name == "block" || name == "mutex")) {
    // A delta profile, as Go's: what the buckets gained over the seconds.
    long seconds;
    if (!IntParam(q, "seconds", 1, 3600, 0, &seconds, &error)) return Reply(http::status::bad_request, error + "\n");
    ContentionTable& table = name == "block" ? BlockTable() : MutexTable();
    std::map<std::vector<uintptr_t>, std::pair<double, double>> before;
    for (auto& b : table.Snapshot()) before[b.stack] = {b.count, b.delay_ns};
    if (!Nap(seconds)) return Interrupted(name);
    std::vector<ContentionBucketSnapshot> delta;
    for (auto& b : table.Snapshot()) {
      const auto it = before.find(b.stack);
      if (it != before.end()) {
        b.count -= it->second.first;
        b.delay_ns -= it->second.second;
      }
      if (b.count > 0) delta.push_back(std::move(b));
    }
    const int fraction = SetMutexProfileFraction(-1);
    const int64_t scale = name == "mutex" && fraction > 0 ? fraction : 1;
    pprof::ProfileBuilder b = NewContentionProfileBuilder(scale);
    b.set_duration_nanos(seconds * 1000000000LL);
    BuildContentionProfile(b, delta, static_cast<double>(scale));
    return Profile(b.EncodeGzip(), name);
  }
  if (q.count("seconds") != 0 && name != "heapdump") {
    return Reply(http::status::bad_request, "seconds: delta profiles are not served for " + name + "\n");
  }
  std::string bytes;
  bool ok = false;
  if (name == "block") {
    ok = Capture([](int fd) { return WriteBlockProfile(fd); }, &bytes);
  } else if (name == "mutex") {
    ok = Capture([](int fd) { return WriteMutexProfile(fd); }, &bytes);
  } else {
    return Reply(http::status::not_found, "Unknown profile: " + name + "\n");
  }
  if (!ok) return Reply(http::status::internal_server_error, name + " profile not written\n");
  return Profile(std::move(bytes), name);
}

}  // namespace libdump::samplers::debug_http
