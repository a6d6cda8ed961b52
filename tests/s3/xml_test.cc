#include "backends/s3/xml.h"

#include <gtest/gtest.h>

#include <string>

namespace stripeback::s3 {
namespace {

TEST(S3Xml, ReadsElementsTextAndDropsPrefixesAndAttributes) {
  auto doc = parse_xml(
      "\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<!-- a comment --><?xml-stylesheet href='x'?>\n"
      "<s3:Root xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\" a='1' b = \"2\">\n"
      "  <s3:Key>dir/file.txt</s3:Key>\n"
      "  <Empty/><Empty2></Empty2>\n"
      "  <Nested><Inner x=\"&lt;&amp;\">deep</Inner></Nested>\n"
      "</s3:Root>\n<!-- trailing -->\n");
  ASSERT_TRUE(doc.has_value()) << doc.error().what;
  EXPECT_EQ(doc->name, "Root");
  ASSERT_EQ(doc->children.size(), 4u);
  ASSERT_NE(doc->child("Key"), nullptr);
  EXPECT_EQ(doc->child("Key")->text, "dir/file.txt");
  EXPECT_EQ(doc->child("Empty")->text, "");
  EXPECT_TRUE(doc->child("Empty2")->children.empty());
  EXPECT_EQ(doc->child("Nested")->child("Inner")->text, "deep");
  EXPECT_EQ(doc->child("Missing"), nullptr);
}

TEST(S3Xml, DecodesEntitiesReferencesAndCdata) {
  auto doc = parse_xml(
      "<k>&lt;a&gt; &amp; &quot;b&quot; &apos;c&apos; &#65;&#x42;&#x1F600;&#233;"
      "<![CDATA[<raw & \"kept\">]]>&#13;</k>");
  ASSERT_TRUE(doc.has_value()) << doc.error().what;
  EXPECT_EQ(doc->text, "<a> & \"b\" 'c' AB\xf0\x9f\x98\x80\xc3\xa9<raw & \"kept\">\r");
}

TEST(S3Xml, ReadsLineEndsAsXmlDoes) {
  auto doc = parse_xml("<k>a\r\nb\rc\nd</k>");
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ(doc->text, "a\nb\nc\nd");
}

TEST(S3Xml, AcceptsWhiteSpaceBeforeTheDeclaration) {
  // S3 sends white space to keep a slow CompleteMultipartUpload alive.
  auto doc = parse_xml("  \n \n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<k/>");
  ASSERT_TRUE(doc.has_value()) << doc.error().what;
  EXPECT_EQ(doc->name, "k");
}

struct Malformed {
  std::string doc;
  std::string cause;
};

TEST(S3Xml, RefusesMalformedDocumentsNamingTheCause) {
  const Malformed cases[] = {
      {"", "no root element"},
      {"   ", "no root element"},
      {"<a>", "unexpected end of the document inside <a>"},
      {"<a><b></b>", "unexpected end of the document inside <a>"},
      {"<a></b>", "</b> closes <a>"},
      {"<a></a", "expected '>' to end </a>"},
      {"<a>&nbsp;</a>", "unknown entity '&nbsp;'"},
      {"<a>fish & chips</a>", "'&' that does not start an entity"},
      {"<a>&#0;</a>", "'&#0;' is not an XML character"},
      {"<a>&#xD800;</a>", "'&#xD800;' is not an XML character"},
      {"<a>&#x110000;</a>", "is not an XML character"},
      {"<a>&#99999999999999999999;</a>", "is not an XML character"},
      {"<a>&#;</a>", "is not an XML character"},
      {"<a>&#12a;</a>", "malformed character reference '&#12a;'"},
      {"<a>&#X41;</a>", "malformed character reference"},
      {"<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", "document type declarations are not accepted"},
      {"<a/><b/>", "content after the root element"},
      {"<a/>text", "content after the root element"},
      {"text<a/>", "text before the root element"},
      {"<a b=c/>", "the value of attribute 'b' is not quoted"},
      {"<a b/>", "expected '=' after attribute 'b'"},
      {"<a b='<'/>", "'<' in the value of attribute 'b'"},
      {"<a b='1'c='2'/>", "expected white space before an attribute of <a>"},
      {"<a b='1/>", "unclosed value of attribute 'b'"},
      {"<a b='&bogus;'/>", "unknown entity"},
      {"<a\x01/>", "not UTF-8 or not an XML character"},
      {"<a>\xff</a>", "not UTF-8 or not an XML character"},
      {"<a>\xc0\xaf</a>", "not UTF-8 or not an XML character"},
      {"<a>\xed\xa0\x80</a>", "not UTF-8 or not an XML character"},
      {"<a>\xef\xbf\xbe</a>", "not UTF-8 or not an XML character"},
      {"<a>]]></a>", "']]>' in character data"},
      {"<a><![CDATA[x</a>", "unclosed CDATA section"},
      {"<a><!-- x</a>", "unclosed comment"},
      {"<a><? x</a>", "expected a processing instruction's target"},
      {"<a><?pi x</a>", "unclosed processing instruction"},
      {"<a><!ELEMENT a ANY></a>", "unexpected markup declaration inside <a>"},
      {"<!ELEMENT a ANY><a/>", "unexpected markup declaration before the root element"},
      {"<a><?xml version='1.0'?></a>", "an XML declaration that does not open the document"},
      {"<a/><?XML version='1.0'?>", "an XML declaration that does not open the document"},
      {"<:a/>", "malformed qualified name ':a'"},
      {"<a:/>", "malformed qualified name 'a:'"},
      {"<a:b:c/>", "malformed qualified name 'a:b:c'"},
      {"<a:1b/>", "malformed qualified name 'a:1b'"},
      {"<1a/>", "expected an element name"},
      {"< a/>", "expected an element name"},
      {"<a></ a>", "expected an end tag's name"},
  };
  for (const auto& c : cases) {
    auto doc = parse_xml(c.doc);
    ASSERT_FALSE(doc.has_value()) << "accepted: " << c.doc;
    EXPECT_EQ(doc.error().code, Errc::corrupt) << c.doc;
    EXPECT_NE(doc.error().what.find("malformed XML at line "), std::string::npos)
        << doc.error().what;
    EXPECT_NE(doc.error().what.find(c.cause), std::string::npos)
        << "for " << c.doc << " got: " << doc.error().what;
  }
}

TEST(S3Xml, ErrorsGiveTheLineAndColumn) {
  auto doc = parse_xml("<a>\n  <b>&bad;</b>\n</a>");
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().what, "malformed XML at line 2, column 6: unknown entity '&bad;'");
}

TEST(S3Xml, EnforcesItsLimits) {
  std::string deep;
  for (int i = 0; i < 33; ++i) deep += "<a>";
  auto doc = parse_xml(deep);
  ASSERT_FALSE(doc.has_value());
  EXPECT_NE(doc.error().what.find("nested deeper than 32"), std::string::npos);

  std::string many = "<r>";
  for (int i = 0; i < 10; ++i) many += "<e/>";
  many += "</r>";
  XmlLimits limits;
  limits.max_elements = 10;
  doc = parse_xml(many, limits);
  ASSERT_FALSE(doc.has_value());
  EXPECT_NE(doc.error().what.find("more than 10 elements"), std::string::npos);
  limits.max_elements = 11;
  EXPECT_TRUE(parse_xml(many, limits).has_value());

  limits.max_bytes = many.size() - 1;
  doc = parse_xml(many, limits);
  ASSERT_FALSE(doc.has_value());
  EXPECT_EQ(doc.error().code, Errc::corrupt);
  EXPECT_NE(doc.error().what.find("larger than the"), std::string::npos);
}

TEST(S3Xml, EscapedTextReadsBackAsItWas) {
  const std::string text = "a&b <c> \"d\" 'e'\tf\r\ng\rh \xe2\x82\xac";
  auto escaped = xml_escape(text);
  ASSERT_TRUE(escaped.has_value());
  EXPECT_EQ(*escaped,
            "a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;&#9;f&#13;&#10;g&#13;h \xe2\x82\xac");
  auto doc = parse_xml("<k>" + *escaped + "</k>");
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ(doc->text, text);
}

TEST(S3Xml, EscapeRefusesWhatXmlCannotCarry) {
  for (const std::string& bad : {std::string("a\x01"), std::string("\0", 1), std::string("\xff"),
                                 std::string("ok\xef\xbf\xbf")}) {
    auto escaped = xml_escape(bad);
    ASSERT_FALSE(escaped.has_value());
    EXPECT_EQ(escaped.error().code, Errc::invalid_argument);
    EXPECT_NE(escaped.error().what.find("XML 1.0 can carry"), std::string::npos);
  }
  EXPECT_EQ(first_non_xml_char("ab\x01"), 2u);
  EXPECT_EQ(first_non_utf8("ab\x01"), std::string::npos);
  EXPECT_EQ(first_non_utf8("ab\xe2\x82"), 2u);
}

}  // namespace
}  // namespace stripeback::s3
