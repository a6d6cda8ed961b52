#include "cli/status_endpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/progress_view.h"
#include "util/json.h"

namespace stripeback::cli {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;

constexpr size_t kMaxHead = 8192;
constexpr auto kClientTimeout = std::chrono::seconds(5);

const char* reason_of(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
  }
  return "Error";
}

// A label value with \, " and newlines escaped, as the exposition format wants.
std::string label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\') o += "\\\\";
    else if (c == '"') o += "\\\"";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string metrics_text(const engine::ProgressSnapshot& s) {
  const std::string job = "operation=\"" + label(s.operation) + "\",tag=\"" + label(s.tag) + "\"";
  std::string o;
  auto metric = [&](const char* name, const char* type, const char* help) {
    o += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto sample = [&](const char* name, const std::string& labels, double v) {
    o += std::string(name) + "{" + labels + "} " + number(v) + "\n";
  };
  metric("stripeback_job_done_bytes_total", "counter", "Bytes the job has done (read or checked).");
  sample("stripeback_job_done_bytes_total", job, static_cast<double>(s.bytes_done));
  metric("stripeback_job_planned_bytes", "gauge", "Bytes the job will have done at its end.");
  sample("stripeback_job_planned_bytes", job, static_cast<double>(s.bytes_total));
  metric("stripeback_job_rate_bytes_per_second", "gauge", "Bytes per second over the last seconds.");
  sample("stripeback_job_rate_bytes_per_second", job, s.rate);
  if (s.eta_s >= 0) {
    metric("stripeback_job_eta_seconds", "gauge", "Seconds left at the current rate.");
    sample("stripeback_job_eta_seconds", job, s.eta_s);
  }
  metric("stripeback_job_start_time_seconds", "gauge", "When the job started, seconds since the epoch.");
  sample("stripeback_job_start_time_seconds", job, static_cast<double>(s.started_ns) / 1e9);
  metric("stripeback_job_last_progress_time_seconds", "gauge",
         "When the job last made progress, seconds since the epoch.");
  sample("stripeback_job_last_progress_time_seconds", job,
         static_cast<double>(s.last_progress_ns) / 1e9);
  metric("stripeback_job_finished", "gauge", "1 once the job has returned.");
  sample("stripeback_job_finished", job, s.finished ? 1 : 0);
  metric("stripeback_job_suspicious", "gauge",
         "1 when the ransomware alarm fired on the backup (see /status: suspicious).");
  sample("stripeback_job_suspicious", job, s.suspicious.empty() ? 0 : 1);
  metric("stripeback_channel_done_bytes_total", "counter", "Bytes a channel has done.");
  for (const auto& c : s.channels)
    sample("stripeback_channel_done_bytes_total", job + ",channel=\"" + std::to_string(c.channel) + "\"",
           static_cast<double>(c.bytes));
  metric("stripeback_channel_state", "gauge", "1 for the state a channel is in, 0 for the others.");
  static const char* kStates[] = {"starting", "reading", "writing", "throttled", "working", "idle", "done"};
  for (const auto& c : s.channels)
    for (const char* st : kStates)
      sample("stripeback_channel_state",
             job + ",channel=\"" + std::to_string(c.channel) + "\",state=\"" + st + "\"",
             c.state == st ? 1 : 0);
  metric("stripeback_channel_state_seconds", "gauge", "Seconds a channel has been in its state.");
  for (const auto& c : s.channels)
    sample("stripeback_channel_state_seconds", job + ",channel=\"" + std::to_string(c.channel) + "\"",
           c.state_s);
  return o;
}

StatusEndpoint::Response StatusEndpoint::respond(const std::string& head,
                                                 const engine::ProgressSnapshot* s) {
  Response r;
  r.type = "text/plain; charset=utf-8";
  const size_t eol = head.find("\r\n");
  const std::string line = head.substr(0, eol);
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (eol == std::string::npos || sp1 == std::string::npos || sp2 <= sp1 ||
      line.compare(sp2 + 1, 5, "HTTP/") != 0) {
    r.code = 400;
    r.body = "bad request\n";
    return r;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") {
    r.code = 405;
    r.body = "only GET\n";
    return r;
  }
  if (path != "/status" && path != "/metrics") {
    r.code = 404;
    r.body = "not found: GET /status or /metrics\n";
    return r;
  }
  if (!s) {
    r.code = 503;
    r.body = "the job has not started yet\n";
    return r;
  }
  if (path == "/metrics") {
    r.type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics_text(*s);
    return r;
  }
  util::JsonWriter w;
  w.begin_object();
  w.begin_array("jobs");
  w.begin_object();
  w.kv("id", s->host + "." + std::to_string(s->pid));
  w.kv("state", s->finished ? "finished" : "running");
  snapshot_json(w, *s);
  w.end_object();
  w.end_array();
  w.end_object();
  r.type = "application/json";
  r.body = w.str() + "\n";
  return r;
}

struct StatusEndpoint::Impl {
  asio::io_context io;
  std::optional<tcp::acceptor> tcp_acceptor;
  std::optional<local::acceptor> unix_acceptor;
  std::string address, socket_path;
  std::thread thread;
  std::mutex mu;
  std::optional<engine::ProgressSnapshot> latest;

  std::string answer(const std::string& head) {
    Response r;
    {
      std::lock_guard<std::mutex> g(mu);
      r = respond(head, latest ? &*latest : nullptr);
    }
    const bool head_only = head.rfind("HEAD ", 0) == 0;
    std::string out = "HTTP/1.1 " + std::to_string(r.code) + " " + reason_of(r.code) +
                      "\r\nContent-Type: " + r.type + "\r\nContent-Length: " +
                      std::to_string(r.body.size()) + "\r\nConnection: close\r\n\r\n";
    if (!head_only) out += r.body;
    return out;
  }

  template <typename Socket>
  void serve(std::shared_ptr<Socket> sock) {
    auto buf = std::make_shared<asio::streambuf>(kMaxHead);
    auto timer = std::make_shared<asio::steady_timer>(io, kClientTimeout);
    timer->async_wait([sock](const boost::system::error_code& ec) {
      if (!ec) {
        boost::system::error_code ignored;
        sock->close(ignored);
      }
    });
    asio::async_read_until(
        *sock, *buf, "\r\n\r\n",
        [this, sock, buf, timer](const boost::system::error_code& ec, size_t n) {
          std::string reply;
          if (ec == asio::error::not_found) {
            reply = "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
                    "Connection: close\r\n\r\n";
          } else if (ec) {
            timer->cancel();
            return;
          } else {
            std::string head(asio::buffers_begin(buf->data()), asio::buffers_begin(buf->data()) +
                                                                   static_cast<std::ptrdiff_t>(n));
            reply = answer(head);
          }
          auto text = std::make_shared<std::string>(std::move(reply));
          asio::async_write(*sock, asio::buffer(*text),
                            [sock, text, timer](const boost::system::error_code&, size_t) {
                              timer->cancel();
                              boost::system::error_code ignored;
                              sock->shutdown(Socket::shutdown_both, ignored);
                              sock->close(ignored);
                            });
        });
  }

  void accept_tcp() {
    auto sock = std::make_shared<tcp::socket>(io);
    tcp_acceptor->async_accept(*sock, [this, sock](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) serve(sock);
      accept_tcp();
    });
  }
  void accept_unix() {
    auto sock = std::make_shared<local::socket>(io);
    unix_acceptor->async_accept(*sock, [this, sock](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) serve(sock);
      accept_unix();
    });
  }
};

Result<std::unique_ptr<StatusEndpoint>> StatusEndpoint::start(const std::string& addr) {
  std::unique_ptr<StatusEndpoint> e(new StatusEndpoint());
  e->impl_ = std::make_unique<Impl>();
  Impl& m = *e->impl_;
  auto bad = [&](const std::string& why) {
    return fail(Errc::invalid_argument, "--status-listen '" + addr + "': " + why);
  };
  boost::system::error_code ec;
  if (!addr.empty() && (addr[0] == '/' || addr.rfind("./", 0) == 0)) {
    struct stat st {};
    if (::lstat(addr.c_str(), &st) == 0) {
      if (!S_ISSOCK(st.st_mode)) return bad("exists and is not a socket");
      ::unlink(addr.c_str());  // a socket left by a job that died
    }
    m.unix_acceptor.emplace(m.io);
    m.unix_acceptor->open(local(), ec);
    if (!ec) m.unix_acceptor->bind(local::endpoint(addr), ec);
    if (!ec) m.unix_acceptor->listen(16, ec);
    if (ec) return bad(ec.message());
    m.socket_path = addr;
    m.address = addr;
    m.accept_unix();
  } else {
    std::string host = "127.0.0.1", port = addr;
    const size_t colon = addr.rfind(':');
    if (colon != std::string::npos) {
      host = addr.substr(0, colon);
      port = addr.substr(colon + 1);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
      if (host.empty()) host = "127.0.0.1";
    }
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 0 || p > 65535)
      return bad("expected a socket path, PORT or HOST:PORT");
    auto ip = asio::ip::make_address(host, ec);
    if (ec) return bad("'" + host + "' is not an IP address");
    tcp::endpoint ep(ip, static_cast<unsigned short>(p));
    m.tcp_acceptor.emplace(m.io);
    m.tcp_acceptor->open(ep.protocol(), ec);
    if (!ec) m.tcp_acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) m.tcp_acceptor->bind(ep, ec);
    if (!ec) m.tcp_acceptor->listen(16, ec);
    if (ec) return bad(ec.message());
    const auto bound = m.tcp_acceptor->local_endpoint();
    m.address = (bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                         : bound.address().to_string()) +
                ":" + std::to_string(bound.port());
    m.accept_tcp();
  }
  m.thread = std::thread([&m] { m.io.run(); });
  return e;
}

StatusEndpoint::~StatusEndpoint() {
  if (!impl_) return;
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  boost::system::error_code ec;
  if (impl_->tcp_acceptor) impl_->tcp_acceptor->close(ec);
  if (impl_->unix_acceptor) impl_->unix_acceptor->close(ec);
  if (!impl_->socket_path.empty()) ::unlink(impl_->socket_path.c_str());
}

void StatusEndpoint::update(const engine::ProgressSnapshot& s) {
  std::lock_guard<std::mutex> g(impl_->mu);
  impl_->latest = s;
}

const std::string& StatusEndpoint::address() const { return impl_->address; }

}  // namespace stripeback::cli
