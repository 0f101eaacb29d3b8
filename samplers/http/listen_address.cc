// Where the server listens and which Host headers it answers
// (debug_server.h): the defence against DNS rebinding.
#include "samplers/http/debug_server.h"

// Boost 1.74's asio uses std::exchange without including <utility>.
#include <utility>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <charconv>
#include <cstdlib>

namespace libdump::samplers {
namespace {
namespace net = boost::asio;
}  // namespace

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
