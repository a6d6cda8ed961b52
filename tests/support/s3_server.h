// The S3 test gateway for tests (scripts/s3-server.sh: a one-node Ceph cluster with the RADOS
// Gateway on 127.0.0.1), and plain S3 requests made with curl to set up and inspect what a
// test needs without going through the code under test.
//
//   std::string why;
//   auto ep = s3_server(&why);
//   if (!ep) GTEST_SKIP() << why;
//   std::string bucket = s3_create_bucket(*ep, ObjectLock::no, &why);
//
// Which gateway: the one of SB_S3_PORT / SB_S3_STATE (the script's defaults when unset,
// port 22080). Ownership across test processes: a process that finds the gateway running
// uses it; one that finds none starts it and marks it as started by a test. At exit, the
// last test process using a gateway a test started stops it, so a gateway started by hand
// is never stopped by tests, and test processes running in parallel (ctest -j) do not stop
// it under each other. Each process holds a shared lock on $SB_S3_STATE.users while it
// may use the gateway. Starting takes 15-20 s: a gateway started by hand before a test run
// saves that per test process.
//
// All functions may be called from the test's main thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stripeback::testing {

struct S3Endpoint {
  std::string url;  // http://127.0.0.1:PORT, path-style addressing
  std::string region;
  std::string access_key;
  std::string secret_key;
  // The id of the gateway's SSE-KMS test key (x-amz-server-side-encryption-aws-kms-key-id);
  // empty when the running gateway has none (started by an older scripts/s3-server.sh).
  std::string kms_key_id;
};

// Ensures the gateway runs for this process and returns its endpoint (the same for every call
// in a process). Without one: nullopt and, in *skip_reason, why, to pass to GTEST_SKIP (the
// Ceph packages or curl are missing, a port is taken). A gateway that should have started and
// did not also fails the calling test (ADD_FAILURE with the script's message).
std::optional<S3Endpoint> s3_server(std::string* skip_reason);

// An answer to one request made with curl.
struct S3Response {
  std::string request;  // method and path
  int status = 0;       // the HTTP status; 0 when curl got no complete answer (see error)
  std::string headers;  // the final response's header lines, as received
  std::string body;
  std::string error;  // when status is 0: curl's command line, exit code and message

  // The value of the first header named `name` (any case), without surrounding blanks.
  std::optional<std::string> header(std::string_view name) const;
  // The request and what came back, for failure messages.
  std::string describe() const;
};

// Sends one signed request (SigV4 with an unsigned payload) with curl. `path` is
// "/bucket[/key][?query]", already URI-encoded (s3_path does it); every query parameter must
// have a '=' ("?versions=", not "?versions": the gateway computes the signature with it) and
// several must come in alphabetical order. `curl_args` are added to curl's command line
// (e.g. {"-T", file} to upload a file, {"-H", "Content-MD5: ..."}). A HEAD request reads
// headers only.
S3Response s3_curl(const S3Endpoint& ep, std::string_view method, const std::string& path,
                   const std::vector<std::string>& curl_args = {});

// "/bucket/key" with the key URI-encoded ('/' kept).
std::string s3_path(std::string_view bucket, std::string_view key = {});

enum class ObjectLock : bool { no, yes };

// Creates a bucket with a name no other test process uses (lower case, starting "sbt-"),
// with Object Lock (and so versioning) enabled when asked. Its name, or empty with why in
// *error.
std::string s3_create_bucket(const S3Endpoint& ep, ObjectLock lock, std::string* error);

struct S3ObjectVersion {
  std::string key;
  std::string version_id;  // "null" in a bucket that never had versioning
  bool delete_marker = false;
  bool latest = false;
  uint64_t size = 0;
};

// Every object version and delete marker in the bucket (all pages of ListObjectVersions),
// in the gateway's order; nullopt with why in *error.
std::optional<std::vector<S3ObjectVersion>> s3_list_versions(const S3Endpoint& ep,
                                                             const std::string& bucket,
                                                             std::string* error);

// Deletes every object version and delete marker in the bucket, bypassing governance-mode
// locks. False with why in *error when one was refused (a compliance-mode Object Lock
// refuses it until it has passed); the others are still deleted.
bool s3_empty_bucket(const S3Endpoint& ep, const std::string& bucket, std::string* error);

// Empties the bucket and deletes it. False with why in *error.
bool s3_delete_bucket(const S3Endpoint& ep, const std::string& bucket, std::string* error);

}  // namespace stripeback::testing
