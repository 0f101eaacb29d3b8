// /debug/pprof/ over HTTP for a running program, as Go's net/http/pprof
// serves it, with Boost.Beast: the index page, profile?seconds=N (one CPU
// profile at a time), heap, allocs, block, mutex, goroutine, threads,
// threadcreate, cmdline, symbol, heapdump (WriteHeapDump, ?zstd=1) when
// libdump's heap dumper is present, and the flight recorder's window.
#pragma once

#include <string>
#include <string_view>

namespace libdump::samplers {

struct ParsedAddress {
  std::string host;  // an IP address
  unsigned short port;
};
// "HOST:PORT" ([V6]:PORT); an empty host means 127.0.0.1 (loopback unless
// the address says otherwise), "localhost" too. False with *error set.
bool ParseListenAddress(const std::string& address, ParsedAddress* out, std::string* error);

// An IP literal of this host's loopback: 127.0.0.0/8, ::1 in any spelling,
// and 127.x.y.z mapped into IPv6 (::ffff:127.0.0.1).
bool IsLoopbackAddress(const std::string& address);

// Whether a request's Host header (with or without a port) names this
// server: local (the address the client connected to), localhost, a
// loopback literal, or a name LIBDUMP_PPROF_HOSTS lists (comma-separated).
bool HostAllowed(std::string_view host_header, const std::string& local);

}  // namespace libdump::samplers
