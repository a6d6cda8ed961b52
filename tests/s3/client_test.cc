// The S3 client against the scriptable HTTP test server: what each request carries (the
// signature, the integrity headers, the encoded key), which answers are retried and which
// are not, what a failure says, and the rules that keep multipart completion and deletion
// honest when answers are lost.
#include "backends/s3/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <thread>

#include "backends/s3/hashes.h"
#include "tests/s3/http_test_server.h"

namespace stripeback::s3 {
namespace {

using std::chrono::milliseconds;
using test::bytes_of;
using test::HttpTestServer;
using test::pattern;
using test::RecordedRequest;
using test::Reply;

std::string kCompletedBody() {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult>"
         "<Location>http://gw/bucket/big</Location><Bucket>bucket</Bucket><Key>big</Key>"
         "<ETag></ETag></CompleteMultipartUploadResult>";
}

constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c - 'a' + 10;
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The Authorization header of the request as the server received it, signed anew with the
// client's keys at the time its x-amz-date names: what the client must have sent.
std::string authorization_for(const RecordedRequest& q) {
  Request r;
  r.method = q.method;
  r.host = q.header("host");
  const size_t mark = q.target.find('?');
  r.path = q.target.substr(0, mark);
  std::string_view query =
      mark == std::string::npos ? std::string_view() : std::string_view(q.target).substr(mark + 1);
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    const size_t eq = pair.find('=');
    r.query.emplace_back(percent_decoded(pair.substr(0, eq)),
                         eq == std::string_view::npos ? "" : percent_decoded(pair.substr(eq + 1)));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
  }
  const std::string auth = q.header("authorization");
  const size_t from = auth.find("SignedHeaders=") + 14;
  std::string_view names = std::string_view(auth).substr(from, auth.find(',', from) - from);
  while (!names.empty()) {
    const std::string name(names.substr(0, names.find(';')));
    names.remove_prefix(std::min(names.size(), name.size() + 1));
    if (name != "host" && name != "x-amz-date" && name != "x-amz-content-sha256")
      r.headers.push_back({name, q.header(name)});
  }
  r.payload_hash = q.header("x-amz-content-sha256");
  const std::string d = q.header("x-amz-date");  // 20240101T120000Z
  auto when = parse_iso8601(d.substr(0, 4) + "-" + d.substr(4, 2) + "-" + d.substr(6, 5) + ":" +
                            d.substr(11, 2) + ":" + d.substr(13));
  if (!when) return "unreadable x-amz-date '" + d + "'";
  auto s = sign(r, {"AKIDTESTCLIENT", kSecret, ""}, {"us-east-1"}, *when);
  if (!s) return s.error().what;
  for (const Header& h : s->headers)
    if (h.name == "Authorization" || h.name == "authorization") return h.value;
  return "no Authorization header from sign()";
}

S3Config config_for(const HttpTestServer& server) {
  S3Config c;
  c.endpoint = *parse_endpoint(server.url());
  c.region = "us-east-1";
  c.credentials = {"AKIDTESTCLIENT", kSecret, ""};
  c.attempt_timeout = std::chrono::seconds(10);
  c.backoff_first = milliseconds(1);
  c.backoff_cap = milliseconds(20);
  return c;
}

S3Client open_client(S3Config c) {
  auto client = S3Client::open(std::move(c));
  if (!client) ADD_FAILURE() << client.error().what;
  return std::move(*client);
}

Reply error_reply(int status, const std::string& code, const std::string& message = "") {
  Reply r;
  r.status = status;
  r.headers = {{"Content-Type", "application/xml"}};
  r.body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code + "</Code><Message>" +
           message + "</Message><RequestId>tx0001</RequestId></Error>";
  return r;
}

// The connection is reset once the answer's head is sent: the request arrived, its answer
// is lost.
Reply reset_reply() {
  Reply r;
  r.body = kCompletedBody();
  r.reset_after = 0;
  return r;
}

Reply ok_reply(std::string body) {
  Reply r;
  r.body = std::move(body);
  return r;
}

S3Op put(const std::string& key, const std::string& body) {
  S3Op op;
  op.kind = S3OpKind::put_object;
  op.bucket = "bucket";
  op.key = key;
  op.body = bytes_of(body);
  return op;
}

S3Op complete(std::optional<uint64_t> expected_size) {
  S3Op op;
  op.kind = S3OpKind::complete_multipart_upload;
  op.bucket = "bucket";
  op.key = "big";
  op.upload_id = "UP1";
  op.parts = {{1, "\"e1\"", ""}, {2, "\"e2\"", ""}};
  op.expected_size = expected_size;
  return op;
}

TEST(S3ClientUrl, PathStyleKeepsTheBucketInThePathAndEncodesTheKeyOnce) {
  S3Config c;
  c.endpoint = *parse_endpoint("http://127.0.0.1:9000");
  c.addressing = Addressing::path;
  RequestTarget t = target_of(c, "bucket", "dir/a b+c/\xc3\xa9t\xc3\xa9~.sbp", {});
  EXPECT_EQ(t.host, "127.0.0.1:9000");
  EXPECT_EQ(t.path, "/bucket/dir/a%20b%2Bc/%C3%A9t%C3%A9~.sbp");
  EXPECT_EQ(t.url, "http://127.0.0.1:9000/bucket/dir/a%20b%2Bc/%C3%A9t%C3%A9~.sbp");
  t = target_of(c, "bucket", "k%20", {{"partNumber", "3"}, {"uploadId", "a/b+c"}});
  EXPECT_EQ(t.url, "http://127.0.0.1:9000/bucket/k%2520?partNumber=3&uploadId=a%2Fb%2Bc");
  t = target_of(c, "bucket", "", {{"list-type", "2"}, {"prefix", "db/"}});
  EXPECT_EQ(t.path, "/bucket");
  EXPECT_EQ(t.url, "http://127.0.0.1:9000/bucket?list-type=2&prefix=db%2F");
}

TEST(S3ClientUrl, HostStylePutsTheBucketInTheHostName) {
  S3Config c;
  c.endpoint = *parse_endpoint("https://s3.eu-west-1.amazonaws.com");
  c.addressing = Addressing::host;
  RequestTarget t = target_of(c, "backups", "db/a b+c.sbp", {});
  EXPECT_EQ(t.host, "backups.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(t.path, "/db/a%20b%2Bc.sbp");
  EXPECT_EQ(t.url, "https://backups.s3.eu-west-1.amazonaws.com/db/a%20b%2Bc.sbp");
  t = target_of(c, "backups", "", {{"uploads", ""}});
  EXPECT_EQ(t.path, "/");
  EXPECT_EQ(t.url, "https://backups.s3.eu-west-1.amazonaws.com/?uploads=");
}

TEST(S3Client, EveryRequestIsSignedWithAWellFormedAuthorizationHeader) {
  HttpTestServer server;
  S3Client client = open_client(config_for(server));
  const std::string body = "small object";
  S3Result r = client.run(put("dir/a b+\xc3\xa9.txt", body));
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(r.size, body.size());
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].target, "/bucket/dir/a%20b%2B%C3%A9.txt");
  EXPECT_EQ(server.object("/bucket/dir/a%20b%2B%C3%A9.txt"), body);
  const std::string auth = reqs[0].header("authorization");
  const std::regex form(
      "AWS4-HMAC-SHA256 Credential=AKIDTESTCLIENT/[0-9]{8}/us-east-1/s3/aws4_request, "
      "SignedHeaders=([a-z0-9-]+;)*host(;[a-z0-9-]+)*, Signature=[0-9a-f]{64}");
  EXPECT_TRUE(std::regex_match(auth, form)) << auth;
  for (const char* signed_name : {"content-md5", "x-amz-content-sha256", "x-amz-date"})
    EXPECT_NE(auth.find(signed_name), std::string::npos) << signed_name << " not signed: " << auth;
  EXPECT_EQ(reqs[0].header("x-amz-content-sha256"), *sha256_hex(std::string_view(body)));
  EXPECT_EQ(reqs[0].header("content-md5"), *md5_base64(std::string_view(body)));
  for (const auto& [name, value] : reqs[0].headers)
    EXPECT_EQ(value.find(kSecret), std::string::npos) << name;

  // The signature itself, over paths, queries and headers of several kinds of request.
  S3Op list;
  list.kind = S3OpKind::list_objects_v2;
  list.bucket = "bucket";
  list.prefix = "a b/+\xc3\xa9";
  list.continuation_token = "1ue/Gc+x=";
  (void)client.run(list);
  S3Op del;
  del.kind = S3OpKind::delete_objects;
  del.bucket = "bucket";
  del.keys = {"x y", "z"};
  (void)client.run(del);
  S3Op create;
  create.kind = S3OpKind::create_multipart_upload;
  create.bucket = "bucket";
  create.key = "big object";
  create.lock = ObjectLock{RetentionMode::governance, TimePoint(std::chrono::seconds(2000000000))};
  (void)client.run(create);
  reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (const RecordedRequest& q : reqs)
    EXPECT_EQ(q.header("authorization"), authorization_for(q)) << q.method << " " << q.target;
  EXPECT_EQ(reqs[3].header("content-md5"), "1B2M2Y8AsgTpgAmY7PhCfg==");  // MD5 of nothing
}

TEST(S3Client, APutIsRetriedAfterSlowDownAndAfterAResetAndSendsTheSameBodyEachTime) {
  HttpTestServer server;
  server.push(error_reply(503, "SlowDown", "Please reduce your request rate."));
  server.push(reset_reply());
  S3Client client = open_client(config_for(server));
  const std::string body = pattern(300000, 1);  // past the hashed size: UNSIGNED-PAYLOAD
  S3Result r = client.run(put("obj", body));
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.attempts, 3u);
  EXPECT_EQ(server.object("/bucket/obj"), body);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const RecordedRequest& q : reqs) {
    EXPECT_EQ(q.body, body);
    EXPECT_EQ(q.header("content-md5"), *md5_base64(std::string_view(body)));
    EXPECT_EQ(q.header("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  }
  EXPECT_EQ(client.stats().retries, 2u);
  EXPECT_EQ(client.stats().requests, 3u);
  EXPECT_EQ(client.stats().operations, 1u);
  EXPECT_EQ(client.in_flight(), 0u);
}

TEST(S3Client, A403IsNotRetriedAndTheFailureNamesTheStatusTheCodeAndTheObject) {
  HttpTestServer server;
  server.push(error_reply(403, "AccessDenied", "Access Denied"));
  S3Client client = open_client(config_for(server));
  S3Result r = client.run(put("db/obj", "x"));
  ASSERT_FALSE(r.outcome);
  const Error& e = r.outcome.error();
  EXPECT_EQ(e.code, Errc::invalid_argument);
  EXPECT_EQ(r.http_status, 403);
  EXPECT_EQ(r.s3_code, "AccessDenied");
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_NE(e.what.find("PutObject 'bucket/db/obj': AccessDenied (HTTP 403): Access Denied"),
            std::string::npos)
      << e.what;
  EXPECT_NE(e.what.find("(1 attempt)"), std::string::npos) << e.what;
  EXPECT_EQ(e.what.find(kSecret), std::string::npos);
  EXPECT_EQ(e.what.find("AKIDTESTCLIENT"), std::string::npos);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(S3Client, AGetCutShortIsRetriedAndTheCallersBufferEndsUpRight) {
  HttpTestServer server;
  const std::string object = pattern(1 << 20, 2);
  server.put_object("/bucket/obj", object);
  Reply cut;
  cut.status = 206;
  cut.body = object.substr(4096, 65536);
  cut.truncate_to = 1000;
  server.push(cut);
  S3Client client = open_client(config_for(server));
  std::vector<std::byte> buf(65536, std::byte{0x55});
  S3Op op;
  op.kind = S3OpKind::get_object;
  op.bucket = "bucket";
  op.key = "obj";
  op.into = std::span(buf);
  op.offset = 4096;
  op.length = buf.size();
  op.tag = 9;
  S3Result r = client.run(op);
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.tag, 9u);
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_EQ(r.size, buf.size());
  EXPECT_EQ(std::memcmp(buf.data(), object.data() + 4096, buf.size()), 0);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[1].header("range"), "bytes=4096-69631");
}

TEST(S3Client, ThrottlingAndRequestTimeoutAreRetriedWhateverTheirStatus) {
  HttpTestServer server;
  server.push(error_reply(429, "TooManyRequests"));
  server.push(error_reply(400, "RequestTimeout", "Your socket connection was not read from."));
  server.push(error_reply(502, "BadGateway"));
  server.push(error_reply(504, "GatewayTimeout"));
  server.push(error_reply(500, "InternalError"));
  server.push(error_reply(403, "ServiceUnavailable"));
  S3Client client = open_client(config_for(server));
  S3Result r = client.run(put("obj", "data"));
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.attempts, 7u);
  EXPECT_EQ(server.object("/bucket/obj"), "data");
  // Any other 4xx is final.
  server.push(error_reply(400, "InvalidArgument"));
  r = client.run(put("obj", "data"));
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.attempts, 1u);
  server.push(error_reply(404, "NoSuchBucket"));
  r = client.run(put("obj", "data"));
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.outcome.error().code, Errc::not_found);
  EXPECT_EQ(r.attempts, 1u);
}

TEST(S3Client, ARetriedAbortAnsweredNoSuchUploadIsDone) {
  HttpTestServer server;
  server.push(reset_reply());
  server.push(error_reply(404, "NoSuchUpload"));
  S3Client client = open_client(config_for(server));
  S3Op op;
  op.kind = S3OpKind::abort_multipart_upload;
  op.bucket = "bucket";
  op.key = "big";
  op.upload_id = "UP1";
  S3Result r = client.run(op);
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.attempts, 2u);
  server.push(error_reply(404, "NoSuchUpload"));  // at the first attempt: a real failure
  r = client.run(op);
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.outcome.error().code, Errc::not_found);
}

TEST(S3Client, WhenTheAttemptsRunOutTheFailureSaysHowMany) {
  HttpTestServer server;
  server.on([](const RecordedRequest&) -> std::optional<Reply> {
    return error_reply(503, "SlowDown", "Please reduce your request rate.");
  });
  S3Config c = config_for(server);
  c.attempts = 4;
  S3Client client = open_client(c);
  S3Result r = client.run(put("obj", "data"));
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.outcome.error().code, Errc::busy);
  EXPECT_EQ(r.attempts, 4u);
  EXPECT_NE(r.outcome.error().what.find("SlowDown (HTTP 503)"), std::string::npos)
      << r.outcome.error().what;
  EXPECT_NE(r.outcome.error().what.find("(4 attempts, the most allowed)"), std::string::npos)
      << r.outcome.error().what;
  EXPECT_EQ(server.requests().size(), 4u);
  EXPECT_EQ(client.stats().failed, 1u);
}

TEST(S3Client, EachAttemptHasItsOwnDeadline) {
  HttpTestServer server;
  Reply slow;
  slow.delay = milliseconds(3000);
  server.push(slow);  // the first attempt's answer comes too late; the second is served
  S3Config c = config_for(server);
  c.attempt_timeout = milliseconds(300);
  S3Client client = open_client(c);
  const auto t0 = Clock::now();
  S3Result r = client.run(put("obj", "data"));
  const auto took = Clock::now() - t0;
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.attempts, 2u);
  EXPECT_GE(took, milliseconds(290));
  EXPECT_LT(took, milliseconds(2000));

  server.on([](const RecordedRequest&) -> std::optional<Reply> {
    Reply late;
    late.delay = milliseconds(3000);
    return late;
  });
  c.attempts = 2;
  S3Client patient = open_client(c);
  const auto t1 = Clock::now();
  r = patient.run(put("obj", "data"));
  const auto gave_up = Clock::now() - t1;
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.outcome.error().code, Errc::timed_out);
  EXPECT_NE(r.outcome.error().what.find("(2 attempts, the most allowed)"), std::string::npos)
      << r.outcome.error().what;
  EXPECT_GE(gave_up, milliseconds(2 * 290));
  EXPECT_LT(gave_up, milliseconds(2500));
}

TEST(S3Client, ACompletionAnsweredWithAnErrorInsideA200IsAFailure) {
  HttpTestServer server;
  server.push(
      ok_reply("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\n  <Error><Code>AccessDenied"
               "</Code><Message>Access Denied</Message></Error>"));
  S3Client client = open_client(config_for(server));
  S3Result r = client.run(complete(std::nullopt));
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.s3_code, "AccessDenied");
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_NE(r.outcome.error().what.find("CompleteMultipartUpload 'bucket/big'"), std::string::npos)
      << r.outcome.error().what;
  EXPECT_NE(r.outcome.error().what.find("AccessDenied"), std::string::npos);

  // An InternalError inside the 200 is retried, as S3 asks.
  server.push(ok_reply("<Error><Code>InternalError</Code><Message>try again</Message></Error>"));
  server.push(ok_reply(kCompletedBody()));
  r = client.run(complete(std::nullopt));
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.attempts, 2u);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[2].target, "/bucket/big?uploadId=UP1");
  EXPECT_NE(reqs[2].body.find("<PartNumber>2</PartNumber>"), std::string::npos) << reqs[2].body;
  EXPECT_EQ(reqs[2].header("content-md5"), *md5_base64(std::string_view(reqs[2].body)));
}

TEST(S3Client, ARetriedCompletionAnsweredNoSuchUploadSucceedsIfHeadShowsTheExpectedSize) {
  HttpTestServer server;
  server.put_object("/bucket/big", pattern(12345, 3));  // what the lost completion made
  server.push(reset_reply());
  server.push(error_reply(404, "NoSuchUpload", "The specified upload does not exist."));
  S3Client client = open_client(config_for(server));
  S3Result r = client.run(complete(12345));
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_TRUE(r.confirmed_by_head);
  EXPECT_EQ(r.size, 12345u);
  EXPECT_EQ(r.attempts, 3u);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[2].method, "HEAD");
  EXPECT_EQ(reqs[2].target, "/bucket/big");
  EXPECT_FALSE(reqs[2].header("authorization").empty());
}

// The completion goes out on a connection kept alive from an earlier request, and that
// connection closes before any answer (the store completed the upload): the retry, answered
// NoSuchUpload, is confirmed by HEAD, and the retry is counted.
TEST(S3Client, ACompletionLostOnAKeptAliveConnectionIsConfirmedByHead) {
  HttpTestServer server;
  server.put_object("/bucket/big", pattern(12345, 3));  // what the lost completion made
  S3Client client = open_client(config_for(server));
  S3Op head;
  head.kind = S3OpKind::head_object;
  head.bucket = "bucket";
  head.key = "big";
  ASSERT_TRUE(client.run(head).outcome);  // the connection the completion will find
  Reply gone;
  gone.reset_unanswered = true;
  server.push(gone);
  server.push(error_reply(404, "NoSuchUpload", "The specified upload does not exist."));
  S3Result r = client.run(complete(12345));
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_TRUE(r.confirmed_by_head);
  EXPECT_EQ(r.attempts, 3u);
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[1].method, "POST");
  EXPECT_EQ(reqs[2].method, "POST");
  EXPECT_EQ(reqs[3].method, "HEAD");
  EXPECT_EQ(client.stats().retries, 2u);
  EXPECT_EQ(client.stats().requests, 4u);
}

TEST(S3Client, ARetriedCompletionAnsweredNoSuchUploadFailsIfHeadShowsAnotherSize) {
  HttpTestServer server;
  server.put_object("/bucket/big", pattern(999, 3));  // an older object under the key
  server.push(reset_reply());
  server.push(error_reply(404, "NoSuchUpload"));
  S3Client client = open_client(config_for(server));
  S3Result r = client.run(complete(12345));
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.outcome.error().code, Errc::corrupt);
  EXPECT_NE(r.outcome.error().what.find("has 999 bytes, not the 12345 expected"), std::string::npos)
      << r.outcome.error().what;

  // Nothing under the key at all; and a first attempt answered NoSuchUpload is not checked.
  HttpTestServer empty;
  empty.push(reset_reply());
  empty.push(error_reply(404, "NoSuchUpload"));
  S3Client other = open_client(config_for(empty));
  r = other.run(complete(12345));
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.outcome.error().code, Errc::not_found);
  EXPECT_NE(r.outcome.error().what.find("does not exist"), std::string::npos);
  empty.push(error_reply(404, "NoSuchUpload"));
  r = other.run(complete(12345));
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(r.s3_code, "NoSuchUpload");
}

TEST(S3Client, DeleteObjectsReportsTheKeysS3DidNotDelete) {
  HttpTestServer server;
  server.push(ok_reply(
      "<DeleteResult><Error><Key>db/locked</Key><Code>AccessDenied</Code><Message>object is "
      "locked</Message></Error></DeleteResult>"));
  S3Client client = open_client(config_for(server));
  S3Op op;
  op.kind = S3OpKind::delete_objects;
  op.bucket = "bucket";
  op.keys = {"db/a", "db/locked", "db/b"};
  S3Result r = client.run(op);
  ASSERT_FALSE(r.outcome);
  ASSERT_EQ(r.deleted.failed.size(), 1u);
  EXPECT_EQ(r.deleted.failed[0].key, "db/locked");
  EXPECT_NE(r.outcome.error().what.find("DeleteObjects 'bucket': 1 of 3 keys not deleted: "
                                        "'db/locked': AccessDenied (object is locked)"),
            std::string::npos)
      << r.outcome.error().what;
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].target, "/bucket?delete=");
  EXPECT_EQ(reqs[0].header("content-md5"), *md5_base64(std::string_view(reqs[0].body)));
  EXPECT_NE(reqs[0].body.find("<Key>db/locked</Key>"), std::string::npos);
}

TEST(S3Client, AListingIsPagedByTheCallerWithTheContinuationToken) {
  HttpTestServer server;
  server.on([](const RecordedRequest& q) -> std::optional<Reply> {
    if (q.target.find("list-type=2") == std::string::npos) return std::nullopt;
    const bool second = q.target.find("continuation-token=t%2F1%2B%3D") != std::string::npos;
    std::string body = "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>" +
                       std::string(second ? "false" : "true") + "</IsTruncated>";
    body += second ? "<Contents><Key>db/c</Key><Size>3</Size>"
                     "<LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>"
                   : "<Contents><Key>db/a%20b</Key><Size>1</Size>"
                     "<LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents>"
                     "<NextContinuationToken>t/1+=</NextContinuationToken>";
    return ok_reply(body + "</ListBucketResult>");
  });
  S3Client client = open_client(config_for(server));
  S3Op op;
  op.kind = S3OpKind::list_objects_v2;
  op.bucket = "bucket";
  op.prefix = "db/";
  op.max_keys = 1;
  std::vector<std::string> keys;
  for (int page = 0; page < 5; ++page) {
    S3Result r = client.run(op);
    ASSERT_TRUE(r.outcome) << r.outcome.error().what;
    for (const ObjectEntry& e : r.listing.objects) keys.push_back(e.key);
    if (!r.listing.truncated) break;
    op.continuation_token = r.listing.next_continuation_token;
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"db/a b", "db/c"}));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].target, "/bucket?encoding-type=url&list-type=2&max-keys=1&prefix=db%2F");
}

TEST(S3Client, ObjectLockHeadersAlwaysComeWithContentMd5) {
  HttpTestServer server;
  S3Config c = config_for(server);
  c.checksum = ChecksumKind::crc32c;
  c.storage_class = "STANDARD_IA";
  S3Client client = open_client(c);
  const std::string body = "locked";
  S3Op op = put("locked", body);
  op.lock = ObjectLock{RetentionMode::compliance, TimePoint(std::chrono::seconds(1767225600))};
  ASSERT_TRUE(client.run(op).outcome);
  const std::string part = pattern(100000, 4);
  S3Op up;
  up.kind = S3OpKind::upload_part;
  up.bucket = "bucket";
  up.key = "big";
  up.upload_id = "UP1";
  up.part_number = 7;
  up.body = bytes_of(part);
  S3Result r = client.run(up);
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.etag, "\"100000\"");
  EXPECT_EQ(r.checksum_crc32c, crc32c_base64(bytes_of(part)));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].header("x-amz-object-lock-mode"), "COMPLIANCE");
  EXPECT_EQ(reqs[0].header("x-amz-object-lock-retain-until-date"), "2026-01-01T00:00:00Z");
  EXPECT_EQ(reqs[0].header("x-amz-storage-class"), "STANDARD_IA");
  EXPECT_EQ(reqs[0].header("content-md5"), *md5_base64(std::string_view(body)));
  EXPECT_EQ(reqs[0].header("x-amz-checksum-crc32c"), crc32c_base64(bytes_of(body)));
  EXPECT_EQ(reqs[1].target, "/bucket/big?partNumber=7&uploadId=UP1");
  EXPECT_EQ(reqs[1].header("content-md5"), "");
  EXPECT_EQ(reqs[1].header("x-amz-checksum-crc32c"), crc32c_base64(bytes_of(part)));
  EXPECT_EQ(reqs[1].header("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_EQ(reqs[1].header("x-amz-storage-class"), "");
}

// The names in the Authorization header's SignedHeaders list.
std::set<std::string> signed_names(const RecordedRequest& q) {
  const std::string auth = q.header("authorization");
  const size_t from = auth.find("SignedHeaders=");
  if (from == std::string::npos) return {};
  std::string_view names = std::string_view(auth).substr(from + 14);
  names = names.substr(0, names.find(','));
  std::set<std::string> out;
  while (!names.empty()) {
    const size_t semi = names.find(';');
    out.emplace(names.substr(0, semi));
    names.remove_prefix(semi == std::string_view::npos ? names.size() : semi + 1);
  }
  return out;
}

// The storage class and server-side encryption go with the requests that make an object
// (PutObject, CreateMultipartUpload), signed; the parts and the completion carry none (S3
// refuses them there).
TEST(S3Client, StorageClassAndEncryptionHeadersAreSentSignedWhenAnObjectIsMade) {
  HttpTestServer server;
  server.on([](const RecordedRequest& q) -> std::optional<Reply> {
    if (q.method != "POST") return std::nullopt;
    if (q.target.ends_with("?uploads="))
      return ok_reply("<InitiateMultipartUploadResult><Bucket>bucket</Bucket><Key>big</Key>"
                      "<UploadId>UP9</UploadId></InitiateMultipartUploadResult>");
    return ok_reply(kCompletedBody());
  });
  S3Config c = config_for(server);
  c.storage_class = "STANDARD";
  c.sse = Sse::kms;
  c.sse_kms_key_id = "arn:aws:kms:us-east-1:111122223333:key/sb-test";
  S3Client client = open_client(c);
  ASSERT_TRUE(client.run(put("small", "one part")).outcome);
  S3Op create;
  create.kind = S3OpKind::create_multipart_upload;
  create.bucket = "bucket";
  create.key = "big";
  S3Result created = client.run(create);
  ASSERT_TRUE(created.outcome) << created.outcome.error().what;
  S3Op up;
  up.kind = S3OpKind::upload_part;
  up.bucket = "bucket";
  up.key = "big";
  up.upload_id = created.upload_id;
  up.part_number = 1;
  const std::string part = pattern(1000, 6);
  up.body = bytes_of(part);
  S3Result uploaded = client.run(up);
  ASSERT_TRUE(uploaded.outcome) << uploaded.outcome.error().what;
  S3Op done;
  done.kind = S3OpKind::complete_multipart_upload;
  done.bucket = "bucket";
  done.key = "big";
  done.upload_id = created.upload_id;
  done.parts = {{1, uploaded.etag, ""}};
  S3Result completed = client.run(done);
  ASSERT_TRUE(completed.outcome) << completed.outcome.error().what;

  EXPECT_EQ(created.upload_id, "UP9");
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);
  const char* kMade[] = {"x-amz-storage-class", "x-amz-server-side-encryption",
                         "x-amz-server-side-encryption-aws-kms-key-id"};
  for (size_t i : {0u, 1u}) {
    SCOPED_TRACE(reqs[i].method + " " + reqs[i].target);
    EXPECT_EQ(reqs[i].header("x-amz-storage-class"), "STANDARD");
    EXPECT_EQ(reqs[i].header("x-amz-server-side-encryption"), "aws:kms");
    EXPECT_EQ(reqs[i].header("x-amz-server-side-encryption-aws-kms-key-id"),
              "arn:aws:kms:us-east-1:111122223333:key/sb-test");
    const auto names = signed_names(reqs[i]);
    for (const char* h : kMade) EXPECT_EQ(names.count(h), 1u) << h << " not signed";
    EXPECT_EQ(reqs[i].header("authorization"), authorization_for(reqs[i]));
  }
  EXPECT_EQ(reqs[1].target, "/bucket/big?uploads=");
  for (size_t i = 2; i < reqs.size(); ++i) {
    SCOPED_TRACE(reqs[i].method + " " + reqs[i].target);
    for (const char* h : kMade) EXPECT_EQ(reqs[i].header(h), "") << h;
    EXPECT_EQ(reqs[i].header("authorization"), authorization_for(reqs[i]));
  }

  // AES256: the store's own keys, no key id.
  HttpTestServer plain;
  S3Config a = config_for(plain);
  a.sse = Sse::aes256;
  S3Client aes = open_client(a);
  ASSERT_TRUE(aes.run(put("aes", "encrypted at rest")).outcome);
  reqs = plain.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].header("x-amz-server-side-encryption"), "AES256");
  EXPECT_EQ(signed_names(reqs[0]).count("x-amz-server-side-encryption"), 1u);
  EXPECT_EQ(reqs[0].header("x-amz-server-side-encryption-aws-kms-key-id"), "");
  EXPECT_EQ(reqs[0].header("x-amz-storage-class"), "");
  EXPECT_EQ(reqs[0].header("authorization"), authorization_for(reqs[0]));
}

TEST(S3Client, HeadGivesTheSizeAndAMissingObjectIsNotFound) {
  HttpTestServer server;
  server.put_object("/bucket/obj", pattern(4321, 5));
  S3Client client = open_client(config_for(server));
  S3Op op;
  op.kind = S3OpKind::head_object;
  op.bucket = "bucket";
  op.key = "obj";
  S3Result r = client.run(op);
  ASSERT_TRUE(r.outcome) << r.outcome.error().what;
  EXPECT_EQ(r.size, 4321u);
  op.key = "none";
  r = client.run(op);
  ASSERT_FALSE(r.outcome);
  EXPECT_EQ(r.outcome.error().code, Errc::not_found);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_NE(r.outcome.error().what.find("HeadObject 'bucket/none': HTTP 404"), std::string::npos)
      << r.outcome.error().what;
  // An absent object is an answer, not a failed request.
  EXPECT_EQ(client.stats().operations, 2u);
  EXPECT_EQ(client.stats().failed, 0u);
}

TEST(S3Client, OpsThatCannotBeMadeFailWithoutARequest) {
  HttpTestServer server;
  S3Client client = open_client(config_for(server));
  std::vector<std::byte> small(10);
  S3Op get;
  get.kind = S3OpKind::get_object;
  get.bucket = "bucket";
  get.key = "obj";
  get.into = std::span(small);
  get.length = 11;
  S3Op dots = put("a/../b", "x");
  S3Op part;
  part.kind = S3OpKind::upload_part;
  part.bucket = "bucket";
  part.key = "k";
  part.upload_id = "UP1";
  part.part_number = 10001;
  for (const S3Op& op : {get, dots, part}) {
    S3Result r = client.run(op);
    ASSERT_FALSE(r.outcome);
    EXPECT_EQ(r.outcome.error().code, Errc::invalid_argument) << r.outcome.error().what;
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST(S3Client, ManyOpsInFlightAllComeBackWithTheirTags) {
  HttpTestServer server;
  auto k3_attempts = std::make_shared<std::atomic<int>>(0);
  server.on([k3_attempts](const RecordedRequest& q) -> std::optional<Reply> {
    if (q.target == "/bucket/k3" && (*k3_attempts)++ == 0) return error_reply(503, "SlowDown");
    return std::nullopt;
  });
  S3Client client = open_client(config_for(server));
  std::vector<std::string> bodies;
  for (int i = 0; i < 8; ++i) bodies.push_back(pattern(1000 + static_cast<size_t>(i), 10 + i));
  for (uint64_t i = 0; i < 8; ++i) {
    S3Op op = put("k" + std::to_string(i), bodies[i]);
    op.tag = 100 + i;
    client.start(op);
  }
  EXPECT_EQ(client.in_flight(), 8u);
  std::set<uint64_t> tags;
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (client.in_flight() > 0 && Clock::now() < until)
    for (S3Result& r : client.poll(until)) {
      EXPECT_TRUE(r.outcome) << r.outcome.error().what;
      tags.insert(r.tag);
    }
  EXPECT_EQ(tags.size(), 8u);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(server.object("/bucket/k" + std::to_string(i)), bodies[static_cast<size_t>(i)]);
}

TEST(S3Client, WakeupEndsAPollWhileARetryWaitsForItsBackoff) {
  HttpTestServer server;
  server.push(error_reply(503, "SlowDown"));
  S3Config c = config_for(server);
  // A wait of up to ten minutes: the retry is not due during the test (but for a one in
  // twelve thousand draw below 50 ms).
  c.backoff_first = milliseconds(600'000);
  c.backoff_cap = milliseconds(600'000);
  S3Client client = open_client(c);
  const std::string body = "x";  // kept alive until the result came back
  client.start(put("obj", body));
  // The first attempt's answer arrives and a retry is scheduled; no result yet.
  auto first = client.poll(Clock::now() + milliseconds(50));
  ASSERT_TRUE(first.empty());
  std::thread other([&client] {
    std::this_thread::sleep_for(milliseconds(100));
    client.wakeup();
  });
  const auto t0 = Clock::now();
  auto got = client.poll(t0 + std::chrono::seconds(10));
  const auto took = Clock::now() - t0;
  other.join();
  EXPECT_TRUE(got.empty());
  EXPECT_GE(took, milliseconds(90));
  EXPECT_LT(took, milliseconds(1500));
  EXPECT_EQ(client.in_flight(), 1u);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(S3Client, WakeupEndsAPollWhileARequestIsOnTheWire) {
  HttpTestServer server;
  Reply slow;
  slow.delay = milliseconds(3000);
  server.push(slow);
  S3Client client = open_client(config_for(server));
  const std::string body = "x";  // kept alive until the result came back
  client.start(put("obj", body));
  std::thread other([&client] {
    std::this_thread::sleep_for(milliseconds(100));
    client.wakeup();
  });
  const auto t0 = Clock::now();
  auto got = client.poll(t0 + std::chrono::seconds(10));
  const auto took = Clock::now() - t0;
  other.join();
  EXPECT_TRUE(got.empty());
  EXPECT_LT(took, milliseconds(1500));
  EXPECT_EQ(client.in_flight(), 1u);
}

TEST(S3Client, APollDoesNotSleepPastTheNextRetry) {
  HttpTestServer server;
  server.push(error_reply(500, "InternalError"));
  S3Config c = config_for(server);
  c.backoff_first = milliseconds(200);
  c.backoff_cap = milliseconds(200);
  S3Client client = open_client(c);
  const std::string body = "x";  // kept alive until the result came back
  client.start(put("obj", body));
  const auto t0 = Clock::now();
  std::vector<S3Result> got;
  while (got.empty() && Clock::now() < t0 + std::chrono::seconds(10))
    got = client.poll(t0 + std::chrono::seconds(10));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].outcome) << got[0].outcome.error().what;
  EXPECT_EQ(got[0].attempts, 2u);
  EXPECT_LT(Clock::now() - t0, milliseconds(1500));
}

}  // namespace
}  // namespace stripeback::s3
