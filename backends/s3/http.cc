#include "backends/s3/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace stripeback::s3 {
namespace {

using std::chrono::milliseconds;

// Our own bound past a request's deadline, should libcurl's timer not end it (a transfer
// queued for a connection, a stuck TLS handshake): it is then dropped and reported timed out.
constexpr auto kSlack = milliseconds(250);

// curl_global_init is not thread-safe; sessions are made on several channel threads.
Result<void> init_curl_once() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] { rc = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (rc != CURLE_OK)
    return fail(Errc::io, std::string("unable to initialise libcurl: ") + curl_easy_strerror(rc));
  return ok();
}

std::string lower(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return o;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

long ms_between(Clock::time_point from, Clock::time_point to) {
  auto d = std::chrono::ceil<milliseconds>(to - from).count();
  return static_cast<long>(std::clamp<int64_t>(d, 0, LONG_MAX));
}

}  // namespace

// Named outside the anonymous namespace: HttpSession::Impl holds them, and GCC warns when a
// member's type has internal linkage in a file compiled as part of a unity source.
struct CurlSlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// One request from start() to its response: what libcurl's callbacks write to.
struct HttpTransfer {
  HttpRequest req;
  HttpResponse resp;
  CURL* easy = nullptr;
  std::unique_ptr<curl_slist, CurlSlistFree> header_list;
  Clock::time_point started;
  size_t sent = 0;      // read position in req.body
  int sends = 0;        // times libcurl was about to send the request (on_prereq)
  bool routed = false;  // whether the body's destination was chosen
  bool to_text = true;
  std::optional<Error> own;  // a failure a callback decided (the body did not fit)
  int refused_option = 0;    // the CURLoption libcurl refused while setting up, if any
  char errbuf[CURL_ERROR_SIZE] = {};

  std::string what() const { return req.method + " " + url_for_messages(req.url); }
  Error error(Errc code, int err, const std::string& cause) const {
    return Error{code, err, what() + " failed: " + cause};
  }
  Error error(Errc code, const std::string& cause) const { return error(code, 0, cause); }
};

namespace {

size_t on_header(char* data, size_t size, size_t n, void* priv) {
  auto* t = static_cast<HttpTransfer*>(priv);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    t->resp.headers.clear();  // an interim answer's (100 Continue) headers are not kept
    return line.size();
  }
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos && colon > 0)
    t->resp.headers.emplace_back(lower(trim(line.substr(0, colon))),
                                 std::string(trim(line.substr(colon + 1))));
  return line.size();
}

size_t on_body(char* data, size_t size, size_t n, void* priv) {
  auto* t = static_cast<HttpTransfer*>(priv);
  const size_t len = size * n;
  if (!t->routed) {
    // Headers are complete by the first body byte: only a 2xx answer goes into the caller's
    // buffer; an error document is kept as text for the client to read.
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    t->to_text = !t->req.into || status < 200 || status > 299;
    t->routed = true;
  }
  const uint64_t have = t->resp.received;
  if (t->to_text) {
    if (t->resp.text.size() + len > kMaxTextBody) {
      t->own = t->error(Errc::invalid_argument, "the answer's body is longer than " +
                                                    std::to_string(kMaxTextBody) +
                                                    " bytes, the most kept as text");
      return CURL_WRITEFUNC_ERROR;
    }
    t->resp.text.append(data, len);
  } else {
    std::span<std::byte> into = *t->req.into;
    if (len > into.size() - have) {
      t->own = t->error(Errc::invalid_argument,
                        "the answer's body is longer than the " + std::to_string(into.size()) +
                            "-byte buffer given for it (" + std::to_string(have + len) +
                            " bytes received so far)");
      return CURL_WRITEFUNC_ERROR;
    }
    std::memcpy(into.data() + have, data, len);
  }
  t->resp.received = have + len;
  return len;
}

size_t on_read(char* buf, size_t size, size_t n, void* priv) {
  auto* t = static_cast<HttpTransfer*>(priv);
  const size_t len = std::min(size * n, t->req.body.size() - t->sent);
  std::memcpy(buf, t->req.body.data() + t->sent, len);
  t->sent += len;
  return len;
}

// libcurl rewinds the body when it has to send it again. It would do so, unasked, when a
// kept-alive connection turns out closed under a request (on_prereq refuses that); a rewind
// for any other reason must still start the body where libcurl says.
int on_seek(void* priv, curl_off_t offset, int origin) {
  auto* t = static_cast<HttpTransfer*>(priv);
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > t->req.body.size())
    return CURL_SEEKFUNC_FAIL;
  t->sent = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

// Called each time libcurl is about to send the request. A second time means libcurl took a
// kept-alive connection that closed before any byte of an answer came, and would send the
// request again on a new one without telling anybody. The server may have acted on the
// first sending (completed an upload, whose repetition it may then refuse), so only the
// caller may decide about another: the transfer fails here as a connection closed
// unanswered, and the S3 client retries it as it retries any such failure, knowing that
// the request may have arrived.
int on_prereq(void* priv, char*, char*, int, int) {
  auto* t = static_cast<HttpTransfer*>(priv);
  if (++t->sends == 1) return CURL_PREREQFUNC_OK;
  t->own = t->error(Errc::io, ECONNRESET,
                    "the server closed the kept-alive connection without answering (the "
                    "request may have arrived; it is not sent again here)");
  return CURL_PREREQFUNC_ABORT;
}

bool valid_method(const std::string& m) {
  return !m.empty() && std::all_of(m.begin(), m.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

std::string body_progress(const HttpTransfer& t) {
  curl_off_t expected = -1;
  curl_easy_getinfo(t.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &expected);
  std::string s = std::to_string(t.resp.received);
  if (expected >= 0) s += " of " + std::to_string(expected);
  return s + " body bytes received";
}

// What had moved when a transfer failed: "N of M bytes sent, " for a request with a body,
// then the body received.
std::string progress(const HttpTransfer& t) {
  std::string s;
  if (!t.req.body.empty())
    s = std::to_string(t.sent) + " of " + std::to_string(t.req.body.size()) + " bytes sent, ";
  return s + body_progress(t);
}

// The one place libcurl's result codes become Errors.
Error transport_error(const HttpTransfer& t, CURLcode rc, Clock::time_point now) {
  long os_errno = 0;
  curl_easy_getinfo(t.easy, CURLINFO_OS_ERRNO, &os_errno);
  const int err = static_cast<int>(os_errno);
  const std::string detail = t.errbuf[0] != '\0' ? std::string(t.errbuf) : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      // libcurl ends a connect attempt at the connect timeout, before the deadline.
      if (now + kSlack < t.req.deadline)
        return t.error(Errc::timed_out, ETIMEDOUT,
                       "no connection within the connect timeout, " +
                           std::to_string(ms_between(t.started, now)) + " ms after it started");
      return t.error(Errc::timed_out, ETIMEDOUT,
                     "no complete answer by its deadline, " +
                         std::to_string(ms_between(t.started, now)) + " ms after it started (" +
                         progress(t) + ")");
    case CURLE_COULDNT_CONNECT:
      return t.error(Errc::io, err,
                     err != 0 ? std::string("unable to connect: ") + std::strerror(err)
                              : "unable to connect: " + detail);
    case CURLE_COULDNT_RESOLVE_HOST:
      return t.error(Errc::io, err, "unable to resolve the host: " + detail);
    case CURLE_PARTIAL_FILE:
      return t.error(Errc::io, err,
                     "truncated answer: the connection closed with " + body_progress(t));
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
      if (err == ECONNRESET || err == EPIPE)
        return t.error(Errc::io, err, "connection reset by the server (" + progress(t) + ")");
      return t.error(Errc::io, err, detail);
    case CURLE_GOT_NOTHING:
      return t.error(Errc::io, err, "the server closed the connection without answering");
    case CURLE_PEER_FAILED_VERIFICATION:
      return t.error(Errc::invalid_argument, err, "TLS certificate not trusted: " + detail);
    case CURLE_SSL_CACERT_BADFILE:
      return t.error(Errc::invalid_argument, err, "unable to load the trusted CAs: " + detail);
    case CURLE_SSL_CONNECT_ERROR:
      return t.error(Errc::io, err, "TLS handshake failed: " + detail);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return t.error(Errc::invalid_argument, err, "unusable URL: " + detail);
    default:
      return t.error(Errc::io, err, detail);
  }
}

}  // namespace

const std::string* HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k == name) return &v;
  return nullptr;
}

std::string url_for_messages(std::string_view url) {
  static constexpr std::string_view kSecret[] = {"x-amz-signature", "x-amz-credential",
                                                 "x-amz-security-token"};
  const size_t q = url.find('?');
  if (q == std::string_view::npos) return std::string(url);
  std::string out(url.substr(0, q + 1));
  std::string_view rest = url.substr(q + 1);
  for (bool first = true; !rest.empty() || first; first = false) {
    const size_t amp = rest.find('&');
    std::string_view param = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const size_t eq = param.find('=');
    const std::string name = lower(param.substr(0, eq));
    if (!first) out += '&';
    if (eq != std::string_view::npos &&
        std::find(std::begin(kSecret), std::end(kSecret), name) != std::end(kSecret))
      out += std::string(param.substr(0, eq)) + "=REDACTED";
    else
      out += param;
    if (amp == std::string_view::npos) break;
  }
  return out;
}

struct HttpSession::Impl {
  HttpOptions opts;
  std::string user_agent;
  CURLM* multi = nullptr;
  std::vector<CURL*> spare;                         // easy handles between requests
  std::vector<std::unique_ptr<HttpTransfer>> live;  // added to `multi`
  std::vector<HttpResponse> done;                   // finished before a poll() returned them
  std::atomic<bool> woken{false};
  HttpStats stats;

  ~Impl() {
    for (auto& t : live) {
      curl_multi_remove_handle(multi, t->easy);
      curl_easy_cleanup(t->easy);
    }
    for (CURL* e : spare) curl_easy_cleanup(e);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  CURLcode configure(HttpTransfer& t);
  void finish(HttpTransfer& t, Result<void> outcome);
  void collect(std::vector<HttpResponse>& out);
  void expire(std::vector<HttpResponse>& out, Clock::time_point now);
  Clock::time_point next_expiry(Clock::time_point until) const;
};

CURLcode HttpSession::Impl::configure(HttpTransfer& t) {
  CURL* e = t.easy;
  const HttpRequest& r = t.req;
  curl_slist* list = nullptr;
  // S3 answers PUT and POST directly; waiting for "100 Continue" costs a round trip.
  list = curl_slist_append(list, "Expect:");
  for (const auto& [name, value] : r.headers) {
    // libcurl drops "Name:" and sends "Name;" as an empty header.
    std::string line = value.empty() ? name + ";" : name + ": " + value;
    curl_slist* grown = curl_slist_append(list, line.c_str());
    if (grown == nullptr) {
      curl_slist_free_all(list);
      return CURLE_OUT_OF_MEMORY;
    }
    list = grown;
  }
  t.header_list.reset(list);
  if (list == nullptr) return CURLE_OUT_OF_MEMORY;

  const long budget = std::max(1L, ms_between(t.started, r.deadline));
  CURLcode rc = CURLE_OK;
  auto set = [&](CURLoption opt, auto value) {
    if (rc == CURLE_OK) rc = curl_easy_setopt(e, opt, value);
    if (rc != CURLE_OK && t.refused_option == 0) t.refused_option = static_cast<int>(opt);
  };
  set(CURLOPT_URL, r.url.c_str());
  set(CURLOPT_PRIVATE, static_cast<void*>(&t));
  set(CURLOPT_ERRORBUFFER, t.errbuf);
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  // S3 endpoints speak HTTP/1.1; parallel parts go on parallel connections, not one
  // multiplexed HTTP/2 stream window.
  set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  set(CURLOPT_HTTPHEADER, list);
  set(CURLOPT_USERAGENT, user_agent.c_str());
  set(CURLOPT_TIMEOUT_MS, budget);
  set(CURLOPT_CONNECTTIMEOUT_MS, std::min(budget, static_cast<long>(opts.connect_timeout.count())));
  set(CURLOPT_SSL_VERIFYPEER, opts.verify_tls == VerifyTls::yes ? 1L : 0L);
  set(CURLOPT_SSL_VERIFYHOST, opts.verify_tls == VerifyTls::yes ? 2L : 0L);
  if (!opts.ca_file.empty()) set(CURLOPT_CAINFO, opts.ca_file.c_str());
  set(CURLOPT_HEADERFUNCTION, on_header);
  set(CURLOPT_HEADERDATA, static_cast<void*>(&t));
  set(CURLOPT_WRITEFUNCTION, on_body);
  set(CURLOPT_WRITEDATA, static_cast<void*>(&t));
  set(CURLOPT_PREREQFUNCTION, on_prereq);
  set(CURLOPT_PREREQDATA, static_cast<void*>(&t));
  if (r.method == "HEAD") {
    set(CURLOPT_NOBODY, 1L);
  } else if (r.method == "PUT" || r.method == "POST" || !r.body.empty()) {
    set(CURLOPT_UPLOAD, 1L);
    set(CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    set(CURLOPT_READFUNCTION, on_read);
    set(CURLOPT_READDATA, static_cast<void*>(&t));
    set(CURLOPT_SEEKFUNCTION, on_seek);
    set(CURLOPT_SEEKDATA, static_cast<void*>(&t));
    if (r.method != "PUT") set(CURLOPT_CUSTOMREQUEST, r.method.c_str());
  } else if (r.method == "GET") {
    set(CURLOPT_HTTPGET, 1L);
  } else {
    set(CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  return rc;
}

void HttpSession::Impl::finish(HttpTransfer& t, Result<void> outcome) {
  if (!outcome) ++stats.failed;
  ++stats.requests;
  stats.bytes_sent += t.sent;
  stats.bytes_received += t.resp.received;
  stats.seconds += std::chrono::duration<double>(Clock::now() - t.started).count();
  if (t.easy != nullptr) {
    long status = 0, connects = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(t.easy, CURLINFO_NUM_CONNECTS, &connects);
    t.resp.status = status;
    stats.connections += static_cast<uint64_t>(connects);
  }
  t.resp.outcome = std::move(outcome);
  t.resp.tag = t.req.tag;
}

HttpSession::HttpSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpSession::HttpSession(HttpSession&&) noexcept = default;
HttpSession& HttpSession::operator=(HttpSession&&) noexcept = default;
HttpSession::~HttpSession() = default;

Result<HttpSession> HttpSession::open(HttpOptions options) {
  SB_TRY(init_curl_once());
  auto impl = std::make_unique<Impl>();
  impl->opts = std::move(options);
  impl->user_agent = impl->opts.user_agent.empty()
                         ? std::string("stripeback/") + STRIPEBACK_VERSION_STRING
                         : impl->opts.user_agent;
  impl->multi = curl_multi_init();
  if (impl->multi == nullptr) return fail(Errc::io, "unable to create a libcurl multi handle");
  if (curl_multi_setopt(impl->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                        impl->opts.max_host_connections) != CURLM_OK)
    return fail(Errc::invalid_argument, "invalid limit of connections per host " +
                                            std::to_string(impl->opts.max_host_connections));
  return HttpSession(std::move(impl));
}

void HttpSession::start(HttpRequest request) {
  Impl& m = *impl_;
  auto t = std::make_unique<HttpTransfer>();
  t->req = std::move(request);
  t->started = Clock::now();
  auto refuse = [&](Error e) {
    m.finish(*t, std::move(e));
    m.done.push_back(std::move(t->resp));
  };
  if (!valid_method(t->req.method) || t->req.url.empty())
    return refuse(t->error(Errc::invalid_argument, "not a valid HTTP method and URL"));
  if (t->req.deadline <= t->started)
    return refuse(t->error(Errc::timed_out, ETIMEDOUT, "its deadline passed before it started"));
  if (!m.spare.empty()) {
    t->easy = m.spare.back();
    m.spare.pop_back();
  } else if ((t->easy = curl_easy_init()) == nullptr) {
    return refuse(t->error(Errc::io, ENOMEM, "unable to create a libcurl handle"));
  }
  CURLcode rc = m.configure(*t);
  if (rc == CURLE_OK && curl_multi_add_handle(m.multi, t->easy) != CURLM_OK) rc = CURLE_FAILED_INIT;
  if (rc != CURLE_OK) {
    curl_easy_cleanup(t->easy);  // not pooled, as after any failure (collect())
    t->easy = nullptr;
    return refuse(t->error(Errc::invalid_argument,
                           std::string("unable to set up the transfer: ") + curl_easy_strerror(rc) +
                               " (libcurl option " + std::to_string(t->refused_option) + ")"));
  }
  m.live.push_back(std::move(t));
}

size_t HttpSession::in_flight() const { return impl_->live.size() + impl_->done.size(); }

void HttpSession::Impl::collect(std::vector<HttpResponse>& out) {
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* e = msg->easy_handle;
    const CURLcode rc = msg->data.result;
    auto it = std::find_if(live.begin(), live.end(), [e](const auto& t) { return t->easy == e; });
    if (it == live.end()) continue;
    HttpTransfer& t = **it;
    Result<void> outcome;
    if (t.own)
      outcome = *t.own;
    else if (rc != CURLE_OK)
      outcome = transport_error(t, rc, Clock::now());
    finish(t, std::move(outcome));
    const bool failed = !out.emplace_back(std::move(t.resp)).outcome;
    curl_multi_remove_handle(multi, e);
    // A handle is kept for the next request only after a success: one that failed can keep
    // state from the failure past curl_easy_reset (libcurl 7.88 refused CURLOPT_BUFFERSIZE
    // on a handle whose name resolution had failed), and failures are rare enough for a
    // fresh handle to cost nothing. Connections stay with the multi handle either way.
    if (failed) {
      curl_easy_cleanup(e);
    } else {
      curl_easy_reset(e);
      spare.push_back(e);
    }
    live.erase(it);
  }
}

void HttpSession::Impl::expire(std::vector<HttpResponse>& out, Clock::time_point now) {
  for (auto it = live.begin(); it != live.end();) {
    HttpTransfer& t = **it;
    if (now < t.req.deadline + kSlack) {
      ++it;
      continue;
    }
    finish(t, transport_error(t, CURLE_OPERATION_TIMEDOUT, now));
    out.push_back(std::move(t.resp));
    // A handle removed mid-transfer closes its connection; it is not reused.
    curl_multi_remove_handle(multi, t.easy);
    curl_easy_cleanup(t.easy);
    it = live.erase(it);
  }
}

Clock::time_point HttpSession::Impl::next_expiry(Clock::time_point until) const {
  for (const auto& t : live) until = std::min(until, t->req.deadline + kSlack);
  return until;
}

std::vector<HttpResponse> HttpSession::poll(Clock::time_point until, int wake_fd) {
  Impl& m = *impl_;
  std::vector<HttpResponse> out = std::move(m.done);
  m.done.clear();
  for (;;) {
    int running = 0;
    curl_multi_perform(m.multi, &running);
    m.collect(out);
    const auto now = Clock::now();
    m.expire(out, now);
    if (!out.empty() || m.live.empty()) return out;
    if (m.woken.exchange(false) || now >= until) return out;
    curl_waitfd extra{wake_fd, CURL_WAIT_POLLIN, 0};
    const long wait = ms_between(now, m.next_expiry(until));
    curl_multi_poll(m.multi, wake_fd >= 0 ? &extra : nullptr, wake_fd >= 0 ? 1u : 0u,
                    static_cast<int>(std::min<long>(wait, INT_MAX)), nullptr);
    if (wake_fd >= 0 && (extra.revents & CURL_WAIT_POLLIN) != 0) {
      curl_multi_perform(m.multi, &running);
      m.collect(out);
      return out;
    }
  }
}

void HttpSession::wakeup() {
  impl_->woken.store(true);
  curl_multi_wakeup(impl_->multi);
}

const HttpStats& HttpSession::stats() const { return impl_->stats; }

}  // namespace stripeback::s3
