// The server runs on its own threads: one accepting, one per connection
// (each serves one request and closes, so a 30 s CPU profile holds only its
// own connection). Its threads pass their own pthread locks through the
// block and mutex profiles untimed, and run inside an OwnAllocationScope:
// the heap profiles leave their allocations out and the CPU profiler drops
// their samples.
#include "debug_server.h"

#include <sys/mman.h>
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
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "libdump/heap_dump.h"
#include "libdump/profiler.h"
#include "libdump/format/pprof_profile.h"
#include "block_profiler.h"
#include "flight_recorder.h"
#include "heap_profiler.h"
#include "own_allocations.h"
#include "pprof_symbolizer.h"
#include "wait_state.h"

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
  if (path == "/debug/pprof") return Reply(http::status::moved_permanently, "");
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
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
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
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::string bytes;
    if (!Capture([](int fd) { return StopCPUProfile(fd); }, &bytes)) {
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
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
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
  } else if (name == "heapdump") {
    if (WriteHeapDump == nullptr) {
      return Reply(http::status::not_implemented, "heapdump: needs libdump's heap dumper (libdump.so)\n");
    }
    long zstd;
    if (!IntParam(q, "zstd", 0, 1, 0, &zstd, &error)) return Reply(http::status::bad_request, error + "\n");
    // LIBDUMP_HEAPDUMP_ZSTD_LEVEL and LIBDUMP_HEAPDUMP_MODE, as on a signal.
    HeapDumpOptions options;
    if (HeapDumpOptionsFromEnvironment != nullptr) options = HeapDumpOptionsFromEnvironment(zstd == 1);
    options.zstd = zstd == 1;
    int err = 0;
    ok = Capture([&](int fd) { return (err = WriteHeapDump(fd, options)) == 0; }, &bytes);
    if (!ok) return Reply(http::status::internal_server_error, "heapdump: " + std::string(strerror(err)) + "\n");
    return Profile(std::move(bytes), zstd == 1 ? "heap.dump.zst" : "heap.dump");
  } else {
    return Reply(http::status::not_found, "Unknown profile: " + name + "\n");
  }
  if (!ok) return Reply(http::status::internal_server_error, name + " profile not written\n");
  return Profile(std::move(bytes), name);
}

void Serve(tcp::socket sock) {
  // The server's own locks, allocations and CPU time are not the program's.
  t_wait.in_profiler = true;
  t_profiler_thread = true;
  OwnAllocationScope own;
  beast::error_code ec;
  beast::flat_buffer buf;
  http::request_parser<http::string_body> parser;
  parser.body_limit(1 << 20);
  http::read(sock, buf, parser, ec);
  if (ec) return;
  Response res = Handle(parser.get());
  res.set(http::field::server, "libdump");
  res.keep_alive(false);
  res.prepare_payload();
  http::write(sock, res, ec);
  sock.shutdown(tcp::socket::shutdown_send, ec);
}

void AcceptLoop(std::shared_ptr<net::io_context> ioc, std::shared_ptr<tcp::acceptor> acceptor) {
  pthread_setname_np(pthread_self(), "libdump-pprof");
  t_wait.in_profiler = true;
  t_profiler_thread = true;
  OwnAllocationScope own;
  for (;;) {
    tcp::socket sock(*ioc);
    beast::error_code ec;
    acceptor->accept(sock, ec);
    if (ec) {
      if (ec == net::error::operation_aborted || ec == net::error::bad_descriptor) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like: let it pass
      continue;
    }
    std::thread(Serve, std::move(sock)).detach();
  }
}

}  // namespace
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
  try {
    auto ioc = std::make_shared<net::io_context>(1);
    auto acceptor = std::make_shared<tcp::acceptor>(*ioc);
    const tcp::endpoint ep(net::ip::make_address(a.host), a.port);
    acceptor->open(ep.protocol());
    acceptor->set_option(net::socket_base::reuse_address(true));
    acceptor->bind(ep);
    acceptor->listen();
    const tcp::endpoint local = acceptor->local_endpoint();
    if (bound != nullptr) {
      const std::string host = local.address().to_string();
      *bound = (local.address().is_v6() ? "[" + host + "]" : host) + ":" + std::to_string(local.port());
    }
    // The heap profile is only as good as the profiler behind it: on with
    // the server, when libdump's allocator is there.
    InstallHeapProfiler();
    EnableThreadCreateProfile();  // /threadcreate: threads created from now on
    std::thread(AcceptLoop, ioc, acceptor).detach();
  } catch (const std::exception& e) {
    g_started = false;
    *error = a.host + ":" + std::to_string(a.port) + ": " + e.what();
    return false;
  }
  return true;
}

}  // namespace libdump
