#include "tests/support/s3_fault_proxy.h"
#include "tests/support/http_text.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace stripeback::testing {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Heads longer than this end the connection: no client of the tests sends one.
constexpr size_t kMaxHead = 64 << 10;

std::string lower(std::string s) { return stripeback::testing::http_lower(std::move(s)); }
std::string trim(const std::string& s) { return stripeback::testing::http_trim(s); }

// A request or response: its first line, its headers as received, and its body as framed
// on the wire (chunked framing kept, so it is relayed as it came).
struct Message {
  std::string first_line;
  Headers headers;
  std::string body;
  bool body_to_eof = false;  // a response delimited by the end of the connection

  std::optional<std::string> header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (lower(k) == name) return v;
    return std::nullopt;
  }
  bool chunked() const {
    auto te = header("transfer-encoding");
    return te && lower(*te).find("chunked") != std::string::npos;
  }
  // The head as sent on: first line, headers (but `drop`, lower case), blank line.
  std::string head(const std::string& drop = "") const {
    std::string out = first_line + "\r\n";
    for (const auto& [k, v] : headers)
      if (drop.empty() || lower(k) != drop) out += k + ": " + v + "\r\n";
    return out + "\r\n";
  }
  bool wants_close() const {
    auto c = header("connection");
    return body_to_eof || (c && lower(*c) == "close");
  }
};

// A socket with the bytes read from it and not yet taken.
struct Stream {
  int fd = -1;
  std::string buf;

  // Reads more into buf; false at the end of the stream or on an error.
  bool fill() {
    char tmp[64 << 10];
    for (;;) {
      const ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n > 0) {
        buf.append(tmp, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
  }
  // Takes bytes up to and including `delim`.
  bool take_until(const std::string& delim, std::string& out, size_t max) {
    for (;;) {
      const size_t at = buf.find(delim);
      if (at != std::string::npos) {
        out.append(buf, 0, at + delim.size());
        buf.erase(0, at + delim.size());
        return true;
      }
      if (buf.size() > max || !fill()) return false;
    }
  }
  bool take(size_t n, std::string& out) {
    while (buf.size() < n)
      if (!fill()) return false;
    out.append(buf, 0, n);
    buf.erase(0, n);
    return true;
  }
  void take_all(std::string& out) {
    while (fill()) {
    }
    out += buf;
    buf.clear();
  }
  bool send_all(std::string_view data) const {
    while (!data.empty()) {
      const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
};

// The first line and headers of a head (as taken by take_until "\r\n\r\n").
bool parse_head(const std::string& head, Message& m) {
  size_t eol = head.find("\r\n");
  if (eol == std::string::npos || eol == 0) return false;
  m.first_line = head.substr(0, eol);
  for (size_t pos = eol + 2; pos < head.size();) {
    eol = head.find("\r\n", pos);
    if (eol == std::string::npos || eol == pos) break;
    const std::string line = head.substr(pos, eol - pos);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return false;
    m.headers.emplace_back(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
    pos = eol + 2;
  }
  return true;
}

std::optional<uint64_t> number(const std::string& s, int base = 10) {
  uint64_t v = 0;
  const std::string t = trim(s);
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

// Reads a body framed by chunks or Content-Length into m.body; `to_eof`: without either,
// the body runs to the end of the connection (a response), else there is none (a request).
bool read_body(Stream& s, Message& m, bool to_eof) {
  if (m.chunked()) {
    for (;;) {
      std::string line;
      if (!s.take_until("\r\n", line, kMaxHead)) return false;
      m.body += line;
      auto size = number(line.substr(0, line.find_first_of(";\r")), 16);
      if (!size) return false;
      if (*size == 0) break;
      if (!s.take(*size + 2, m.body)) return false;
    }
    for (;;) {  // trailers, then the blank line
      std::string line;
      if (!s.take_until("\r\n", line, kMaxHead)) return false;
      m.body += line;
      if (line == "\r\n") return true;
    }
  }
  if (auto cl = m.header("content-length")) {
    auto n = number(*cl);
    return n && s.take(*n, m.body);
  }
  if (to_eof) {
    m.body_to_eof = true;
    s.take_all(m.body);
  }
  return true;
}

int status_of(const Message& response) {
  const size_t sp = response.first_line.find(' ');
  if (sp == std::string::npos) return 0;
  return static_cast<int>(number(response.first_line.substr(sp + 1, 3)).value_or(0));
}

std::string slow_down_answer(const std::string& target, uint64_t n) {
  const std::string body =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
      "<Message>Please reduce your request rate.</Message><Resource>" +
      target.substr(0, target.find('?')) + "</Resource><RequestId>fault-proxy-" +
      std::to_string(n) + "</RequestId></Error>";
  return "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct RuleState {
  S3FaultRule rule;
  uint64_t matched = 0;
  uint64_t injected = 0;
};

}  // namespace

const char* fault_name(S3Fault f) {
  switch (f) {
    case S3Fault::slow_down:
      return "503 SlowDown";
    case S3Fault::reset:
      return "reset";
    case S3Fault::lose_answer:
      return "answer lost";
    case S3Fault::truncate:
      return "truncated";
    case S3Fault::reset_in_body:
      return "reset in the body";
  }
  return "fault";
}

struct S3FaultProxy::Impl {
  sockaddr_in upstream{};
  int listen_fd = -1;
  std::thread accept_thread;

  mutable std::mutex mu;
  bool stopping = false;
  std::vector<RuleState> rules;
  uint64_t generation = 0;  // of the rules: clear_rules() starts a new one
  uint64_t requests = 0, forwarded = 0, slow_downs = 0;
  std::vector<std::string> journal;
  std::set<int> open_fds;  // sockets the destructor shuts down to wake their threads
  std::vector<std::thread> threads;

  // A socket registered for shutdown at destruction; -1 when stopping or on failure.
  int track(int fd) {
    std::lock_guard lock(mu);
    if (stopping) {
      ::close(fd);
      return -1;
    }
    open_fds.insert(fd);
    return fd;
  }
  enum class Close { fin, reset };
  void close(Stream& s, Close how) {
    std::lock_guard lock(mu);
    if (s.fd < 0) return;
    if (how == Close::reset) {
      // SO_LINGER with a zero timeout: close() sends RST instead of FIN.
      const linger l{1, 0};
      ::setsockopt(s.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    } else {
      ::shutdown(s.fd, SHUT_RDWR);
    }
    open_fds.erase(s.fd);
    ::close(s.fd);
    s.fd = -1;
    s.buf.clear();
  }
  void note(std::string line) {
    std::lock_guard lock(mu);
    journal.push_back(std::move(line));
  }

  void accept_loop() {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      std::lock_guard lock(mu);
      if (stopping) {
        if (fd >= 0) ::close(fd);
        return;
      }
      if (fd < 0) continue;
      open_fds.insert(fd);
      threads.emplace_back([this, fd] { serve(fd); });
    }
  }

  // The rule that faults this request (its index and a copy), counting the request in every
  // rule it matches.
  struct Chosen {
    size_t index;
    uint64_t generation;
    S3FaultRule rule;
  };
  std::optional<Chosen> decide(const std::string& method, const std::string& target) {
    std::lock_guard lock(mu);
    ++requests;
    std::optional<Chosen> chosen;
    for (size_t i = 0; i < rules.size(); ++i) {
      RuleState& r = rules[i];
      const S3FaultRule& k = r.rule;
      if (!k.method.empty() && k.method != method) continue;
      if (!k.target_has.empty() && target.find(k.target_has) == std::string::npos) continue;
      if (!k.target_lacks.empty() && target.find(k.target_lacks) != std::string::npos) continue;
      const uint64_t n = ++r.matched;
      if (chosen || n <= k.skip || (n - k.skip - 1) % std::max<uint64_t>(k.every, 1) != 0 ||
          (k.limit > 0 && r.injected >= k.limit))
        continue;
      ++r.injected;
      chosen = Chosen{i, generation, k};
    }
    return chosen;
  }

  void serve(int fd) {
    Stream client{fd, {}};
    Stream gateway;
    serve_requests(client, gateway);
    close(gateway, Close::fin);
    close(client, Close::fin);
  }

  // Sends the request to the gateway and reads its answer (interim 1xx answers skipped).
  // A kept-alive connection the gateway closed meanwhile fails before any answer: then the
  // request goes again once, on a new connection.
  std::optional<Message> exchange(Stream& gateway, const std::string& request, bool head_only,
                                  std::string& why) {
    for (int round = 0; round < 2; ++round) {
      const bool reused = gateway.fd >= 0;
      if (!reused && !connect(gateway, why)) return std::nullopt;
      if (gateway.send_all(request)) {
        for (;;) {
          std::string head;
          Message m;
          if (!gateway.take_until("\r\n\r\n", head, kMaxHead)) break;
          if (!parse_head(head, m)) {
            why = "the gateway's answer has no valid head";
            close(gateway, Close::fin);
            return std::nullopt;
          }
          const int status = status_of(m);
          if (status >= 100 && status < 200) continue;
          const bool bodyless = head_only || status == 204 || status == 304;
          if (!bodyless && !read_body(gateway, m, true)) {
            why = "the gateway's answer ended inside its body";
            close(gateway, Close::fin);
            return std::nullopt;
          }
          if (m.wants_close()) close(gateway, Close::fin);
          return m;
        }
      }
      // Nothing of an answer came: a kept-alive connection the gateway had closed.
      const bool nothing = gateway.buf.empty();
      why = "the gateway closed the connection without a whole answer";
      close(gateway, Close::fin);
      if (!reused || !nothing) return std::nullopt;
    }
    return std::nullopt;
  }

  bool connect(Stream& gateway, std::string& why) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || track(fd) < 0) {
      why = "no socket for the gateway";
      return false;
    }
    gateway.fd = fd;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&upstream), sizeof upstream) != 0) {
      why = std::string("unable to connect to the gateway: ") + std::strerror(errno);
      close(gateway, Close::fin);
      return false;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return true;
  }

  void serve_requests(Stream& client, Stream& gateway) {
    for (;;) {
      std::string head;
      Message req;
      if (!client.take_until("\r\n\r\n", head, kMaxHead) || !parse_head(head, req)) return;
      const size_t sp1 = req.first_line.find(' '), sp2 = req.first_line.rfind(' ');
      if (sp1 == std::string::npos || sp2 <= sp1) return;
      const std::string method = req.first_line.substr(0, sp1);
      const std::string target = req.first_line.substr(sp1 + 1, sp2 - sp1 - 1);
      auto expect = req.header("expect");
      const bool continue_asked = expect && lower(*expect) == "100-continue";
      if (continue_asked && !client.send_all("HTTP/1.1 100 Continue\r\n\r\n")) return;
      if (!read_body(client, req, false)) return;
      const std::string line = method + " " + target;

      const std::optional<Chosen> chosen = decide(method, target);
      const S3FaultRule* fault = chosen ? &chosen->rule : nullptr;
      const S3Fault kind = fault ? fault->fault : S3Fault::slow_down;
      const size_t truncate_to = fault ? fault->truncate_to : 0;
      if (fault && kind == S3Fault::slow_down) {
        uint64_t n = 0;
        {
          std::lock_guard lock(mu);
          n = ++slow_downs;
        }
        note(line + " -> " + fault_name(kind));
        if (!client.send_all(slow_down_answer(target, n))) return;
        if (req.wants_close()) return;
        continue;
      }
      if (fault && kind == S3Fault::reset) {
        note(line + " -> " + fault_name(kind));
        close(client, Close::reset);
        return;
      }

      std::string why;
      auto answer = exchange(gateway, req.head(continue_asked ? "expect" : "") + req.body,
                             method == "HEAD", why);
      if (!answer) {
        if (fault) uncount(*chosen);
        note(line + " -> not forwarded: " + why);
        close(client, Close::reset);
        return;
      }
      const int status = status_of(*answer);
      {
        std::lock_guard lock(mu);
        ++forwarded;
      }
      if (fault && kind == S3Fault::lose_answer) {
        note(line + " -> " + std::to_string(status) + ", " + fault_name(kind));
        close(client, Close::reset);
        return;
      }
      const bool cut = kind == S3Fault::truncate || kind == S3Fault::reset_in_body;
      if (fault && cut && answer->body.size() > truncate_to) {
        note(line + " -> " + std::to_string(status) + ", " + fault_name(kind) + " after " +
             std::to_string(truncate_to) + " of " + std::to_string(answer->body.size()) + " bytes");
        client.send_all(answer->head() + answer->body.substr(0, truncate_to));
        close(client, kind == S3Fault::truncate ? Close::fin : Close::reset);
        return;
      }
      if (fault) uncount(*chosen);  // a truncation of a body too short to cut
      note(line + " -> " + std::to_string(status));
      if (!client.send_all(answer->head() + answer->body)) return;
      if (answer->wants_close() || req.wants_close()) return;
    }
  }

  // A fault decided on and not injected after all (the gateway did not answer, or the
  // body was too short to cut).
  void uncount(const Chosen& c) {
    std::lock_guard lock(mu);
    if (c.generation == generation && c.index < rules.size() && rules[c.index].injected > 0)
      --rules[c.index].injected;
  }
};

S3FaultProxy::S3FaultProxy(const std::string& upstream) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  // "http://HOST:PORT"
  const std::string prefix = "http://";
  const size_t colon = upstream.rfind(':');
  std::string host;
  std::optional<uint64_t> port;
  if (upstream.rfind(prefix, 0) == 0 && colon != std::string::npos && colon > prefix.size()) {
    host = upstream.substr(prefix.size(), colon - prefix.size());
    std::string p = upstream.substr(colon + 1);
    while (!p.empty() && p.back() == '/') p.pop_back();
    port = number(p);
  }
  m.upstream.sin_family = AF_INET;
  if (!port || *port == 0 || *port > 65535 ||
      ::inet_pton(AF_INET, host.c_str(), &m.upstream.sin_addr) != 1) {
    ADD_FAILURE() << "S3FaultProxy: '" << upstream << "' is not http://IPV4:PORT";
    return;
  }
  m.upstream.sin_port = htons(static_cast<uint16_t>(*port));

  m.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  at.sin_port = 0;
  socklen_t len = sizeof at;
  if (m.listen_fd < 0 || ::bind(m.listen_fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
      ::listen(m.listen_fd, 64) != 0 ||
      ::getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&at), &len) != 0) {
    ADD_FAILURE() << "S3FaultProxy: unable to listen on 127.0.0.1: " << std::strerror(errno);
    if (m.listen_fd >= 0) ::close(m.listen_fd);
    m.listen_fd = -1;
    return;
  }
  port_ = ntohs(at.sin_port);
  m.accept_thread = std::thread([&m] { m.accept_loop(); });
}

S3FaultProxy::~S3FaultProxy() {
  Impl& m = *impl_;
  {
    std::lock_guard lock(m.mu);
    m.stopping = true;
    // shutdown() wakes a thread blocked in accept() or recv() on that descriptor; the
    // threads close their own sockets.
    if (m.listen_fd >= 0) ::shutdown(m.listen_fd, SHUT_RDWR);
    for (int fd : m.open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  if (m.accept_thread.joinable()) m.accept_thread.join();
  for (auto& t : m.threads) t.join();
  if (m.listen_fd >= 0) ::close(m.listen_fd);
}

std::string S3FaultProxy::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

size_t S3FaultProxy::add(S3FaultRule rule) {
  std::lock_guard lock(impl_->mu);
  impl_->rules.push_back({std::move(rule), 0, 0});
  return impl_->rules.size() - 1;
}

void S3FaultProxy::clear_rules() {
  std::lock_guard lock(impl_->mu);
  impl_->rules.clear();
  ++impl_->generation;
}

uint64_t S3FaultProxy::matched(size_t rule) const {
  std::lock_guard lock(impl_->mu);
  return rule < impl_->rules.size() ? impl_->rules[rule].matched : 0;
}

uint64_t S3FaultProxy::injected(size_t rule) const {
  std::lock_guard lock(impl_->mu);
  return rule < impl_->rules.size() ? impl_->rules[rule].injected : 0;
}

uint64_t S3FaultProxy::injected() const {
  std::lock_guard lock(impl_->mu);
  uint64_t n = 0;
  for (const auto& r : impl_->rules) n += r.injected;
  return n;
}

uint64_t S3FaultProxy::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

uint64_t S3FaultProxy::forwarded() const {
  std::lock_guard lock(impl_->mu);
  return impl_->forwarded;
}

std::string S3FaultProxy::journal() const {
  std::lock_guard lock(impl_->mu);
  std::string out;
  for (const auto& line : impl_->journal) out += line + "\n";
  return out;
}

}  // namespace stripeback::testing
