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

#include "samplers/http/debug_pages.h"

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
#include <cstring>
#include <condition_variable>
#include <map>
#include <mutex>

#include "libdump/heap_dump.h"
#include "libdump/profiler.h"
#include "samplers/heap/heap_profiler.h"
#include "platform/proc/helper_threads.h"
#include "samplers/common/own_allocations.h"
#include "samplers/interpose/wait_state.h"

// Present with libdump's heap dumper (libdump.so), absent otherwise.
namespace libdump {
int WriteHeapDump(int fd, const HeapDumpOptions& options) __attribute__((weak));
HeapDumpOptions HeapDumpOptionsFromEnvironment(bool zstd) __attribute__((weak));
}  // namespace libdump

namespace libdump::samplers {

namespace {

using namespace debug_http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

std::atomic<bool> g_started{false};

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

}  // namespace

// Waits seconds, or less when the server stops.
bool debug_http::Nap(long seconds) {
  Server* s = g_server;
  std::unique_lock<std::mutex> lock(s->mu);
  return !s->naps.wait_for(lock, std::chrono::seconds(seconds), [s] { return s->stopping; });
}

namespace {

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
