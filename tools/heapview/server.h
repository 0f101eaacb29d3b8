// heapview's HTTP server (Boost.Beast): one io_context run by a pool of
// threads, so a slow page (a scan of every reference) never blocks the others.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "site.h"

namespace libdump::heapview {

struct ServerOptions {
  std::string bind = "127.0.0.1";
  uint16_t port = 7000;  // 0: any free port
  unsigned threads = 4;
};

// Listens (throws std::runtime_error "cannot listen on ADDR:PORT: reason"),
// calls `ready` with the URL, serves until SIGINT or SIGTERM, returns.
void Serve(const Site& site, const ServerOptions& o, const std::function<void(const std::string& url)>& ready);

}  // namespace libdump::heapview
