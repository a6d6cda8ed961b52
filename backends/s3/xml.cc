#include "backends/s3/xml.h"

#include <algorithm>
#include <cstdint>

#include "util/escape.h"

namespace stripeback::s3 {
namespace {

// The code point of the UTF-8 sequence at s[i] and its length, or 0 for an invalid sequence
// (overlong forms, surrogates and values past U+10FFFF included).
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n = 0;
  uint32_t v = 0, min = 0;
  if ((c & 0xe0) == 0xc0) {
    n = 2, v = c & 0x1fu, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, v = c & 0x0fu, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, v = c & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    v = (v << 6) | (d & 0x3fu);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

bool is_xml_char(uint32_t cp) {
  return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
         (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

void put_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

bool is_name_start(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':' || c >= 0x80;
}
bool is_name_char(unsigned char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Character data with its line ends read as XML reads them: CR LF and a lone CR become LF.
void append_text(std::string& out, std::string_view raw) {
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\r') {
      out.push_back(raw[i]);
      continue;
    }
    out.push_back('\n');
    if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
  }
}

class XmlReader {
 public:
  XmlReader(std::string_view doc, const XmlLimits& limits) : doc_(doc), limits_(limits) {}

  Result<XmlElement> document() {
    if (doc_.size() > limits_.max_bytes)
      return Error{Errc::corrupt, 0,
                   "XML document of " + std::to_string(doc_.size()) + " bytes is larger than the " +
                       std::to_string(limits_.max_bytes) + " accepted"};
    if (size_t bad_at = first_non_xml_char(doc_); bad_at != std::string_view::npos) {
      pos_ = bad_at;
      return bad("a byte that is not UTF-8 or not an XML character");
    }
    if (at("\xef\xbb\xbf")) pos_ = 3;
    // S3 keeps a slow CompleteMultipartUpload alive by sending white space before the body,
    // so the declaration may follow some (XML itself wants it first).
    skip_space();
    decl_at_ = pos_;
    while (true) {
      skip_space();
      if (done()) return bad("no root element");
      if (at("<!DOCTYPE")) return bad("document type declarations are not accepted");
      if (at("<!--") || at("<?")) {
        SB_TRY(skip_markup());
        continue;
      }
      if (at("<!")) return bad("unexpected markup declaration before the root element");
      if (doc_[pos_] != '<') return bad("text before the root element");
      break;
    }
    SB_ASSIGN(XmlElement root, element(0));
    while (true) {
      skip_space();
      if (done()) return root;
      if (!at("<!--") && !at("<?")) return bad("content after the root element");
      SB_TRY(skip_markup());
    }
  }

 private:
  Error bad(const std::string& why) const {
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < pos_ && i < doc_.size(); ++i)
      if (doc_[i] == '\n') ++line, line_start = i + 1;
    return Error{Errc::corrupt, 0,
                 "malformed XML at line " + std::to_string(line) + ", column " +
                     std::to_string(pos_ - line_start + 1) + ": " + why};
  }

  bool done() const { return pos_ >= doc_.size(); }
  bool at(std::string_view s) const { return doc_.substr(pos_, s.size()) == s; }
  bool skip_space() {
    size_t start = pos_;
    while (!done() && is_space(doc_[pos_])) ++pos_;
    return pos_ > start;
  }

  Result<std::string> name(const char* what) {
    size_t start = pos_;
    if (done() || !is_name_start(static_cast<unsigned char>(doc_[pos_])))
      return bad(std::string("expected ") + what);
    while (!done() && is_name_char(static_cast<unsigned char>(doc_[pos_]))) ++pos_;
    return std::string(doc_.substr(start, pos_ - start));
  }

  // A comment or a processing instruction, at "<!--" or "<?". The XML declaration is a
  // processing instruction that may only open the document.
  Result<void> skip_markup() {
    if (at("<!--")) {
      size_t end = doc_.find("-->", pos_ + 4);
      if (end == std::string_view::npos) return bad("unclosed comment");
      pos_ = end + 3;
      return ok();
    }
    size_t start = pos_;
    pos_ += 2;
    SB_ASSIGN(std::string target, name("a processing instruction's target"));
    if (target.size() == 3 && (target[0] | 0x20) == 'x' && (target[1] | 0x20) == 'm' &&
        (target[2] | 0x20) == 'l' && start != decl_at_) {
      pos_ = start;
      return bad("an XML declaration that does not open the document");
    }
    size_t end = doc_.find("?>", pos_);
    if (end == std::string_view::npos) return bad("unclosed processing instruction");
    pos_ = end + 2;
    return ok();
  }

  // At '&': appends what the reference stands for.
  Result<void> reference(std::string& out) {
    size_t semi = doc_.find(';', pos_);
    if (semi == std::string_view::npos || semi - pos_ > 32)
      return bad("'&' that does not start an entity or character reference");
    std::string_view ref = doc_.substr(pos_ + 1, semi - pos_ - 1);
    static constexpr std::pair<std::string_view, char> kNamed[] = {
        {"lt", '<'}, {"gt", '>'}, {"amp", '&'}, {"quot", '"'}, {"apos", '\''}};
    for (const auto& [entity, c] : kNamed) {
      if (ref == entity) {
        out.push_back(c);
        pos_ = semi + 1;
        return ok();
      }
    }
    if (ref.empty() || ref[0] != '#')
      return bad("unknown entity '&" + util::escape_text(ref) + ";'");
    const bool hex = ref.size() > 1 && ref[1] == 'x';
    std::string_view digits = ref.substr(hex ? 2 : 1);
    uint32_t cp = 0;
    for (char c : digits) {
      uint32_t d = 0;
      if (c >= '0' && c <= '9')
        d = uint32_t(c - '0');
      else if (hex && c >= 'a' && c <= 'f')
        d = uint32_t(c - 'a' + 10);
      else if (hex && c >= 'A' && c <= 'F')
        d = uint32_t(c - 'A' + 10);
      else
        return bad("malformed character reference '&" + util::escape_text(ref) + ";'");
      cp = cp * (hex ? 16 : 10) + d;
      if (cp > 0x10ffff) break;
    }
    if (digits.empty() || !is_xml_char(cp))
      return bad("character reference '&" + util::escape_text(ref) + ";' is not an XML character");
    put_utf8(out, cp);
    pos_ = semi + 1;
    return ok();
  }

  // After a start tag's name: attributes (checked, not kept), then '>' or "/>". Returns
  // whether the element is empty ("/>").
  Result<bool> rest_of_start_tag(const std::string& tag) {
    std::string ignored;
    while (true) {
      bool space = skip_space();
      if (done()) return bad("unexpected end of the document in <" + tag + ">");
      if (doc_[pos_] == '>') {
        ++pos_;
        return false;
      }
      if (at("/>")) {
        pos_ += 2;
        return true;
      }
      if (!space) return bad("expected white space before an attribute of <" + tag + ">");
      SB_ASSIGN(std::string attr, name("an attribute name"));
      skip_space();
      if (done() || doc_[pos_] != '=') return bad("expected '=' after attribute '" + attr + "'");
      ++pos_;
      skip_space();
      if (done() || (doc_[pos_] != '"' && doc_[pos_] != '\''))
        return bad("the value of attribute '" + attr + "' is not quoted");
      const char quote = doc_[pos_++];
      while (true) {
        if (done()) return bad("unclosed value of attribute '" + attr + "'");
        const char c = doc_[pos_];
        if (c == quote) break;
        if (c == '<') return bad("'<' in the value of attribute '" + attr + "'");
        if (c == '&') {
          SB_TRY(reference(ignored));
        } else {
          ++pos_;
        }
      }
      ++pos_;
    }
  }

  // At '<' of a start tag.
  Result<XmlElement> element(size_t depth) {
    if (depth >= limits_.max_depth)
      return bad("elements nested deeper than " + std::to_string(limits_.max_depth));
    if (++elements_ > limits_.max_elements)
      return bad("more than " + std::to_string(limits_.max_elements) + " elements");
    ++pos_;
    SB_ASSIGN(std::string tag, name("an element name"));
    XmlElement e;
    const size_t colon = tag.find(':');
    if (colon == std::string::npos) {
      e.name = tag;
    } else if (colon == 0 || colon + 1 == tag.size() ||
               tag.find(':', colon + 1) != std::string::npos ||
               !is_name_start(static_cast<unsigned char>(tag[colon + 1]))) {
      return bad("malformed qualified name '" + tag + "'");
    } else {
      e.name = tag.substr(colon + 1);
    }
    SB_ASSIGN(bool empty, rest_of_start_tag(tag));
    if (empty) return e;
    while (true) {
      if (done()) return bad("unexpected end of the document inside <" + tag + ">");
      if (at("</")) {
        pos_ += 2;
        SB_ASSIGN(std::string end_tag, name("an end tag's name"));
        if (end_tag != tag) return bad("</" + end_tag + "> closes <" + tag + ">");
        skip_space();
        if (done() || doc_[pos_] != '>') return bad("expected '>' to end </" + tag + ">");
        ++pos_;
        return e;
      }
      if (at("<![CDATA[")) {
        size_t end = doc_.find("]]>", pos_ + 9);
        if (end == std::string_view::npos) return bad("unclosed CDATA section");
        append_text(e.text, doc_.substr(pos_ + 9, end - pos_ - 9));
        pos_ = end + 3;
      } else if (at("<!--") || at("<?")) {
        SB_TRY(skip_markup());
      } else if (at("<!")) {
        return bad("unexpected markup declaration inside <" + tag + ">");
      } else if (doc_[pos_] == '<') {
        SB_ASSIGN(XmlElement child, element(depth + 1));
        e.children.push_back(std::move(child));
      } else if (doc_[pos_] == '&') {
        SB_TRY(reference(e.text));
      } else {
        size_t end = std::min(doc_.find_first_of("<&", pos_), doc_.size());
        std::string_view raw = doc_.substr(pos_, end - pos_);
        if (size_t cdata_end = raw.find("]]>"); cdata_end != std::string_view::npos) {
          pos_ += cdata_end;
          return bad("']]>' in character data");
        }
        append_text(e.text, raw);
        pos_ = end;
      }
    }
  }

  std::string_view doc_;
  XmlLimits limits_;
  size_t pos_ = 0;
  size_t decl_at_ = 0;
  size_t elements_ = 0;
};

}  // namespace

const XmlElement* XmlElement::child(std::string_view child_name) const {
  for (const XmlElement& c : children)
    if (c.name == child_name) return &c;
  return nullptr;
}

size_t first_non_xml_char(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t n = utf8_sequence(text, i, &cp);
    if (n == 0 || !is_xml_char(cp)) return i;
    i += n;
  }
  return std::string_view::npos;
}

size_t first_non_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t n = utf8_sequence(text, i, &cp);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

Result<XmlElement> parse_xml(std::string_view doc, const XmlLimits& limits) {
  return XmlReader(doc, limits).document();
}

Result<std::string> xml_escape(std::string_view text) {
  if (size_t bad_at = first_non_xml_char(text); bad_at != std::string_view::npos)
    return Error{
        Errc::invalid_argument, 0,
        "byte " + std::to_string(bad_at) + " is not UTF-8 or a character XML 1.0 can carry"};
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':
        out += "&#9;";
        break;
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

}  // namespace stripeback::s3
