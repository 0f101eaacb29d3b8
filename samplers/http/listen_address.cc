// Where the server listens and which Host headers it answers
// (debug_server.h): the defence against DNS rebinding.
#include "samplers/http/debug_server.h"

// Boost 1.74's asio uses std::exchange without including <utility>.
#include <utility>
#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "platform/net/host_names.h"

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

// Host names a request may carry: a DNS name could be rebound to 127.0.0.1
// by a web page, so only literals that are this server's address, loopback
// literals, "localhost" and the names LIBDUMP_PPROF_HOSTS lists.
bool HostAllowed(std::string_view host_header, const std::string& local) {
  const std::string host = net::HostOfHeader(host_header);
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

bool IsLoopbackAddress(const std::string& address) { return net::IsLoopbackAddress(address); }

}  // namespace libdump::samplers
