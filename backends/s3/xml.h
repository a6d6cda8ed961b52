// A small XML reader for S3's response bodies, and the escaping its request bodies need.
//
// It reads the XML 1.0 that S3 and S3-compatible gateways write: a declaration, elements,
// attributes (checked for form, then ignored), character data, the five named entities,
// numeric character references, CDATA sections, comments and processing instructions
// (skipped). Namespace prefixes are dropped from names ("s3:Key" reads as "Key"); xmlns
// declarations are attributes like the others. It refuses, as Errc::corrupt naming the line,
// the column and the cause: a document type declaration (no entity definitions, so no
// expansion bombs), unknown entities, mismatched or unclosed tags, text outside the root,
// bytes that are not UTF-8 or not XML characters, and documents past the limits.
//
// Pure functions, safe from any thread; the tree owns copies of all its text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::s3 {

struct XmlElement {
  std::string name;  // the local name: a namespace prefix is dropped
  // The character data directly inside, entities and CDATA decoded, line ends read as "\n";
  // the pieces between child elements are joined (white space between containers included).
  std::string text;
  std::vector<XmlElement> children;

  // The first child named `child_name`, or nullptr.
  const XmlElement* child(std::string_view child_name) const;
};

struct XmlLimits {
  size_t max_bytes = size_t{16} << 20;  // a 1,000-key listing is well under 2 MiB
  size_t max_depth = 32;                // S3's bodies nest 4 deep
  size_t max_elements = 100000;         // bounds the tree's memory, whatever the document
};

// The root element of `doc`.
Result<XmlElement> parse_xml(std::string_view doc, const XmlLimits& limits = {});

// `text` for element content or an attribute value: & < > " ' as named entities, and tab,
// line feed and carriage return as character references (a raw CR would read back as LF).
// Refuses, as invalid_argument naming the byte offset, text XML 1.0 cannot carry at all:
// bytes that are not UTF-8, other control characters, U+FFFE and U+FFFF.
Result<std::string> xml_escape(std::string_view text);

// The offset of the first byte of `text` that does not start a valid UTF-8 sequence of an
// XML 1.0 character (tab, LF, CR, U+0020 onwards without surrogates, U+FFFE, U+FFFF), or npos.
size_t first_non_xml_char(std::string_view text);
// The offset of the first byte of `text` that does not start a valid UTF-8 sequence, or npos.
size_t first_non_utf8(std::string_view text);

}  // namespace stripeback::s3
