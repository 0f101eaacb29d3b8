#include "server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "platform/net/host_names.h"

namespace libdump::heapview {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class Session;

// The connections waiting for a request, oldest first: the ones to close
// when descriptors run out, so that a new client can be accepted.
class IdleSessions {
 public:
  void Add(Session* s, std::weak_ptr<Session> w) {
    std::lock_guard<std::mutex> lock(mu_);
    by_age_[s] = {++clock_, std::move(w)};
  }
  void Remove(Session* s) {
    std::lock_guard<std::mutex> lock(mu_);
    by_age_.erase(s);
  }
  // Up to n of the longest-idle connections.
  std::vector<std::shared_ptr<Session>> Oldest(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<uint64_t, std::weak_ptr<Session>>> all;
    for (auto& [s, e] : by_age_) all.push_back(e);
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::shared_ptr<Session>> out;
    for (auto& [age, w] : all) {
      if (out.size() == n) break;
      if (auto p = w.lock()) out.push_back(std::move(p));
    }
    return out;
  }

 private:
  std::mutex mu_;
  uint64_t clock_ = 0;
  std::map<Session*, std::pair<uint64_t, std::weak_ptr<Session>>> by_age_;
};

// One connection: read a request, answer it, repeat while keep-alive.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Handler& handler, std::shared_ptr<IdleSessions> idle, const ServerOptions& o)
      : stream_(std::move(socket)), handler_(handler), idle_(std::move(idle)), options_(o) {}
  ~Session() { idle_->Remove(this); }

  void Start() { Read(); }

  std::string LocalAddress() {
    beast::error_code ec;
    const auto ep = stream_.socket().local_endpoint(ec);
    return ec ? std::string() : ep.address().to_string();
  }

  // From another thread: ends the connection on its own strand.
  void Shed() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->stream_.cancel(); self->stream_.close(); });
  }

 private:
  void Read() {
    req_ = {};
    stream_.expires_after(std::chrono::seconds(60));
    idle_->Add(this, weak_from_this());
    http::async_read(stream_, buffer_, req_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, size_t) {
    idle_->Remove(this);
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
    } else if (const auto host = req_.find(http::field::host);
               host == req_.end() ||
               !HostAllowed(std::string_view(host->value().data(), host->value().size()), options_, LocalAddress())) {
      res->result(http::status::forbidden);
      res->set(http::field::content_type, "text/plain; charset=utf-8");
      res->body() = "Host not allowed: heapview answers requests for its own address, localhost or a loopback "
                    "address (--allow-host names others)\n";
    } else {
      const Response r = handler_(std::string(req_.target()));
      res->result(r.status);
      res->set(http::field::content_type, r.content_type);
      for (const auto& [name, value] : r.headers) res->set(name, value);
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
  const Handler& handler_;
  // Shared: a session may outlive the listener while the io_context is
  // destroyed.
  std::shared_ptr<IdleSessions> idle_;
  const ServerOptions& options_;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& ioc, tcp::acceptor acceptor, const Handler& handler, const ServerOptions& o)
      : ioc_(ioc), acceptor_(std::move(acceptor)), handler_(handler), options_(o), backoff_(ioc) {}
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
    if (!ec) {
      std::make_shared<Session>(std::move(socket), handler_, idle_, options_)->Start();
      return Accept();
    }
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
        ec.value() == ENFILE) {
      // Out of descriptors: the pending client stays pending, so accepting
      // again at once would spin. Close the connections idle longest (a
      // flood of slow clients is what fills the table) and try again soon.
      for (auto& s : idle_->Oldest(kShedAtOnce)) s->Shed();
      backoff_.expires_after(std::chrono::milliseconds(50));
      backoff_.async_wait([self = shared_from_this()](beast::error_code e) {
        if (e != asio::error::operation_aborted) self->Accept();
      });
      return;
    }
    Accept();
  }

  static constexpr size_t kShedAtOnce = 8;
  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  const Handler& handler_;
  const ServerOptions& options_;
  std::shared_ptr<IdleSessions> idle_ = std::make_shared<IdleSessions>();
  asio::steady_timer backoff_;
};

}  // namespace

bool HostAllowed(std::string_view h, const ServerOptions& o, const std::string& local) {
  const std::string host = net::HostOfHeader(h);
  if (host.empty()) return false;
  if (host == "localhost" || host == o.bind || (!local.empty() && host == local)) return true;
  for (const std::string& a : o.allowed_hosts) {
    if (host == a) return true;
  }
  return net::IsLoopbackAddress(host);
}

// Members in the order they must be destroyed in reverse: the io_context
// (and the sessions its handlers hold) before the handler and the options
// they refer to.
struct Server::State {
  State(Handler h, const ServerOptions& opts)
      : handler(std::move(h)), o(opts), ioc(static_cast<int>(opts.threads)) {}
  Handler handler;
  ServerOptions o;
  asio::io_context ioc;
  std::shared_ptr<Listener> listener;
  std::string url;
  std::vector<std::thread> pool;
};

Server::Server(Handler handler, const ServerOptions& o) : s_(std::make_unique<State>(std::move(handler), o)) {
  const std::string where = o.bind + ":" + std::to_string(o.port);
  beast::error_code ec;
  const auto addr = asio::ip::make_address(o.bind, ec);
  if (ec) throw std::runtime_error("cannot listen on " + where + ": not an IP address");
  tcp::acceptor acceptor(s_->ioc);
  const tcp::endpoint ep(addr, o.port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
  const uint16_t port = acceptor.local_endpoint().port();
  s_->listener = std::make_shared<Listener>(s_->ioc, std::move(acceptor), s_->handler, s_->o);
  s_->listener->Accept();
  const std::string host = addr.is_v6() ? "[" + o.bind + "]" : o.bind;
  s_->url = "http://" + host + ":" + std::to_string(port) + "/";
}

Server::~Server() {
  s_->listener->Stop();
  s_->ioc.stop();
  for (auto& t : s_->pool) t.join();
}

const std::string& Server::url() const { return s_->url; }

void Server::Start() {
  // One thread fewer than asked for, which Run adds: the caller's.
  const unsigned threads = std::max(2u, std::min(s_->o.threads, kMaxThreads));
  for (unsigned k = 1; k < threads; ++k) {
    try {
      s_->pool.emplace_back([this] { s_->ioc.run(); });
    } catch (const std::system_error&) {
      if (s_->pool.empty()) throw;
      break;  // the system's thread limit: serve with the threads there are
    }
  }
}

void Server::Run() {
  // Ctrl-C and SIGTERM stop the loop; the threads finish the requests they
  // are in and return.
  asio::signal_set signals(s_->ioc, SIGINT, SIGTERM);
  signals.async_wait([this](beast::error_code, int) {
    s_->listener->Stop();
    s_->ioc.stop();
  });
  // --threads 1: the one thread Start began serves alone.
  if (s_->pool.size() < s_->o.threads) s_->ioc.run();
  for (auto& t : s_->pool) t.join();
  s_->pool.clear();
}

}  // namespace libdump::heapview
