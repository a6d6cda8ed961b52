// Escaping of untrusted text (file names, tags, URLs, messages that quote them) for output
// meant for a terminal or a line-oriented log. JSON output does not use this: JsonWriter
// escapes by JSON's rules.
#pragma once

#include <string>
#include <string_view>

namespace stripeback::util {

// `text` with every byte that could move the cursor, change the terminal's state or break a
// line written C-style: "\n", "\r", "\t", "\xNN" (two lower-case hex digits) for the other
// control bytes (0x00-0x1f, 0x7f), for C1 controls (U+0080-U+009F, whose UTF-8 bytes some
// terminals obey) and for every byte that is not part of valid UTF-8. A backslash becomes
// "\\", so the result reads back unambiguously. Valid printable UTF-8 passes unchanged;
// text that needs no escaping comes back as it was.
std::string escape_text(std::string_view text);

}  // namespace stripeback::util
