// The two questions both HTTP servers (/debug/pprof and heapview) ask of an
// address, before they answer a request: is it loopback, and which host
// does a Host header name. Header-only (Boost.Asio's address parsing), so
// that the runtime and the tools share it without a library between them.
#pragma once

// Boost 1.74's asio uses std::exchange without including <utility>.
#include <utility>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <string>
#include <string_view>

namespace libdump::net {

// 127.0.0.0/8, ::1 however written (0:0:0:0:0:0:0:1), and 127.x mapped into
// IPv6 (::ffff:127.0.0.1). Not "localhost": a name, which callers allow
// by name.
inline bool IsLoopbackAddress(const std::string& address) {
  boost::system::error_code ec;
  const auto a = boost::asio::ip::make_address(address, ec);
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return a.is_loopback();
}

// The host of a Host header, lower-cased, without its port or an IPv6
// literal's brackets; empty when the header is malformed or empty.
inline std::string HostOfHeader(std::string_view h) {
  if (h.starts_with('[')) {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return {};
    h = h.substr(1, close - 1);
  } else if (const size_t colon = h.rfind(':'); colon != std::string_view::npos && h.find(':') == colon) {
    h = h.substr(0, colon);
  }
  std::string host(h);
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return host;
}

}  // namespace libdump::net
