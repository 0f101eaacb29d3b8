// heapview's HTTP server (Boost.Beast): one io_context run by a pool of
// threads, so a slow page (a scan of every reference) never blocks the others.
#pragma once

#include <cstdint>
#include <functional>
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

// Listens (throws std::runtime_error "cannot listen on ADDR:PORT: reason"),
// calls `ready` with the URL, serves until SIGINT or SIGTERM, returns.
void Serve(const Site& site, const ServerOptions& o, const std::function<void(const std::string& url)>& ready);

}  // namespace libdump::heapview
