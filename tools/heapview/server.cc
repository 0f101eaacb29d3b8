#include "server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <thread>
#include <vector>

namespace libdump::heapview {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// One connection: read a request, answer it, repeat while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Site& site) : stream_(std::move(socket)), site_(site) {}

  void Start() { Read(); }

 private:
  void Read() {
    req_ = {};
    stream_.expires_after(std::chrono::seconds(60));
    http::async_read(stream_, buffer_, req_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    if (ec) return Close();
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(req_.version());
    res->keep_alive(req_.keep_alive());
    res->set(http::field::server, "heapview");
    // No page needs a script, a frame or anything from elsewhere: say so,
    // so a name in a dump could not run one even if escaping failed.
    res->set("Content-Security-Policy",
             "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
    res->set("X-Content-Type-Options", "nosniff");
    if (req_.method() != http::verb::get && req_.method() != http::verb::head) {
      res->result(http::status::method_not_allowed);
      res->set(http::field::content_type, "text/plain");
      res->body() = "heapview serves GET only\n";
    } else {
      const Response r = site_.Handle(std::string(req_.target()));
      res->result(r.status);
      res->set(http::field::content_type, r.content_type);
      if (req_.method() == http::verb::get) res->body() = r.body;
    }
    res->prepare_payload();
    res_ = res;
    http::async_write(stream_, *res_, beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    if (ec || !res_->keep_alive()) return Close();
    res_.reset();
    Read();
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  std::shared_ptr<http::response<http::string_body>> res_;
  const Site& site_;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& ioc, tcp::acceptor acceptor, const Site& site)
      : ioc_(ioc), acceptor_(std::move(acceptor)), site_(site) {}
  void Accept() {
    acceptor_.async_accept(asio::make_strand(ioc_), beast::bind_front_handler(&Listener::OnAccept, shared_from_this()));
  }
  void Stop() {
    beast::error_code ec;
    acceptor_.close(ec);
  }

 private:
  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(socket), site_)->Start();
    Accept();
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  const Site& site_;
};

}  // namespace

void Serve(const Site& site, const ServerOptions& o, const std::function<void(const std::string&)>& ready) {
  asio::io_context ioc(static_cast<int>(o.threads));
  const std::string where = o.bind + ":" + std::to_string(o.port);
  beast::error_code ec;
  const auto addr = asio::ip::make_address(o.bind, ec);
  if (ec) throw std::runtime_error("cannot listen on " + where + ": not an IP address");
  tcp::acceptor acceptor(ioc);
  const tcp::endpoint ep(addr, o.port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
  const uint16_t port = acceptor.local_endpoint().port();
  auto listener = std::make_shared<Listener>(ioc, std::move(acceptor), site);
  listener->Accept();

  // Ctrl-C and SIGTERM stop the loop; the threads finish the requests they
  // are in and return.
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) {
    listener->Stop();
    ioc.stop();
  });
  const std::string host = addr.is_v6() ? "[" + o.bind + "]" : o.bind;
  ready("http://" + host + ":" + std::to_string(port) + "/");

  std::vector<std::thread> pool;
  for (unsigned k = 1; k < o.threads; ++k) pool.emplace_back([&] { ioc.run(); });
  ioc.run();
  for (auto& t : pool) t.join();
}

}  // namespace libdump::heapview
