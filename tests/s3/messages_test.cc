// The S3 messages, with bodies shaped as S3 and S3-compatible gateways send them (the S3 API
// reference's examples for each operation, with our own names and values).
#include "backends/s3/messages.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/s3/xml.h"

namespace stripeback::s3 {
namespace {

TimePoint at(int y, unsigned m, unsigned d, int hh, int mm, int ss) {
  using namespace std::chrono;
  return sys_days(year(y) / month(m) / day(d)) + hours(hh) + minutes(mm) + seconds(ss);
}

void expect_corrupt(const Error& e, const std::string& part) {
  EXPECT_EQ(e.code, Errc::corrupt) << e.what;
  EXPECT_NE(e.what.find(part), std::string::npos) << e.what;
}

// Errors.

const char* kNoSuchKey =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<Error>\n"
    "  <Code>NoSuchKey</Code>\n"
    "  <Message>The resource you requested does not exist</Message>\n"
    "  <Resource>/backups/db/base/0001.sbp</Resource>\n"
    "  <RequestId>4442587FB7D0A2F9</RequestId>\n"
    "</Error>";

TEST(S3Messages, ParsesAnErrorBody) {
  auto e = parse_error(kNoSuchKey);
  ASSERT_TRUE(e.has_value()) << e.error().what;
  EXPECT_EQ(e->code, "NoSuchKey");
  EXPECT_EQ(e->message, "The resource you requested does not exist");
  EXPECT_EQ(e->resource, "/backups/db/base/0001.sbp");
  EXPECT_EQ(e->request_id, "4442587FB7D0A2F9");
}

TEST(S3Messages, ErrorCodesTellTheCallerWhatItCanDo) {
  Error e = to_error(*parse_error(kNoSuchKey), 404, "GET 'backups/db/base/0001.sbp'");
  EXPECT_EQ(e.code, Errc::not_found);
  EXPECT_EQ(e.what,
            "GET 'backups/db/base/0001.sbp': NoSuchKey (HTTP 404): The resource you requested "
            "does not exist [resource /backups/db/base/0001.sbp] [request id 4442587FB7D0A2F9]");
  EXPECT_EQ(to_error({"SlowDown", "", "", ""}, 503, "PUT").code, Errc::busy);
  EXPECT_EQ(to_error({"RequestTimeout", "", "", ""}, 400, "PUT").code, Errc::timed_out);
  EXPECT_EQ(to_error({"SignatureDoesNotMatch", "", "", ""}, 403, "PUT").code,
            Errc::invalid_argument);
  EXPECT_EQ(to_error({"ObjectLockConfigurationNotFoundError", "", "", ""}, 404, "GET").code,
            Errc::not_found);
  EXPECT_EQ(to_error({"SomethingNew", "", "", ""}, 503, "GET").code, Errc::busy);
  EXPECT_EQ(to_error({"SomethingNew", "", "", ""}, 500, "GET").code, Errc::io);
  EXPECT_EQ(to_error({"SomethingNew", "", "", ""}, 409, "GET").code, Errc::invalid_argument);
  // The server's text is escaped before it reaches a terminal.
  EXPECT_EQ(to_error({"X", "line\nbreak\x1b[2J", "", ""}, 400, "GET").what,
            "GET: X (HTTP 400): line\\nbreak\\x1b[2J");
}

TEST(S3Messages, AnErrorBodyNeedsACode) {
  expect_corrupt(parse_error("<Error><Message>m</Message></Error>").error(),
                 "S3 error response: <Error> has no <Code>");
  expect_corrupt(parse_error("<Error><Code></Code></Error>").error(), "<Code> is empty");
  expect_corrupt(parse_error("<html><body>502 Bad Gateway</body></html>").error(),
                 "the root element is <html>, not <Error>");
  expect_corrupt(parse_error("502 Bad Gateway").error(), "malformed XML at line 1");
}

// Multipart uploads.

TEST(S3Messages, ParsesTheUploadIdOfANewMultipartUpload) {
  auto id = parse_initiate_multipart(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
      "  <Bucket>backups</Bucket>\n"
      "  <Key>db/base/0001.sbp</Key>\n"
      "  <UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>\n"
      "</InitiateMultipartUploadResult>");
  ASSERT_TRUE(id.has_value()) << id.error().what;
  EXPECT_EQ(*id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
  expect_corrupt(parse_initiate_multipart("<InitiateMultipartUploadResult><UploadId/>"
                                          "</InitiateMultipartUploadResult>")
                     .error(),
                 "S3 InitiateMultipartUpload response: <UploadId> is empty");
}

TEST(S3Messages, BuildsTheCompleteMultipartUploadBody) {
  std::vector<CompletedPart> parts = {{1, "\"a54357aff0632cce46d942af68356b38\"", ""},
                                      {2, "\"0c78aef83f66abc1fa1e8477f296d394\"", "4waSgw=="}};
  auto body = complete_multipart_body(parts);
  ASSERT_TRUE(body.has_value()) << body.error().what;
  EXPECT_EQ(*body,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            "<Part><PartNumber>1</PartNumber>"
            "<ETag>&quot;a54357aff0632cce46d942af68356b38&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber>"
            "<ETag>&quot;0c78aef83f66abc1fa1e8477f296d394&quot;</ETag>"
            "<ChecksumCRC32C>4waSgw==</ChecksumCRC32C></Part>"
            "</CompleteMultipartUpload>");
  auto doc = parse_xml(*body);
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ(doc->children[1].child("ETag")->text, parts[1].etag);
}

TEST(S3Messages, RefusesPartListsS3WouldRefuse) {
  auto refused = [](std::vector<CompletedPart> parts, const std::string& why) {
    auto body = complete_multipart_body(parts);
    ASSERT_FALSE(body.has_value()) << why;
    EXPECT_EQ(body.error().code, Errc::invalid_argument);
    EXPECT_NE(body.error().what.find(why), std::string::npos) << body.error().what;
  };
  refused({}, "no parts");
  refused({{2, "\"e\"", ""}, {1, "\"e\"", ""}}, "part 1 follows part 2");
  refused({{1, "\"e\"", ""}, {1, "\"e\"", ""}}, "part 1 follows part 1");
  refused({{0, "\"e\"", ""}}, "part 0 is outside 1..10000");
  refused({{10001, "\"e\"", ""}}, "part 10001 is outside");
  refused({{1, "", ""}}, "part 1 has no ETag");
  refused({{1, "\"e\x01\"", ""}}, "part 1's ETag");
  std::vector<CompletedPart> too_many(10001);
  for (uint32_t i = 0; i < too_many.size(); ++i) too_many[i] = {i + 1, "\"e\"", ""};
  refused(too_many, "10001 parts, more than S3's 10000");
}

TEST(S3Messages, ParsesTheCompletedUpload) {
  auto done = parse_complete_multipart(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
      "  <Location>https://backups.s3.eu-west-1.amazonaws.com/db/base/0001.sbp</Location>\n"
      "  <Bucket>backups</Bucket>\n"
      "  <Key>db/base/0001.sbp</Key>\n"
      "  <ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>\n"
      "</CompleteMultipartUploadResult>");
  ASSERT_TRUE(done.has_value()) << done.error().what;
  EXPECT_EQ(done->location, "https://backups.s3.eu-west-1.amazonaws.com/db/base/0001.sbp");
  EXPECT_EQ(done->bucket, "backups");
  EXPECT_EQ(done->key, "db/base/0001.sbp");
  EXPECT_EQ(done->etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
}

TEST(S3Messages, ACompletedUploadMayHaveAnEmptyETag) {
  for (const char* etag : {"<ETag></ETag>", "<ETag/>", ""}) {
    auto done = parse_complete_multipart(
        std::string("<CompleteMultipartUploadResult><Location>http://gw:9000/b/k</Location>"
                    "<Bucket>b</Bucket><Key>k</Key>") +
        etag + "</CompleteMultipartUploadResult>");
    ASSERT_TRUE(done.has_value()) << done.error().what;
    EXPECT_EQ(done->key, "k");
    EXPECT_EQ(done->etag, "");
  }
}

TEST(S3Messages, AnErrorInsideA200CompleteIsTheError) {
  // S3 may answer 200 OK, send white space while it assembles the parts, then fail.
  auto done = parse_complete_multipart(
      "\n \n \n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\n"
      "<Error>\n"
      "  <Code>InternalError</Code>\n"
      "  <Message>We encountered an internal error. Please try again.</Message>\n"
      "  <RequestId>656c76696e6727732072657175657374</RequestId>\n"
      "  <HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId>\n"
      "</Error>");
  ASSERT_FALSE(done.has_value());
  EXPECT_EQ(done.error().code, Errc::busy);
  EXPECT_EQ(done.error().what,
            "S3 CompleteMultipartUpload: InternalError (HTTP 200): We encountered an internal "
            "error. Please try again. [request id 656c76696e6727732072657175657374]");
}

// Listings.

const char* kListing =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Name>backups</Name>\n"
    "  <Prefix>db/</Prefix>\n"
    "  <KeyCount>2</KeyCount>\n"
    "  <MaxKeys>2</MaxKeys>\n"
    "  <Delimiter>/</Delimiter>\n"
    "  <IsTruncated>true</IsTruncated>\n"
    "  <Contents>\n"
    "    <Key>db/catalog.log</Key>\n"
    "    <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>\n"
    "    <Size>434234</Size>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "  </Contents>\n"
    "  <Contents>\n"
    "    <Key>db/R&amp;D &lt;old&gt; \xc3\xa9t\xc3\xa9&#x1F600;.sbp</Key>\n"
    "    <LastModified>2024-02-29T23:59:59Z</LastModified>\n"
    "    <ETag>\"599bab3ed2c697f1d26842727561fd94-3\"</ETag>\n"
    "    <Size>18446744073709551615</Size>\n"
    "    <Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID></Owner>\n"
    "  </Contents>\n"
    "  <CommonPrefixes><Prefix>db/base/</Prefix></CommonPrefixes>\n"
    "  <CommonPrefixes><Prefix>db/wal/</Prefix></CommonPrefixes>\n"
    "  "
    "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>\n"
    "</ListBucketResult>";

TEST(S3Messages, ParsesATruncatedListObjectsV2Page) {
  auto page = parse_list_objects_v2(kListing);
  ASSERT_TRUE(page.has_value()) << page.error().what;
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  ASSERT_EQ(page->objects.size(), 2u);
  EXPECT_EQ(page->objects[0].key, "db/catalog.log");
  EXPECT_EQ(page->objects[0].size, 434234u);
  EXPECT_EQ(page->objects[0].etag, "\"fba9dede5f27731c9771645a39863328\"");
  EXPECT_EQ(page->objects[0].last_modified, at(2009, 10, 12, 17, 50, 30));
  EXPECT_EQ(page->objects[1].key, "db/R&D <old> \xc3\xa9t\xc3\xa9\xf0\x9f\x98\x80.sbp");
  EXPECT_EQ(page->objects[1].size, UINT64_MAX);
  EXPECT_EQ(page->objects[1].last_modified, at(2024, 2, 29, 23, 59, 59));
  EXPECT_EQ(page->common_prefixes, (std::vector<std::string>{"db/base/", "db/wal/"}));
}

TEST(S3Messages, ParsesTheLastListingPageWithPrefixedNames) {
  auto page = parse_list_objects_v2(
      "<s3:ListBucketResult xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<s3:Name>backups</s3:Name><s3:IsTruncated>false</s3:IsTruncated>"
      "<s3:Contents><s3:Key> spaced key </s3:Key><s3:Size>0</s3:Size>"
      "<s3:LastModified>2015-08-30T12:36:00Z</s3:LastModified></s3:Contents>"
      "</s3:ListBucketResult>");
  ASSERT_TRUE(page.has_value()) << page.error().what;
  EXPECT_FALSE(page->truncated);
  EXPECT_EQ(page->next_continuation_token, "");
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, " spaced key ");  // keys are never trimmed
  EXPECT_EQ(page->objects[0].etag, "");
}

TEST(S3Messages, AnEmptyListingHasNoObjects) {
  auto page = parse_list_objects_v2(
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name>"
      "<Prefix>none/</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
      "<IsTruncated>false</IsTruncated></ListBucketResult>");
  ASSERT_TRUE(page.has_value()) << page.error().what;
  EXPECT_TRUE(page->objects.empty());
  EXPECT_TRUE(page->common_prefixes.empty());
}

TEST(S3Messages, DecodesUrlEncodedListings) {
  auto page = parse_list_objects_v2(
      "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
      "<Contents><Key>db%2Fa+b%01c%C3%A9%2B</Key><Size>1</Size>"
      "<LastModified>2015-08-30T12:36:00Z</LastModified></Contents>"
      "<CommonPrefixes><Prefix>db%2Fx+y%2F</Prefix></CommonPrefixes></ListBucketResult>");
  ASSERT_TRUE(page.has_value()) << page.error().what;
  EXPECT_EQ(page->objects[0].key,
            "db/a b\x01"
            "c\xc3\xa9+");
  EXPECT_EQ(page->common_prefixes[0], "db/x y/");
  const char* bad_keys[] = {"a%2", "a%zz", "a%C3", "a%"};
  for (const char* key : bad_keys) {
    auto bad = parse_list_objects_v2(
        std::string("<ListBucketResult><EncodingType>url</EncodingType>"
                    "<IsTruncated>false</IsTruncated><Contents><Key>") +
        key +
        "</Key><Size>1</Size><LastModified>2015-08-30T12:36:00Z</LastModified>"
        "</Contents></ListBucketResult>");
    ASSERT_FALSE(bad.has_value()) << key;
    EXPECT_EQ(bad.error().code, Errc::corrupt);
  }
  expect_corrupt(parse_list_objects_v2("<ListBucketResult><EncodingType>base64</EncodingType>"
                                       "<IsTruncated>false</IsTruncated></ListBucketResult>")
                     .error(),
                 "unknown <EncodingType> 'base64'");
}

TEST(S3Messages, RefusesListingsThatWouldMisleadTheClient) {
  auto listing = [](const std::string& head, const std::string& contents) {
    return parse_list_objects_v2("<ListBucketResult>" + head + "<Contents>" + contents +
                                 "</Contents></ListBucketResult>");
  };
  const std::string ok_entry =
      "<Key>k</Key><Size>1</Size><LastModified>2015-08-30T12:36:00Z</LastModified>";
  ASSERT_TRUE(listing("<IsTruncated>false</IsTruncated>", ok_entry).has_value());
  expect_corrupt(listing("<IsTruncated>true</IsTruncated>", ok_entry).error(),
                 "S3 ListObjectsV2 response: a truncated listing without <NextContinuationToken>");
  expect_corrupt(listing("", ok_entry).error(), "<ListBucketResult> has no <IsTruncated>");
  expect_corrupt(listing("<IsTruncated>yes</IsTruncated>", ok_entry).error(),
                 "<IsTruncated> is 'yes', not true or false");
  expect_corrupt(listing("<IsTruncated>false</IsTruncated>",
                         "<Size>1</Size><LastModified>2015-08-30T12:36:00Z</LastModified>")
                     .error(),
                 "<Contents> has no <Key>");
  for (const char* size : {"-1", "12a", "", " 1", "18446744073709551616"})
    expect_corrupt(listing("<IsTruncated>false</IsTruncated>",
                           std::string("<Key>k</Key><Size>") + size +
                               "</Size><LastModified>2015-08-30T12:36:00Z</LastModified>")
                       .error(),
                   "<Size> is '");
  expect_corrupt(listing("<IsTruncated>false</IsTruncated>",
                         "<Key>k</Key><Size>1</Size><LastModified>Mon, 12 Oct 2009</LastModified>")
                     .error(),
                 "<LastModified>: time 'Mon, 12 Oct 2009' is not ISO 8601 UTC");
  expect_corrupt(parse_list_objects_v2("<ListAllMyBucketsResult/>").error(),
                 "the root element is <ListAllMyBucketsResult>, not <ListBucketResult>");
  auto no_bucket = parse_list_objects_v2(
      "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>"
      "<BucketName>backups</BucketName></Error>");
  ASSERT_FALSE(no_bucket.has_value());
  EXPECT_EQ(no_bucket.error().code, Errc::not_found);
}

const char* kUploads =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "  <Bucket>backups</Bucket>\n"
    "  <KeyMarker></KeyMarker>\n"
    "  <UploadIdMarker></UploadIdMarker>\n"
    "  <NextKeyMarker>db/base/0002.sbp</NextKeyMarker>\n"
    "  <NextUploadIdMarker>YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ</NextUploadIdMarker>\n"
    "  <MaxUploads>2</MaxUploads>\n"
    "  <IsTruncated>true</IsTruncated>\n"
    "  <Upload>\n"
    "    <Key>db/base/0001.sbp</Key>\n"
    "    <UploadId>XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw</UploadId>\n"
    "    <Initiator>\n"
    "      <ID>arn:aws:iam::111122223333:user/backup</ID>\n"
    "      <DisplayName>backup</DisplayName>\n"
    "    </Initiator>\n"
    "    <Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID></Owner>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "    <Initiated>2010-11-10T20:48:33.000Z</Initiated>\n"
    "  </Upload>\n"
    "  <Upload>\n"
    "    <Key>db/base/0002.sbp</Key>\n"
    "    <UploadId>YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ</UploadId>\n"
    "    <StorageClass>STANDARD</StorageClass>\n"
    "    <Initiated>2010-11-10T20:49:33.000Z</Initiated>\n"
    "  </Upload>\n"
    "</ListMultipartUploadsResult>";

TEST(S3Messages, ParsesATruncatedListOfMultipartUploads) {
  auto page = parse_list_multipart_uploads(kUploads);
  ASSERT_TRUE(page.has_value()) << page.error().what;
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_key_marker, "db/base/0002.sbp");
  EXPECT_EQ(page->next_upload_id_marker, "YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ");
  ASSERT_EQ(page->uploads.size(), 2u);
  EXPECT_EQ(page->uploads[0].key, "db/base/0001.sbp");
  EXPECT_EQ(page->uploads[0].upload_id, "XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw");
  EXPECT_EQ(page->uploads[0].initiated, at(2010, 11, 10, 20, 48, 33));
  EXPECT_EQ(page->uploads[1].initiated, at(2010, 11, 10, 20, 49, 33));
}

TEST(S3Messages, RefusesAnUploadListingThatCannotContinue) {
  expect_corrupt(
      parse_list_multipart_uploads("<ListMultipartUploadsResult><IsTruncated>true</IsTruncated>"
                                   "<NextKeyMarker></NextKeyMarker></ListMultipartUploadsResult>")
          .error(),
      "a truncated listing without <NextKeyMarker>");
  expect_corrupt(
      parse_list_multipart_uploads("<ListMultipartUploadsResult><IsTruncated>false</IsTruncated>"
                                   "<Upload><Key>k</Key><UploadId></UploadId>"
                                   "<Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
                                   "</ListMultipartUploadsResult>")
          .error(),
      "<Upload> with an empty <UploadId>");
  auto none = parse_list_multipart_uploads(
      "<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated>"
      "</ListMultipartUploadsResult>");
  ASSERT_TRUE(none.has_value()) << none.error().what;
  EXPECT_TRUE(none->uploads.empty());
}

// Multi-object delete.

TEST(S3Messages, BuildsAQuietDeleteWithEscapedKeys) {
  std::vector<std::string> keys = {"db/base/0001.sbp", "db/R&D <\"old\">'s\r\nnotes"};
  auto body = delete_objects_body(keys);
  ASSERT_TRUE(body.has_value()) << body.error().what;
  EXPECT_EQ(*body,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
            "<Object><Key>db/base/0001.sbp</Key></Object>"
            "<Object><Key>db/R&amp;D &lt;&quot;old&quot;&gt;&apos;s&#13;&#10;notes</Key></Object>"
            "</Delete>");
  auto doc = parse_xml(*body);
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ(doc->children[2].child("Key")->text, keys[1]);
}

TEST(S3Messages, RefusesDeletesS3WouldRefuse) {
  auto refused = [](const std::vector<std::string>& keys, const std::string& why) {
    auto body = delete_objects_body(keys);
    ASSERT_FALSE(body.has_value()) << why;
    EXPECT_EQ(body.error().code, Errc::invalid_argument);
    EXPECT_NE(body.error().what.find(why), std::string::npos) << body.error().what;
  };
  refused({}, "DeleteObjects body: no keys");
  refused(std::vector<std::string>(1001, "k"), "1001 keys, more than S3's 1000");
  refused({"ok", ""}, "key '' is not 1 to 1024 bytes long");
  refused({std::string(1025, 'k')}, "is not 1 to 1024 bytes long");
  refused({"bell\x07"}, "key 'bell\\x07': byte 4 is not UTF-8 or a character XML 1.0 can carry");
  refused({"\xff"}, "is not UTF-8");
  EXPECT_TRUE(delete_objects_body(std::vector<std::string>(1000, "k")).has_value());
  EXPECT_TRUE(delete_objects_body(std::vector<std::string>{std::string(1024, 'k')}).has_value());
}

TEST(S3Messages, ParsesDeleteResults) {
  auto result = parse_delete_result(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
      "  <Deleted><Key>db/base/0001.sbp</Key></Deleted>\n"
      "  <Deleted><Key>db/base/0002.sbp</Key><VersionId>v1</VersionId>"
      "<DeleteMarker>true</DeleteMarker></Deleted>\n"
      "  <Error><Key>db/locked.sbp</Key><Code>AccessDenied</Code>"
      "<Message>Access Denied because object protected by object lock.</Message></Error>\n"
      "  <Error><Key>db/other</Key><Code>InternalError</Code></Error>\n"
      "</DeleteResult>");
  ASSERT_TRUE(result.has_value()) << result.error().what;
  EXPECT_EQ(result->deleted, (std::vector<std::string>{"db/base/0001.sbp", "db/base/0002.sbp"}));
  ASSERT_EQ(result->failed.size(), 2u);
  EXPECT_EQ(result->failed[0].key, "db/locked.sbp");
  EXPECT_EQ(result->failed[0].code, "AccessDenied");
  EXPECT_EQ(result->failed[0].message, "Access Denied because object protected by object lock.");
  EXPECT_EQ(result->failed[1].message, "");

  for (const char* quiet : {"<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
                            "</DeleteResult>",
                            "<DeleteResult/>"}) {
    auto all_gone = parse_delete_result(quiet);
    ASSERT_TRUE(all_gone.has_value()) << all_gone.error().what;
    EXPECT_TRUE(all_gone->deleted.empty());
    EXPECT_TRUE(all_gone->failed.empty());
  }
  expect_corrupt(
      parse_delete_result("<DeleteResult><Error><Key>k</Key></Error></DeleteResult>").error(),
      "<Error> has no <Code>");
}

// Object Lock.

TEST(S3Messages, BuildsARetentionBodyThatReadsBack) {
  std::string body = retention_body(RetentionMode::compliance, at(2030, 1, 2, 3, 4, 5));
  EXPECT_EQ(body,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<Retention xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            "<Mode>COMPLIANCE</Mode><RetainUntilDate>2030-01-02T03:04:05Z</RetainUntilDate>"
            "</Retention>");
  auto back = parse_retention(body);
  ASSERT_TRUE(back.has_value()) << back.error().what;
  EXPECT_EQ(back->mode, RetentionMode::compliance);
  EXPECT_EQ(back->retain_until, at(2030, 1, 2, 3, 4, 5));
  back = parse_retention(retention_body(RetentionMode::governance, at(2030, 1, 2, 3, 4, 5)));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->mode, RetentionMode::governance);
  expect_corrupt(parse_retention("<Retention><Mode>LEGAL</Mode></Retention>").error(),
                 "<Mode> is 'LEGAL', not GOVERNANCE or COMPLIANCE");
}

TEST(S3Messages, ParsesObjectLockConfigurations) {
  auto on = parse_object_lock_configuration(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ObjectLockConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<ObjectLockEnabled>Enabled</ObjectLockEnabled>"
      "<Rule><DefaultRetention><Mode>COMPLIANCE</Mode><Days>30</Days></DefaultRetention></Rule>"
      "</ObjectLockConfiguration>");
  ASSERT_TRUE(on.has_value()) << on.error().what;
  EXPECT_TRUE(on->enabled);
  ASSERT_TRUE(on->default_retention.has_value());
  EXPECT_EQ(on->default_retention->mode, RetentionMode::compliance);
  EXPECT_EQ(on->default_retention->days, 30u);
  EXPECT_EQ(on->default_retention->years, 0u);

  auto years = parse_object_lock_configuration(
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>"
      "<DefaultRetention><Mode>GOVERNANCE</Mode><Years>2</Years></DefaultRetention></Rule>"
      "</ObjectLockConfiguration>");
  ASSERT_TRUE(years.has_value()) << years.error().what;
  EXPECT_EQ(years->default_retention->years, 2u);

  auto no_rule = parse_object_lock_configuration(
      "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
      "</ObjectLockConfiguration>");
  ASSERT_TRUE(no_rule.has_value());
  EXPECT_TRUE(no_rule->enabled);
  EXPECT_FALSE(no_rule->default_retention.has_value());

  auto off = parse_object_lock_configuration("<ObjectLockConfiguration/>");
  ASSERT_TRUE(off.has_value());
  EXPECT_FALSE(off->enabled);

  expect_corrupt(parse_object_lock_configuration(
                     "<ObjectLockConfiguration><ObjectLockEnabled>Disabled</ObjectLockEnabled>"
                     "</ObjectLockConfiguration>")
                     .error(),
                 "<ObjectLockEnabled> is 'Disabled', not Enabled");
  expect_corrupt(parse_object_lock_configuration(
                     "<ObjectLockConfiguration><Rule><DefaultRetention><Mode>COMPLIANCE</Mode>"
                     "<Days>1</Days><Years>1</Years></DefaultRetention></Rule>"
                     "</ObjectLockConfiguration>")
                     .error(),
                 "needs exactly one of <Days> and <Years>");
  expect_corrupt(parse_object_lock_configuration(
                     "<ObjectLockConfiguration><Rule><DefaultRetention><Mode>COMPLIANCE</Mode>"
                     "<Days>0</Days></DefaultRetention></Rule></ObjectLockConfiguration>")
                     .error(),
                 "of zero length");

  auto missing = parse_object_lock_configuration(
      "<Error><Code>ObjectLockConfigurationNotFoundError</Code>"
      "<Message>Object Lock configuration does not exist for this bucket</Message>"
      "<BucketName>backups</BucketName><RequestId>1B2M2Y8AsgTpgAmY</RequestId></Error>");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, Errc::not_found);
}

}  // namespace
}  // namespace stripeback::s3
