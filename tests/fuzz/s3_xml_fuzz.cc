// The S3 XML reader and messages (backends/s3/xml.h, messages.h): the mode byte picks what
// the rest of the input goes to.
//   0     parse_xml; what parses is UTF-8 XML text with local names, and writing the tree back
//         (xml_escape) reads back to the same tree
//   1..7  a response parser (Error, InitiateMultipartUpload, CompleteMultipartUpload,
//         ListObjectsV2, ListMultipartUploads, DeleteResult, Retention and ObjectLock)
//   8     delete_objects_body over the input's lines as keys
//   9     complete_multipart_body over the input's lines as ETags
// Invariants: a refused body is corrupt, or is an <Error> document that parse_error reads (S3's
// own error); what parses keeps the promises of messages.h (a truncated listing has its
// marker, keys are non-empty UTF-8, a default retention has one period); a body the builders
// accept reads back, through parse_xml, to the keys or ETags it was built from.
#include <string>
#include <string_view>
#include <vector>

#include "backends/s3/messages.h"
#include "backends/s3/xml.h"
#include "tests/fuzz/fuzz_check.h"

using namespace stripeback;
using namespace stripeback::s3;

namespace {

bool is_text(std::string_view s) { return first_non_xml_char(s) == std::string_view::npos; }

std::string write_back(const XmlElement& e) {
  auto text = xml_escape(e.text);
  FUZZ_CHECK(text.has_value());
  std::string out = "<" + e.name + ">" + *text;
  for (const XmlElement& c : e.children) out += write_back(c);
  return out + "</" + e.name + ">";
}

bool same(const XmlElement& a, const XmlElement& b) {
  if (a.name != b.name || a.text != b.text || a.children.size() != b.children.size()) return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!same(a.children[i], b.children[i])) return false;
  return true;
}

void check_tree(const XmlElement& e) {
  FUZZ_CHECK(!e.name.empty() && is_text(e.name));
  FUZZ_CHECK(e.name.find(':') == std::string::npos);
  FUZZ_CHECK(is_text(e.text));
  for (const XmlElement& c : e.children) check_tree(c);
}

// A refusal is corrupt, or S3's error carried in the body.
void check_refusal(const Error& e, std::string_view body) {
  FUZZ_CHECK(!e.what.empty());
  if (e.code == Errc::corrupt) return;
  FUZZ_CHECK(parse_error(body).has_value());
}

template <typename T>
bool refused(const Result<T>& r, std::string_view body) {
  if (r) return false;
  check_refusal(r.error(), body);
  return true;
}

std::vector<std::string> lines(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find('\n', i);
    if (j == std::string_view::npos) j = s.size();
    out.emplace_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void check_keys_build(const std::vector<std::string>& keys) {
  auto body = delete_objects_body(keys);
  if (!body) {
    FUZZ_CHECK(body.error().code == Errc::invalid_argument);
    return;
  }
  auto doc = parse_xml(*body);
  FUZZ_CHECK(doc.has_value());
  FUZZ_CHECK(doc->name == "Delete" && doc->children.size() == keys.size() + 1);
  for (size_t i = 0; i < keys.size(); ++i) {
    const XmlElement* key = doc->children[i + 1].child("Key");
    FUZZ_CHECK(key != nullptr && key->text == keys[i]);
  }
}

void parse_response(uint8_t mode, std::string_view body) {
  switch (mode) {
    case 1: {
      auto e = parse_error(body);
      if (!e) FUZZ_CHECK(e.error().code == Errc::corrupt);
      else FUZZ_CHECK(!e->code.empty() && !to_error(*e, 500, "fuzz").what.empty());
      return;
    }
    case 2: {
      auto id = parse_initiate_multipart(body);
      if (!refused(id, body)) FUZZ_CHECK(!id->empty());
      return;
    }
    case 3: {
      auto done = parse_complete_multipart(body);
      if (!refused(done, body)) FUZZ_CHECK(is_text(done->key) && is_text(done->etag));
      return;
    }
    case 4: {
      auto page = parse_list_objects_v2(body);
      if (refused(page, body)) return;
      FUZZ_CHECK(!page->truncated || !page->next_continuation_token.empty());
      std::vector<std::string> keys;
      for (const ObjectEntry& o : page->objects) {
        FUZZ_CHECK(!o.key.empty() && first_non_utf8(o.key) == std::string::npos);
        keys.push_back(o.key);
      }
      if (!keys.empty()) check_keys_build(keys);
      return;
    }
    case 5: {
      auto page = parse_list_multipart_uploads(body);
      if (refused(page, body)) return;
      FUZZ_CHECK(!page->truncated || !page->next_key_marker.empty());
      for (const UploadEntry& u : page->uploads)
        FUZZ_CHECK(!u.upload_id.empty() && first_non_utf8(u.key) == std::string::npos);
      return;
    }
    case 6: {
      auto result = parse_delete_result(body);
      if (refused(result, body)) return;
      for (const DeleteFailure& f : result->failed) FUZZ_CHECK(is_text(f.key) && is_text(f.code));
      return;
    }
    default: {
      auto retention = parse_retention(body);
      if (!refused(retention, body)) {
        auto again = parse_retention(retention_body(retention->mode, retention->retain_until));
        FUZZ_CHECK(again.has_value() && again->mode == retention->mode);
        FUZZ_CHECK(again->retain_until ==
                   std::chrono::floor<std::chrono::seconds>(retention->retain_until));
      }
      auto lock = parse_object_lock_configuration(body);
      if (!refused(lock, body) && lock->default_retention)
        FUZZ_CHECK((lock->default_retention->days == 0) != (lock->default_retention->years == 0));
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::split_mode(data, size);
  const std::string text(reinterpret_cast<const char*>(in.rest.data()), in.rest.size());
  const uint8_t mode = in.mode % 10;
  if (mode == 0) {
    auto doc = parse_xml(text);
    if (!doc) {
      FUZZ_CHECK(doc.error().code == Errc::corrupt && !doc.error().what.empty());
      return 0;
    }
    check_tree(*doc);
    auto again = parse_xml(write_back(*doc));
    FUZZ_CHECK(again.has_value() && same(*doc, *again));
  } else if (mode == 8) {
    check_keys_build(lines(text));
  } else if (mode == 9) {
    std::vector<CompletedPart> parts;
    for (const std::string& etag : lines(text))
      parts.push_back({static_cast<uint32_t>(parts.size() + 1), etag, ""});
    auto body = complete_multipart_body(parts);
    if (!body) {
      FUZZ_CHECK(body.error().code == Errc::invalid_argument);
      return 0;
    }
    auto doc = parse_xml(*body);
    FUZZ_CHECK(doc.has_value() && doc->children.size() == parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
      const XmlElement* etag = doc->children[i].child("ETag");
      FUZZ_CHECK(etag != nullptr && etag->text == parts[i].etag);
    }
  } else {
    parse_response(mode, text);
  }
  return 0;
}
