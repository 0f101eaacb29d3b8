// The server is a bounded acceptor: one thread accepts (close-on-exec, with
// a back-off when descriptors run out), a queue holds up to kQueue accepted
// connections, and a fixed pool of kWorkers threads serves them, one request
// per connection. A connection that finds the queue full is answered 503 by
// the acceptor and closed, so a flood of idle clients costs the program
// neither threads nor memory; a request must arrive whole within
// kReadDeadline and a client must take the answer without stalling for
// kWriteStall. The threads pass their own pthread locks through the block
// and mutex profiles untimed, and run inside an OwnAllocationScope: the heap
// profiles leave their allocations out and the CPU profiler drops their
// samples. No exception leaves them; a thread that cannot be made is one
// worker fewer, never an abort.
#include "samplers/http/debug_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

// Boost 1.74's asio uses std::exchange without including <utility>.
#include <utility>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstring>
#include <condition_variable>
#include <map>
#include <mutex>
#include <sstream>

#include "libdump/heap_dump.h"
#include "libdump/profiler.h"
#include "libdump/format/pprof_profile.h"
#include "samplers/contention/block_profiler.h"
#include "samplers/flight_recorder/flight_recorder.h"
#include "samplers/heap/heap_profiler.h"
#include "platform/proc/helper_threads.h"
#include "samplers/common/own_allocations.h"
#include "samplers/symbolize/pprof_symbolizer.h"
#include "samplers/interpose/wait_state.h"

// Present with libdump's heap dumper (libdump.so), absent otherwise.
namespace libdump {
int WriteHeapDump(int fd, const HeapDumpOptions& options) __attribute__((weak));
HeapDumpOptions HeapDumpOptionsFromEnvironment(bool zstd) __attribute__((weak));
}  // namespace libdump

namespace libdump::samplers {

bool ParseListenAddress(const std::string& address, ParsedAddress* out, std::string* error) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    *error = "\"" + address + "\" has no :PORT";
    return false;
  }
  std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || v > 65535) {
    *error = "\"" + port + "\" is not a port (0-65535)";
    return false;
  }
  boost::system::error_code bad;
  boost::asio::ip::make_address(host, bad);
  if (bad) {
    *error = "\"" + host + "\" is not an IP address";
    return false;
  }
  out->host = host;
  out->port = static_cast<unsigned short>(v);
  return true;
}

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Response = http::response<http::string_body>;

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

Response Reply(http::status status, std::string body, const char* type = "text/plain; charset=utf-8") {
  Response r{status, 11};
  r.set(http::field::content_type, type);
  r.set("X-Content-Type-Options", "nosniff");
  r.body() = std::move(body);
  return r;
}

Response Profile(std::string bytes, const std::string& name) {
  Response r = Reply(http::status::ok, std::move(bytes), "application/octet-stream");
  r.set(http::field::content_disposition, "attachment; filename=\"" + name + "\"");
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

std::atomic<bool> g_started{false};

bool Nap(long seconds);

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

// ---- Transport ----

constexpr int kWorkers = 4;
constexpr size_t kQueue = 16;
constexpr int kReadDeadlineMs = 10'000;  // the whole request, from accept
constexpr int kWriteStallMs = 30'000;    // a client that takes no byte for this long is dropped
constexpr int kAcceptBackoffMs = 100;    // out of descriptors: let some close

struct Server {
  int listen_fd = -1;
  int wake_fd = -1;  // an eventfd: readable when the threads are to stop
  std::string host;  // the bound address (its text)
  std::mutex mu;
  std::condition_variable work;   // a connection is queued, or stopping
  std::condition_variable naps;   // stopping: the profiles' waits end
  int queue[kQueue];
  size_t head = 0, count = 0;
  int active[kWorkers];  // the connection each worker serves, or -1
  bool stopping = false;
  bool running = false;
  pthread_t acceptor;
  pthread_t workers[kWorkers];
  int nworkers = 0;
};
Server* g_server = nullptr;

// A blocking socket as Beast's SyncReadStream and SyncWriteStream, with a
// deadline for the whole read and a stall limit for each write.
class DeadlineStream {
 public:
  DeadlineStream(int fd, int64_t read_deadline_ms) : fd_(fd), read_deadline_(NowMs() + read_deadline_ms) {}

  template <typename Buffers>
  size_t read_some(const Buffers& buffers, beast::error_code& ec) {
    ec = {};
    for (const auto b : beast::buffers_range_ref(buffers)) {
      if (b.size() == 0) continue;
      for (;;) {
        const int64_t left = read_deadline_ - NowMs();
        if (left <= 0) return Fail(ec, ETIMEDOUT);
        pollfd p{fd_, POLLIN, 0};
        const int r = poll(&p, 1, static_cast<int>(left));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return Fail(ec, errno);
        if (r == 0) return Fail(ec, ETIMEDOUT);
        const ssize_t n = recv(fd_, b.data(), b.size(), MSG_DONTWAIT);
        if (n > 0) return static_cast<size_t>(n);
        if (n == 0) {
          ec = net::error::eof;
          return 0;
        }
        if (errno != EINTR && errno != EAGAIN) return Fail(ec, errno);
      }
    }
    return 0;
  }
  template <typename Buffers>
  size_t read_some(const Buffers& buffers) {
    beast::error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) throw beast::system_error(ec);
    return n;
  }

  template <typename Buffers>
  size_t write_some(const Buffers& buffers, beast::error_code& ec) {
    ec = {};
    for (const auto b : beast::buffers_range_ref(buffers)) {
      if (b.size() == 0) continue;
      for (;;) {
        if (!WaitWritable(ec)) return 0;
        const ssize_t n = send(fd_, b.data(), b.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) return static_cast<size_t>(n);
        if (errno != EINTR && errno != EAGAIN) return Fail(ec, errno);
      }
    }
    return 0;
  }
  template <typename Buffers>
  size_t write_some(const Buffers& buffers) {
    beast::error_code ec;
    const size_t n = write_some(buffers, ec);
    if (ec) throw beast::system_error(ec);
    return n;
  }

  // count bytes of file from offset 0, as the client takes them.
  bool SendFile(int file, off_t count) {
    off_t offset = 0;
    beast::error_code ec;
    while (offset < count) {
      if (!WaitWritable(ec)) return false;
      const ssize_t n = sendfile(fd_, file, &offset, static_cast<size_t>(count - offset));
      if (n < 0 && errno != EINTR && errno != EAGAIN) return false;
      if (n == 0) return false;
    }
    return true;
  }

  static int64_t NowMs() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1'000'000;
  }

 private:
  bool WaitWritable(beast::error_code& ec) {
    for (;;) {
      pollfd p{fd_, POLLOUT, 0};
      const int r = poll(&p, 1, kWriteStallMs);
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) return true;
      Fail(ec, r == 0 ? ETIMEDOUT : errno);
      return false;
    }
  }
  static size_t Fail(beast::error_code& ec, int err) {
    ec = beast::error_code(err, beast::system_category());
    return 0;
  }

  int fd_;
  int64_t read_deadline_;
};

// Waits seconds, or less when the server stops (a credential change,
// helper_threads.h): false then.
bool Nap(long seconds) {
  Server* s = g_server;
  std::unique_lock<std::mutex> lock(s->mu);
  return !s->naps.wait_for(lock, std::chrono::seconds(seconds), [s] { return s->stopping; });
}

std::atomic<bool> g_dumping{false};

// The heap dump, written to an in-memory file (outside the heap) and sent
// from there: one at a time, whatever the clients.
void ServeHeapDump(DeadlineStream& stream, const std::map<std::string, std::string>& q, bool head) {
  beast::error_code ec;
  std::string error;
  long zstd = 0;
  Response r;
  if (WriteHeapDump == nullptr) {
    r = Reply(http::status::not_implemented, "heapdump: needs libdump's heap dumper (libdump.so)\n");
  } else if (!IntParam(q, "zstd", 0, 1, 0, &zstd, &error)) {
    r = Reply(http::status::bad_request, error + "\n");
  } else if (head) {
    r = Reply(http::status::ok, "", "application/octet-stream");
  } else if (g_dumping.exchange(true)) {
    r = Reply(http::status::service_unavailable, "heapdump: another heap dump is being written; retry\n");
    r.set(http::field::retry_after, "1");
  } else {
    // LIBDUMP_HEAPDUMP_ZSTD_LEVEL and LIBDUMP_HEAPDUMP_MODE, as on a signal.
    HeapDumpOptions options;
    if (HeapDumpOptionsFromEnvironment != nullptr) options = HeapDumpOptionsFromEnvironment(zstd == 1);
    options.zstd = zstd == 1;
    const int fd = memfd_create("libdump-heapdump", MFD_CLOEXEC);
    const int err = fd < 0 ? errno : WriteHeapDump(fd, options);
    const off_t size = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
    if (err != 0 || size < 0) {
      if (fd >= 0) close(fd);
      g_dumping = false;
      r = Reply(http::status::internal_server_error, "heapdump: " + std::string(strerror(err ? err : errno)) + "\n");
    } else {
      http::response<http::empty_body> h{http::status::ok, 11};
      h.set(http::field::server, "libdump");
      h.set(http::field::content_type, "application/octet-stream");
      h.set("X-Content-Type-Options", "nosniff");
      h.set(http::field::content_disposition,
            std::string("attachment; filename=\"") + (zstd == 1 ? "heap.dump.zst" : "heap.dump") + "\"");
      h.content_length(static_cast<uint64_t>(size));
      h.keep_alive(false);
      http::response_serializer<http::empty_body> sr(h);
      http::write_header(stream, sr, ec);
      if (!ec) stream.SendFile(fd, size);
      close(fd);
      g_dumping = false;
      return;
    }
  }
  r.set(http::field::server, "libdump");
  r.keep_alive(false);
  r.prepare_payload();
  if (head) r.body().clear();
  http::write(stream, r, ec);
}

// The address the client connected to, as a Host header would spell it.
std::string LocalAddress(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char text[INET6_ADDRSTRLEN] = "";
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  if (a.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&a)->sin_addr, text, sizeof text);
  } else if (a.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&a)->sin6_addr, text, sizeof text);
  }
  return text;
}

void ServeConnection(int fd) {
  const std::string local = LocalAddress(fd);
  DeadlineStream stream(fd, kReadDeadlineMs);
  beast::error_code ec;
  beast::flat_buffer buf;
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 << 10);
  parser.body_limit(1 << 20);
  http::read(stream, buf, parser, ec);
  if (ec) return;
  const auto& req = parser.get();
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  Response res;
  const bool head = req.method() == http::verb::head;
  // GET and HEAD only: a cross-origin POST or a DELETE from a web page must
  // not start a dump or a profile. go tool pprof posts to /symbol, which
  // only names addresses.
  if (req.method() != http::verb::get && !head && !(req.method() == http::verb::post && path == "/debug/pprof/symbol")) {
    res = Reply(http::status::method_not_allowed, "method not allowed: /debug/pprof serves GET and HEAD\n");
    res.set(http::field::allow, "GET, HEAD");
  } else if (const auto host = req.find(http::field::host);
             host == req.end() || !HostAllowed(std::string_view(host->value().data(), host->value().size()), local)) {
    res = Reply(http::status::forbidden,
                "Host not allowed: /debug/pprof answers requests for its own address, localhost or a loopback "
                "address (LIBDUMP_PPROF_HOSTS names others)\n");
  } else if (path == "/debug/pprof/heapdump") {
    const size_t qm = target.find('?');
    std::map<std::string, std::string> q;
    std::string error;
    ParseQuery(qm == std::string_view::npos ? std::string_view() : target.substr(qm + 1), &q, &error);
    ServeHeapDump(stream, q, head);
    return;
  } else {
    res = Handle(req);
  }
  res.set(http::field::server, "libdump");
  res.keep_alive(false);
  res.prepare_payload();
  if (head) res.body().clear();  // the length stays that of the GET
  http::write(stream, res, ec);
  shutdown(fd, SHUT_WR);
}

// The queue is full: say so at once, without waiting on the client.
void Refuse(int fd) {
  static const char kBusy[] =
      "HTTP/1.1 503 Service Unavailable\r\nServer: libdump\r\nContent-Type: text/plain; charset=utf-8\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: 21\r\n\r\ntoo many connections\n";
  (void)!send(fd, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  close(fd);
}

void EnterServerThread() {
  t_wait.in_profiler = true;
  t_profiler_thread = true;
}

void* AcceptLoop(void*) {
  pthread_setname_np(pthread_self(), "libdump-pprof");
  EnterServerThread();
  OwnAllocationScope own;
  Server* s = g_server;
  for (;;) {
    pollfd p[2] = {{s->listen_fd, POLLIN, 0}, {s->wake_fd, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) continue;
    if (p[1].revents != 0) return nullptr;
    const int fd = accept4(s->listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      // Out of descriptors or memory: wait for some to close, without
      // spinning on the connection that stays pending.
      pollfd w{s->wake_fd, POLLIN, 0};
      poll(&w, 1, kAcceptBackoffMs);
      continue;
    }
    std::unique_lock<std::mutex> lock(s->mu);
    if (s->count == kQueue) {
      lock.unlock();
      Refuse(fd);
      continue;
    }
    s->queue[(s->head + s->count++) % kQueue] = fd;
    s->work.notify_one();
  }
}

void* Worker(void* arg) {
  pthread_setname_np(pthread_self(), "libdump-pprof");
  EnterServerThread();
  OwnAllocationScope own;
  Server* s = g_server;
  const int k = static_cast<int>(reinterpret_cast<intptr_t>(arg));
  for (;;) {
    int fd;
    {
      std::unique_lock<std::mutex> lock(s->mu);
      s->work.wait(lock, [s] { return s->stopping || s->count > 0; });
      if (s->stopping) return nullptr;
      fd = s->queue[s->head];
      s->head = (s->head + 1) % kQueue;
      --s->count;
      s->active[k] = fd;
    }
    try {
      ServeConnection(fd);
    } catch (...) {
      // A request that failed (out of memory, a bad allocation in a
      // profile): its connection closes, the server goes on.
    }
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->active[k] = -1;
    }
    close(fd);
  }
}

// Threads with every asynchronous signal blocked (they are the program's
// to take); false if not even the acceptor and one worker could be made.
bool StartThreads() {
  Server* s = g_server;
  sigset_t all, old;
  sigfillset(&all);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) sigdelset(&all, sig);
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; ++sig) sigdelset(&all, sig);  // the heap dump's stop signal
  pthread_sigmask(SIG_BLOCK, &all, &old);
  s->nworkers = 0;
  for (int k = 0; k < kWorkers; ++k) {
    s->active[k] = -1;
    if (pthread_create(&s->workers[s->nworkers], nullptr, Worker, reinterpret_cast<void*>(intptr_t{s->nworkers})) == 0) {
      ++s->nworkers;
    }
  }
  const bool acceptor = s->nworkers > 0 && pthread_create(&s->acceptor, nullptr, AcceptLoop, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!acceptor) {
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->stopping = true;
    }
    s->work.notify_all();
    for (int k = 0; k < s->nworkers; ++k) pthread_join(s->workers[k], nullptr);
    s->stopping = false;
    s->nworkers = 0;
    return false;
  }
  s->running = true;
  return true;
}

// Around the program's credential changes (helper_threads.h): requests in
// progress end (their connections are shut down), queued ones wait.
bool StopThreads() {
  Server* s = g_server;
  if (s == nullptr || !s->running) return false;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stopping = true;
    for (int k = 0; k < s->nworkers; ++k) {
      if (s->active[k] >= 0) shutdown(s->active[k], SHUT_RDWR);
    }
  }
  s->work.notify_all();
  s->naps.notify_all();
  const uint64_t one = 1;
  (void)!write(s->wake_fd, &one, sizeof one);
  pthread_join(s->acceptor, nullptr);
  for (int k = 0; k < s->nworkers; ++k) pthread_join(s->workers[k], nullptr);
  uint64_t drained;
  (void)!read(s->wake_fd, &drained, sizeof drained);
  s->stopping = false;
  s->running = false;
  return true;
}

void RestartThreads() {
  OwnAllocationScope own;
  StartThreads();
}

const proc::HelperThread kServerHelper{StopThreads, RestartThreads};

// fork: the server is the parent's. The child closes its copies of the
// listening socket and of every connection, so that a port or a client is
// never held by a process that does not answer.
void ForkPrepare() {
  if (g_server != nullptr) g_server->mu.lock();
}
void ForkParent() {
  if (g_server != nullptr) g_server->mu.unlock();
}
void ForkChild() {
  Server* s = g_server;
  if (s == nullptr) return;
  close(s->listen_fd);
  close(s->wake_fd);
  for (size_t k = 0; k < s->count; ++k) close(s->queue[(s->head + k) % kQueue]);
  for (int k = 0; k < s->nworkers; ++k) {
    if (s->active[k] >= 0) close(s->active[k]);
  }
  s->count = 0;
  s->running = false;
  s->mu.unlock();
  g_server = nullptr;  // left allocated: the parent's threads may have held its parts
}

}  // namespace

// Host names a request may carry: a DNS name could be rebound to 127.0.0.1
// by a web page, so only literals that are this server's address, loopback
// literals, "localhost" and the names LIBDUMP_PPROF_HOSTS lists.
bool HostAllowed(std::string_view host_header, const std::string& local) {
  std::string_view h = host_header;
  if (h.starts_with('[')) {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return false;
    h = h.substr(1, close - 1);
  } else if (const size_t colon = h.rfind(':'); colon != std::string_view::npos && h.find(':') == colon) {
    h = h.substr(0, colon);
  }
  std::string host(h);
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (host.empty()) return false;
  if (host == "localhost" || IsLoopbackAddress(host) || host == local) return true;
  if (const char* extra = std::getenv("LIBDUMP_PPROF_HOSTS")) {
    std::string_view list(extra);
    while (!list.empty()) {
      const size_t comma = list.find(',');
      if (list.substr(0, comma) == host) return true;
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
  }
  return false;
}

bool IsLoopbackAddress(const std::string& address) {
  boost::system::error_code ec;
  const net::ip::address a = net::ip::make_address(address, ec);
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6()).is_loopback();
  return a.is_loopback();
}

}  // namespace libdump::samplers

namespace libdump {

bool StartDebugServer(const std::string& address, std::string* error, std::string* bound) {
  using namespace samplers;
  OwnAllocationScope own;  // the server's sockets and threads
  std::string why;
  if (error == nullptr) error = &why;
  ParsedAddress a;
  if (!ParseListenAddress(address.empty() ? "127.0.0.1:6060" : address, &a, error)) return false;
  if (g_started.exchange(true)) {
    *error = "a debug server is already running";
    return false;
  }
  const std::string where = a.host + ":" + std::to_string(a.port);
  auto fail = [&](const std::string& reason, int fd) {
    if (fd >= 0) close(fd);
    g_started = false;
    *error = where + ": " + reason;
    return false;
  };
  sockaddr_storage ss{};
  socklen_t len;
  const net::ip::address ip = net::ip::make_address(a.host);
  if (ip.is_v6()) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(a.port);
    const auto bytes = ip.to_v6().to_bytes();
    std::memcpy(&in6->sin6_addr, bytes.data(), bytes.size());
    in6->sin6_scope_id = ip.to_v6().scope_id();
    len = sizeof *in6;
  } else {
    auto* in4 = reinterpret_cast<sockaddr_in*>(&ss);
    in4->sin_family = AF_INET;
    in4->sin_port = htons(a.port);
    const auto bytes = ip.to_v4().to_bytes();
    std::memcpy(&in4->sin_addr, bytes.data(), bytes.size());
    len = sizeof *in4;
  }
  const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(strerror(errno), -1);
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(fd, 128) != 0) return fail(strerror(errno), fd);
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len);
  const unsigned short port = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                                                 : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  const int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return fail(strerror(errno), fd);
  auto* s = new Server;
  s->listen_fd = fd;
  s->wake_fd = wake;
  s->host = ip.to_string();
  g_server = s;
  if (!StartThreads()) {
    g_server = nullptr;
    close(wake);
    delete s;
    return fail("cannot start the server's threads", fd);
  }
  if (bound != nullptr) *bound = (ip.is_v6() ? "[" + s->host + "]" : s->host) + ":" + std::to_string(port);
  static const int atfork = pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  (void)atfork;
  proc::RegisterHelperThread(&kServerHelper);
  // The heap profile is only as good as the profiler behind it: on with
  // the server, when libdump's allocator is there.
  InstallHeapProfiler();
  EnableThreadCreateProfile();  // /threadcreate: threads created from now on
  return true;
}

}  // namespace libdump
