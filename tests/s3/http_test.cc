#include "backends/s3/http.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <cstring>
#include <map>
#include <thread>

#include "tests/s3/http_test_server.h"

namespace stripeback::s3 {
namespace {

using std::chrono::milliseconds;
using test::bytes_of;
using test::HttpTestServer;
using test::pattern;
using test::Reply;

constexpr auto kPatience = std::chrono::seconds(20);

HttpSession open_session(HttpOptions o = {}) {
  auto s = HttpSession::open(std::move(o));
  if (!s) ADD_FAILURE() << s.error().what;
  return std::move(*s);
}

HttpRequest request(std::string method, std::string url) {
  HttpRequest r;
  r.method = std::move(method);
  r.url = std::move(url);
  r.deadline = Clock::now() + kPatience;
  return r;
}

// Polls until `n` responses came back (or the patience ran out), in order of completion.
std::vector<HttpResponse> wait_for(HttpSession& s, size_t n) {
  std::vector<HttpResponse> got;
  const auto until = Clock::now() + kPatience;
  while (got.size() < n && Clock::now() < until)
    for (auto& r : s.poll(until)) got.push_back(std::move(r));
  return got;
}

HttpResponse run(HttpSession& s, HttpRequest r) {
  s.start(std::move(r));
  auto got = wait_for(s, 1);
  if (got.size() != 1) {
    ADD_FAILURE() << "no response";
    return {};
  }
  return std::move(got[0]);
}

// A port nothing listens on: bound, then closed.
uint16_t closed_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

TEST(HttpSession, PutOf16MiBArrivesByteExactWithoutWaitingForContinue) {
  HttpTestServer server;
  HttpSession s = open_session();
  const std::string body = pattern(16 << 20, 1);
  HttpRequest r = request("PUT", server.url() + "/bucket/part1");
  r.body = bytes_of(body);
  r.headers = {{"Content-Type", "application/octet-stream"}, {"x-amz-meta-note", "one"}};
  HttpResponse got = run(s, std::move(r));
  ASSERT_TRUE(got.outcome) << got.outcome.error().what;
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(server.object("/bucket/part1"), body);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "PUT");
  EXPECT_EQ(reqs[0].header("content-length"), std::to_string(body.size()));
  EXPECT_EQ(reqs[0].header("expect"), "");
  EXPECT_EQ(reqs[0].header("x-amz-meta-note"), "one");
  EXPECT_EQ(reqs[0].header("user-agent").rfind("stripeback/", 0), 0u);
  EXPECT_EQ(s.stats().bytes_sent, body.size());
  EXPECT_EQ(s.stats().requests, 1u);
}

TEST(HttpSession, RangedGetReadsStraightIntoTheCallersBuffer) {
  HttpTestServer server;
  const std::string object = pattern(1 << 20, 2);
  server.put_object("/bucket/obj", object);
  HttpSession s = open_session();
  std::vector<std::byte> buf(4096);
  HttpRequest r = request("GET", server.url() + "/bucket/obj");
  r.headers = {{"Range", "bytes=1000-5095"}};
  r.into = std::span(buf);
  r.tag = 77;
  HttpResponse got = run(s, std::move(r));
  ASSERT_TRUE(got.outcome) << got.outcome.error().what;
  EXPECT_EQ(got.tag, 77u);
  EXPECT_EQ(got.status, 206);
  EXPECT_EQ(got.received, 4096u);
  EXPECT_TRUE(got.text.empty());
  ASSERT_NE(got.header("content-range"), nullptr);
  EXPECT_EQ(*got.header("content-range"), "bytes 1000-5095/1048576");
  EXPECT_EQ(std::memcmp(buf.data(), object.data() + 1000, buf.size()), 0);
}

TEST(HttpSession, HeadGivesTheContentLengthAndNoBody) {
  HttpTestServer server;
  server.put_object("/bucket/obj", pattern(12345, 3));
  HttpSession s = open_session();
  HttpResponse got = run(s, request("HEAD", server.url() + "/bucket/obj"));
  ASSERT_TRUE(got.outcome) << got.outcome.error().what;
  EXPECT_EQ(got.status, 200);
  ASSERT_NE(got.header("content-length"), nullptr);
  EXPECT_EQ(*got.header("content-length"), "12345");
  EXPECT_EQ(got.received, 0u);
  HttpResponse missing = run(s, request("HEAD", server.url() + "/bucket/none"));
  ASSERT_TRUE(missing.outcome) << missing.outcome.error().what;
  EXPECT_EQ(missing.status, 404);
}

TEST(HttpSession, EightRequestsInFlightRunAtOnceAndAllComplete) {
  HttpTestServer server;
  server.on([](const test::RecordedRequest& r) -> std::optional<Reply> {
    Reply reply;
    reply.delay = milliseconds(300);
    reply.body = "answer to " + r.target;
    return reply;
  });
  HttpSession s = open_session();
  const auto t0 = Clock::now();
  for (uint64_t i = 0; i < 8; ++i) {
    HttpRequest r = request("GET", server.url() + "/bucket/k" + std::to_string(i));
    r.tag = i;
    s.start(std::move(r));
  }
  EXPECT_EQ(s.in_flight(), 8u);
  auto got = wait_for(s, 8);
  const auto took = Clock::now() - t0;
  ASSERT_EQ(got.size(), 8u);
  std::map<uint64_t, std::string> by_tag;
  for (auto& r : got) {
    ASSERT_TRUE(r.outcome) << r.outcome.error().what;
    by_tag[r.tag] = r.text;
  }
  for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(by_tag[i], "answer to /bucket/k" + std::to_string(i));
  EXPECT_EQ(s.in_flight(), 0u);
  EXPECT_LT(took, milliseconds(8 * 300 / 2)) << "the requests did not overlap";
  EXPECT_EQ(server.connections_accepted(), 8u);
}

TEST(HttpSession, RequestsBeyondTheConnectionLimitWaitForAConnection) {
  HttpTestServer server;
  server.on([](const test::RecordedRequest&) -> std::optional<Reply> {
    Reply reply;
    reply.delay = milliseconds(100);
    reply.body = "x";
    return reply;
  });
  HttpOptions o;
  o.max_host_connections = 2;
  HttpSession s = open_session(o);
  for (int i = 0; i < 6; ++i) s.start(request("GET", server.url() + "/bucket/k"));
  auto got = wait_for(s, 6);
  ASSERT_EQ(got.size(), 6u);
  for (auto& r : got) ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(server.connections_accepted(), 2u);
}

TEST(HttpSession, PostAndDeleteAreSentWithTheirMethodsAndBodies) {
  HttpTestServer server;
  server.put_object("/bucket/k", "v");
  HttpSession s = open_session();
  const std::string xml = "<CompleteMultipartUpload></CompleteMultipartUpload>";
  HttpRequest post = request("POST", server.url() + "/bucket/k?uploadId=7");
  post.body = bytes_of(xml);
  Reply done;
  done.body = "<CompleteMultipartUploadResult/>";
  server.push(done);
  HttpResponse p = run(s, std::move(post));
  ASSERT_TRUE(p.outcome) << p.outcome.error().what;
  EXPECT_EQ(p.text, "<CompleteMultipartUploadResult/>");
  HttpResponse empty_post = run(s, request("POST", server.url() + "/bucket/k?uploads"));
  ASSERT_TRUE(empty_post.outcome) << empty_post.outcome.error().what;
  HttpResponse d = run(s, request("DELETE", server.url() + "/bucket/k"));
  ASSERT_TRUE(d.outcome) << d.outcome.error().what;
  EXPECT_EQ(d.status, 204);
  EXPECT_FALSE(server.object("/bucket/k"));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/bucket/k?uploadId=7");
  EXPECT_EQ(reqs[0].body, xml);
  EXPECT_EQ(reqs[1].method, "POST");
  EXPECT_EQ(reqs[1].header("content-length"), "0");
  EXPECT_EQ(reqs[2].method, "DELETE");
}

TEST(HttpSession, FiftySequentialRequestsReuseOneConnection) {
  HttpTestServer server;
  server.put_object("/bucket/small", "tiny");
  HttpSession s = open_session();
  for (int i = 0; i < 50; ++i) {
    HttpResponse got = run(s, request("GET", server.url() + "/bucket/small"));
    ASSERT_TRUE(got.outcome) << got.outcome.error().what;
    ASSERT_EQ(got.text, "tiny");
  }
  EXPECT_LE(server.connections_accepted(), 2u);
  EXPECT_LE(s.stats().connections, 2u);
  EXPECT_EQ(s.stats().requests, 50u);
  EXPECT_EQ(s.stats().bytes_received, 200u);
}

TEST(HttpSession, AnAnswerLaterThanTheDeadlineFailsTimedOutSoonAfterIt) {
  HttpTestServer server;
  Reply slow;
  slow.delay = milliseconds(5000);
  server.push(slow);
  HttpSession s = open_session();
  HttpRequest r = request("GET", server.url() + "/bucket/slow");
  const auto t0 = Clock::now();
  r.deadline = t0 + milliseconds(300);
  HttpResponse got = run(s, std::move(r));
  const auto took = Clock::now() - t0;
  ASSERT_FALSE(got.outcome);
  EXPECT_EQ(got.outcome.error().code, Errc::timed_out);
  EXPECT_NE(got.outcome.error().what.find("GET " + server.url() + "/bucket/slow failed"),
            std::string::npos)
      << got.outcome.error().what;
  EXPECT_NE(got.outcome.error().what.find("ms after it started"), std::string::npos)
      << got.outcome.error().what;
  EXPECT_GE(took, milliseconds(290));
  EXPECT_LT(took, milliseconds(300 + 400));
  EXPECT_EQ(s.stats().failed, 1u);
}

TEST(HttpSession, ADeadlineAlreadyPassedFailsWithoutSendingAnything) {
  HttpTestServer server;
  HttpSession s = open_session();
  HttpRequest r = request("GET", server.url() + "/bucket/late");
  r.deadline = Clock::now() - milliseconds(1);
  HttpResponse got = run(s, std::move(r));
  ASSERT_FALSE(got.outcome);
  EXPECT_EQ(got.outcome.error().code, Errc::timed_out);
  EXPECT_TRUE(server.requests().empty());
}

TEST(HttpSession, AConnectionResetMidBodyFailsNamingTheReset) {
  HttpTestServer server;
  Reply r;
  r.body = pattern(200000, 4);
  r.reset_after = 1000;
  server.push(r);
  HttpSession s = open_session();
  HttpResponse got = run(s, request("GET", server.url() + "/bucket/reset"));
  ASSERT_FALSE(got.outcome);
  const Error& e = got.outcome.error();
  EXPECT_EQ(e.code, Errc::io);
  EXPECT_NE(e.what.find("GET " + server.url() + "/bucket/reset failed: "), std::string::npos)
      << e.what;
  EXPECT_NE(e.what.find("reset"), std::string::npos) << e.what;
}

// A kept-alive connection that closes under a request before any byte of an answer came:
// the server may have acted on the request, so the session does not send it again on a new
// connection (libcurl would, unasked); it fails, for the caller to decide.
TEST(HttpSession, ARequestWhoseKeptAliveConnectionClosesUnansweredIsNotSentAgain) {
  HttpTestServer server;
  server.put_object("/bucket/a", "first");
  HttpSession s = open_session();
  HttpResponse first = run(s, request("GET", server.url() + "/bucket/a"));
  ASSERT_TRUE(first.outcome) << first.outcome.error().what;
  Reply gone;
  gone.reset_unanswered = true;
  server.push(gone);
  const std::string body = pattern(100000, 6);
  HttpRequest put = request("PUT", server.url() + "/bucket/b");
  put.body = bytes_of(body);
  HttpResponse got = run(s, std::move(put));
  ASSERT_FALSE(got.outcome) << "status " << got.status;
  EXPECT_EQ(got.outcome.error().code, Errc::io);
  EXPECT_NE(got.outcome.error().what.find("PUT " + server.url() + "/bucket/b failed: "),
            std::string::npos)
      << got.outcome.error().what;
  EXPECT_NE(got.outcome.error().what.find("closed the kept-alive connection without answering"),
            std::string::npos)
      << got.outcome.error().what;
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(server.object("/bucket/b"), std::nullopt);
  EXPECT_EQ(s.stats().requests, 2u);
  EXPECT_EQ(s.stats().failed, 1u);

  // The session goes on, on a new connection.
  HttpResponse again = run(s, request("GET", server.url() + "/bucket/a"));
  ASSERT_TRUE(again.outcome) << again.outcome.error().what;
  EXPECT_EQ(again.text, "first");
}

TEST(HttpSession, ABodyShorterThanItsContentLengthFailsSayingExpectedAndReceived) {
  HttpTestServer server;
  Reply r;
  r.body = pattern(100000, 5);
  r.truncate_to = 1000;
  server.push(r);
  HttpSession s = open_session();
  std::vector<std::byte> buf(100000);
  HttpRequest req = request("GET", server.url() + "/bucket/short");
  req.into = std::span(buf);
  HttpResponse got = run(s, std::move(req));
  ASSERT_FALSE(got.outcome);
  const Error& e = got.outcome.error();
  EXPECT_EQ(e.code, Errc::io);
  EXPECT_NE(e.what.find("truncated"), std::string::npos) << e.what;
  EXPECT_NE(e.what.find("1000 of 100000 body bytes"), std::string::npos) << e.what;
}

TEST(HttpSession, ServiceUnavailableIsReturnedAsAnAnswerWithItsErrorDocument) {
  HttpTestServer server;
  const std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
      "<Message>Please reduce your request rate.</Message></Error>";
  Reply r;
  r.status = 503;
  r.headers = {{"Content-Type", "application/xml"}, {"Retry-After", "1"}};
  r.body = xml;
  server.push(r);
  HttpSession s = open_session();
  std::vector<std::byte> buf(4096, std::byte{0x55});
  HttpRequest req = request("GET", server.url() + "/bucket/busy");
  req.into = std::span(buf);
  HttpResponse got = run(s, std::move(req));
  ASSERT_TRUE(got.outcome) << got.outcome.error().what;
  EXPECT_EQ(got.status, 503);
  EXPECT_EQ(got.text, xml);
  ASSERT_NE(got.header("retry-after"), nullptr);
  EXPECT_EQ(*got.header("retry-after"), "1");
  EXPECT_EQ(buf[0], std::byte{0x55}) << "an error document was written into the data buffer";
  EXPECT_EQ(server.requests().size(), 1u) << "the transfer layer retried";
}

TEST(HttpSession, ABodyLargerThanTheCallersBufferFailsAndTheSessionGoesOn) {
  HttpTestServer server;
  server.put_object("/bucket/big", pattern(300000, 6));
  server.put_object("/bucket/small", "ok");
  HttpSession s = open_session();
  std::vector<std::byte> buf(1000);
  HttpRequest req = request("GET", server.url() + "/bucket/big");
  req.into = std::span(buf);
  HttpResponse got = run(s, std::move(req));
  ASSERT_FALSE(got.outcome);
  EXPECT_EQ(got.outcome.error().code, Errc::invalid_argument);
  EXPECT_NE(got.outcome.error().what.find("longer than the 1000-byte buffer"), std::string::npos)
      << got.outcome.error().what;
  HttpResponse next = run(s, request("GET", server.url() + "/bucket/small"));
  ASSERT_TRUE(next.outcome) << next.outcome.error().what;
  EXPECT_EQ(next.text, "ok");
}

TEST(HttpSession, ARefusedConnectionFailsNamingTheCauseAndNoCredentials) {
  HttpSession s = open_session();
  const std::string base = "http://127.0.0.1:" + std::to_string(closed_port()) + "/bucket/k";
  HttpRequest req =
      request("PUT", base + "?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature=feedbeef&partNumber=1");
  req.headers = {{"Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE, Signature=feedbeef"}};
  HttpResponse got = run(s, std::move(req));
  ASSERT_FALSE(got.outcome);
  const Error& e = got.outcome.error();
  EXPECT_EQ(e.code, Errc::io);
  EXPECT_NE(e.what.find("PUT " + base +
                        "?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&partNumber=1 failed: "
                        "unable to connect"),
            std::string::npos)
      << e.what;
  EXPECT_NE(e.what.find("refused"), std::string::npos) << e.what;
  EXPECT_EQ(e.what.find("AKIDEXAMPLE"), std::string::npos) << e.what;
  EXPECT_EQ(e.what.find("feedbeef"), std::string::npos) << e.what;
}

TEST(HttpSession, PollReturnsEarlyWhenTheWakeDescriptorBecomesReadable) {
  HttpTestServer server;
  Reply slow;
  slow.delay = milliseconds(3000);
  server.push(slow);
  HttpSession s = open_session();
  s.start(request("GET", server.url() + "/bucket/slow"));
  const int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  std::thread other([efd] {
    std::this_thread::sleep_for(milliseconds(100));
    const uint64_t one = 1;
    EXPECT_EQ(::write(efd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  });
  const auto t0 = Clock::now();
  auto got = s.poll(t0 + std::chrono::seconds(10), efd);
  const auto took = Clock::now() - t0;
  other.join();
  ::close(efd);
  EXPECT_TRUE(got.empty());
  EXPECT_GE(took, milliseconds(90));
  EXPECT_LT(took, milliseconds(1500));
  EXPECT_EQ(s.in_flight(), 1u);
}

TEST(HttpSession, WakeupFromAnotherThreadEndsAPoll) {
  HttpTestServer server;
  Reply slow;
  slow.delay = milliseconds(3000);
  server.push(slow);
  HttpSession s = open_session();
  s.start(request("GET", server.url() + "/bucket/slow"));
  std::thread other([&s] {
    std::this_thread::sleep_for(milliseconds(100));
    s.wakeup();
  });
  const auto t0 = Clock::now();
  auto got = s.poll(t0 + std::chrono::seconds(10));
  const auto took = Clock::now() - t0;
  other.join();
  EXPECT_TRUE(got.empty());
  EXPECT_LT(took, milliseconds(1500));
}

TEST(HttpSession, AThousandSmallGetsEightInFlightAllSucceed) {
  HttpTestServer server;
  server.record_bodies(false);
  for (int i = 0; i < 8; ++i)
    server.put_object("/bucket/s" + std::to_string(i), pattern(512, 10 + i));
  HttpSession s = open_session();
  constexpr uint64_t kTotal = 1000;
  uint64_t started = 0, good = 0;
  std::vector<std::vector<std::byte>> bufs(8, std::vector<std::byte>(512));
  auto start_next = [&](size_t slot) {
    HttpRequest r = request("GET", server.url() + "/bucket/s" + std::to_string(slot));
    r.into = std::span(bufs[slot]);
    r.tag = slot;
    s.start(std::move(r));
    ++started;
  };
  for (size_t slot = 0; slot < 8; ++slot) start_next(slot);
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (s.in_flight() > 0 && Clock::now() < until) {
    for (auto& r : s.poll(until)) {
      ASSERT_TRUE(r.outcome) << r.outcome.error().what;
      ASSERT_EQ(r.received, 512u);
      const std::string want = pattern(512, static_cast<uint32_t>(10 + r.tag));
      ASSERT_EQ(std::memcmp(bufs[r.tag].data(), want.data(), 512), 0);
      ++good;
      if (started < kTotal) start_next(r.tag);
    }
  }
  EXPECT_EQ(good, kTotal);
  EXPECT_LE(server.connections_accepted(), 8u);
  EXPECT_EQ(s.stats().requests, kTotal);
}

TEST(HttpSession, DestroyingASessionWithTransfersInFlightAbandonsThem) {
  HttpTestServer server;
  server.on([](const test::RecordedRequest&) -> std::optional<Reply> {
    Reply r;
    r.delay = milliseconds(2000);
    return r;
  });
  const std::string body = pattern(1 << 20, 7);
  {
    HttpSession s = open_session();
    for (int i = 0; i < 4; ++i) {
      HttpRequest r = request("PUT", server.url() + "/bucket/p" + std::to_string(i));
      r.body = bytes_of(body);
      s.start(std::move(r));
    }
    s.poll(Clock::now() + milliseconds(100));
    EXPECT_EQ(s.in_flight(), 4u);
  }
}

// Regression: the libcurl handle of a request whose host name did not resolve was pooled and
// refused an option when set up for the next request, which then failed without being sent.
TEST(HttpSession, ARequestAfterAFailedNameResolutionIsSent) {
  HttpTestServer server;
  server.put_object("/bucket/k", "after");
  HttpSession s = open_session();
  HttpRequest bad = request("GET", "http://no-such-host.invalid/bucket/k");
  bad.deadline = Clock::now() + std::chrono::seconds(3);  // no DNS here: a timeout is fine too
  HttpResponse failed = run(s, std::move(bad));
  ASSERT_FALSE(failed.outcome);
  for (int i = 0; i < 3; ++i) {
    HttpResponse got = run(s, request("GET", server.url() + "/bucket/k"));
    ASSERT_TRUE(got.outcome) << got.outcome.error().what;
    EXPECT_EQ(got.text, "after");
  }
}

TEST(HttpSession, AnInvalidMethodComesBackFailedFromPoll) {
  HttpSession s = open_session();
  HttpResponse got = run(s, request("get me", "http://127.0.0.1:1/x"));
  ASSERT_FALSE(got.outcome);
  EXPECT_EQ(got.outcome.error().code, Errc::invalid_argument);
}

TEST(HttpUrl, CredentialsInTheQueryAreRedactedForMessages) {
  EXPECT_EQ(url_for_messages("https://h/b/k"), "https://h/b/k");
  EXPECT_EQ(url_for_messages("https://h/b/k?uploads"), "https://h/b/k?uploads");
  EXPECT_EQ(url_for_messages("https://h/b/k?x-amz-signature=abc&partNumber=2"),
            "https://h/b/k?x-amz-signature=REDACTED&partNumber=2");
  EXPECT_EQ(url_for_messages("https://h/b?a=1&X-Amz-Security-Token=t&b"),
            "https://h/b?a=1&X-Amz-Security-Token=REDACTED&b");
}

}  // namespace
}  // namespace stripeback::s3
