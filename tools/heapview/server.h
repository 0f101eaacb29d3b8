// heapview's HTTP server (Boost.Beast): one io_context run by a pool of
// threads, so a slow page (a scan of every reference) never blocks the others.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "site.h"

namespace libdump::heapview {

// More threads than this only take memory: pages are CPU-bound and the
// machine has fewer cores.
constexpr unsigned kMaxThreads = 64;

struct ServerOptions {
  std::string bind = "127.0.0.1";
  uint16_t port = 7000;  // 0: any free port
  unsigned threads = 4;  // 1 to kMaxThreads
  // Host header names served besides the bound address, localhost and
  // loopback literals (a DNS name may be rebound to 127.0.0.1 by a web page).
  std::vector<std::string> allowed_hosts;
};

// Whether a request's Host header (with or without a port) names this
// server: the bound address, the address the client connected to (local),
// localhost, a loopback literal or one of o.allowed_hosts.
bool HostAllowed(std::string_view host_header, const ServerOptions& o, const std::string& local);

// A request target to its response; called by any number of threads at once.
using Handler = std::function<Response(const std::string& target)>;

// A server in three steps, so that heapview listens before a long open
// (a port in use is reported at once) and answers while the open runs.
class Server {
 public:
  // Listens; throws std::runtime_error "cannot listen on ADDR:PORT: reason".
  Server(Handler handler, const ServerOptions& o);
  // Stops serving and joins the threads.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // "http://ADDR:PORT/".
  const std::string& url() const;
  // Serves on threads of its own (o.threads - 1, at least one) and returns.
  // SIGINT and SIGTERM keep their actions until Run.
  void Start();
  // Also serves on the calling thread, until SIGINT or SIGTERM; then returns.
  void Run();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace libdump::heapview
