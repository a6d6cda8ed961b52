#include "tests/s3/http_test_server.h"
#include "tests/support/http_text.h"

#include <sys/socket.h>

#include <array>
#include <boost/asio.hpp>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace stripeback::s3::test {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Headers = std::vector<std::pair<std::string, std::string>>;

std::string lower(std::string s) { return stripeback::testing::http_lower(std::move(s)); }
std::string trim(const std::string& s) { return stripeback::testing::http_trim(s); }

const char* reason_of(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 416:
      return "Range Not Satisfiable";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

bool has_header(const Headers& hs, const std::string& name) {
  for (const auto& [k, v] : hs)
    if (lower(k) == name) return true;
  return false;
}

// Parses a request head (request line and headers, up to the blank line); false if it is
// not one.
bool parse_head(const std::string& head, RecordedRequest& r) {
  size_t eol = head.find("\r\n");
  const std::string line = head.substr(0, eol);
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (eol == std::string::npos || sp1 == std::string::npos || sp2 <= sp1) return false;
  r.method = line.substr(0, sp1);
  r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  for (size_t pos = eol + 2; pos < head.size();) {
    eol = head.find("\r\n", pos);
    if (eol == std::string::npos || eol == pos) break;
    const std::string h = head.substr(pos, eol - pos);
    const size_t colon = h.find(':');
    if (colon != std::string::npos)
      r.headers.emplace_back(lower(trim(h.substr(0, colon))), trim(h.substr(colon + 1)));
    pos = eol + 2;
  }
  return true;
}

// "bytes=a-b" or "bytes=a-" against an object of `size` bytes: [first, last] inclusive.
std::optional<std::pair<size_t, size_t>> parse_range(const std::string& v, size_t size) {
  if (v.rfind("bytes=", 0) != 0) return std::nullopt;
  const size_t dash = v.find('-', 6);
  if (dash == std::string::npos || dash == 6) return std::nullopt;
  try {
    const size_t first = std::stoull(v.substr(6, dash - 6));
    size_t last = size == 0 ? 0 : size - 1;
    if (dash + 1 < v.size()) last = std::min<size_t>(last, std::stoull(v.substr(dash + 1)));
    return std::make_pair(first, last);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Reply not_found(const std::string& path) {
  Reply r;
  r.status = 404;
  r.headers = {{"Content-Type", "application/xml"}};
  r.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code><Key>" + path +
           "</Key></Error>\n";
  return r;
}

}  // namespace

std::string RecordedRequest::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return v;
  return "";
}

struct HttpTestServer::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accept_thread;

  mutable std::mutex mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::deque<Reply> queued;
  Handler handler;
  bool keep_bodies = true;
  std::vector<RecordedRequest> records;
  std::map<std::string, std::string> objects;
  size_t accepted = 0;
  std::vector<std::shared_ptr<tcp::socket>> sockets;
  std::vector<std::thread> threads;

  void accept_loop() {
    for (;;) {
      auto sock = std::make_shared<tcp::socket>(io);
      boost::system::error_code ec;
      acceptor.accept(*sock, ec);
      std::lock_guard lock(mu);
      if (stopping) return;
      if (ec) continue;
      ++accepted;
      sockets.push_back(sock);
      threads.emplace_back([this, sock] { serve(*sock); });
    }
  }

  Reply default_reply(const RecordedRequest& r) {
    const std::string path = r.target.substr(0, r.target.find('?'));
    std::lock_guard lock(mu);
    auto it = objects.find(path);
    Reply out;
    if (r.method == "PUT") {
      objects[path] = r.body;
      out.headers = {{"ETag", "\"" + std::to_string(r.body.size()) + "\""}};
    } else if (r.method == "DELETE") {
      objects.erase(path);
      out.status = 204;
    } else if (r.method != "GET" && r.method != "HEAD") {
      out.status = 405;
    } else if (it == objects.end()) {
      return not_found(path);
    } else if (auto range = parse_range(r.header("range"), it->second.size())) {
      const size_t size = it->second.size();
      if (range->first >= size || range->first > range->second) {
        out.status = 416;
        out.headers = {{"Content-Range", "bytes */" + std::to_string(size)}};
      } else {
        out.status = 206;
        out.headers = {{"Content-Range", "bytes " + std::to_string(range->first) + "-" +
                                             std::to_string(range->second) + "/" +
                                             std::to_string(size)}};
        out.body = it->second.substr(range->first, range->second - range->first + 1);
      }
    } else {
      out.body = it->second;
    }
    return out;
  }

  Reply answer(const RecordedRequest& r) {
    Handler h;
    {
      std::lock_guard lock(mu);
      if (!queued.empty()) {
        Reply q = std::move(queued.front());
        queued.pop_front();
        return q;
      }
      h = handler;
    }
    if (h)
      if (auto got = h(r)) return std::move(*got);
    return default_reply(r);
  }

  // Reads one request's body of `len` bytes, the part already buffered first.
  static bool read_body(tcp::socket& s, asio::streambuf& buf, size_t len, std::string& body) {
    body.resize(len);
    const size_t have = std::min(len, buf.size());
    asio::buffer_copy(asio::buffer(body.data(), have), buf.data());
    buf.consume(have);
    boost::system::error_code ec;
    if (have < len) asio::read(s, asio::buffer(body.data() + have, len - have), ec);
    return !ec;
  }

  // Answers `r` with `reply`; false when the connection is to end.
  bool respond(tcp::socket& s, const RecordedRequest& r, const Reply& reply) {
    if (reply.delay.count() > 0) {
      std::unique_lock lock(mu);
      if (stop_cv.wait_for(lock, reply.delay, [this] { return stopping; })) return false;
    }
    if (reply.reset_unanswered) {
      close(s, Close::reset);
      return false;
    }
    std::string head =
        "HTTP/1.1 " + std::to_string(reply.status) + " " + reason_of(reply.status) + "\r\n";
    for (const auto& [k, v] : reply.headers) head += k + ": " + v + "\r\n";
    if (!has_header(reply.headers, "content-length"))
      head += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    head += "\r\n";
    size_t body_len = r.method == "HEAD" ? 0 : reply.body.size();
    if (reply.reset_after) body_len = std::min(body_len, *reply.reset_after);
    if (reply.truncate_to) body_len = std::min(body_len, *reply.truncate_to);
    boost::system::error_code ec;
    const std::array<asio::const_buffer, 2> out{asio::buffer(head),
                                                asio::buffer(reply.body.data(), body_len)};
    asio::write(s, out, ec);
    if (ec) return false;
    if (reply.reset_after) {
      close(s, Close::reset);
      return false;
    }
    if (reply.truncate_to) return false;  // serve() closes the connection
    return lower(r.header("connection")) != "close";
  }

  enum class Close : bool { fin, reset };
  // Under the lock: the destructor shuts down the sockets still open.
  void close(tcp::socket& s, Close how) {
    std::lock_guard lock(mu);
    boost::system::error_code ec;
    if (!s.is_open()) return;
    // SO_LINGER with a zero timeout: close() sends RST instead of FIN.
    if (how == Close::reset)
      s.set_option(asio::socket_base::linger(true, 0), ec);
    else
      s.shutdown(tcp::socket::shutdown_both, ec);
    s.close(ec);
  }

  void serve(tcp::socket& s) {
    serve_requests(s);
    close(s, Close::fin);
  }

  void serve_requests(tcp::socket& s) {
    asio::streambuf buf;
    for (;;) {
      boost::system::error_code ec;
      const size_t n = asio::read_until(s, buf, "\r\n\r\n", ec);
      if (ec) return;
      std::string head(asio::buffers_begin(buf.data()),
                       asio::buffers_begin(buf.data()) + static_cast<std::ptrdiff_t>(n));
      buf.consume(n);
      RecordedRequest r;
      if (!parse_head(head, r)) return;
      const std::string cl = r.header("content-length");
      const size_t len = cl.empty() ? 0 : std::stoull(cl);
      if (lower(r.header("expect")) == "100-continue") {
        asio::write(s, asio::buffer(std::string("HTTP/1.1 100 Continue\r\n\r\n")), ec);
        if (ec) return;
      }
      if (!read_body(s, buf, len, r.body)) return;
      r.body_size = len;
      {
        std::lock_guard lock(mu);
        records.push_back(r);
        if (!keep_bodies) records.back().body.clear();
      }
      if (!respond(s, r, answer(r))) return;
    }
  }
};

HttpTestServer::HttpTestServer() : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  m.acceptor.open(ep.protocol());
  m.acceptor.bind(ep);
  m.acceptor.listen(64);
  port_ = m.acceptor.local_endpoint().port();
  m.accept_thread = std::thread([&m] { m.accept_loop(); });
}

HttpTestServer::~HttpTestServer() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    m.stopping = true;
    // shutdown() wakes a thread blocked in accept() or read() on that descriptor; the
    // threads close their own sockets.
    ::shutdown(m.acceptor.native_handle(), SHUT_RDWR);
    for (auto& s : m.sockets)
      if (s->is_open()) ::shutdown(s->native_handle(), SHUT_RDWR);
  }
  m.stop_cv.notify_all();
  m.accept_thread.join();
  for (auto& t : m.threads) t.join();
}

std::string HttpTestServer::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void HttpTestServer::push(Reply r) {
  std::lock_guard lock(impl_->mu);
  impl_->queued.push_back(std::move(r));
}

void HttpTestServer::on(Handler h) {
  std::lock_guard lock(impl_->mu);
  impl_->handler = std::move(h);
}

void HttpTestServer::record_bodies(bool on) {
  std::lock_guard lock(impl_->mu);
  impl_->keep_bodies = on;
}

std::vector<RecordedRequest> HttpTestServer::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->records;
}

size_t HttpTestServer::connections_accepted() const {
  std::lock_guard lock(impl_->mu);
  return impl_->accepted;
}

void HttpTestServer::put_object(const std::string& path, std::string body) {
  std::lock_guard lock(impl_->mu);
  impl_->objects[path] = std::move(body);
}

std::optional<std::string> HttpTestServer::object(const std::string& path) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->objects.find(path);
  if (it == impl_->objects.end()) return std::nullopt;
  return it->second;
}

}  // namespace stripeback::s3::test
