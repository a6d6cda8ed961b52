#include "backends/tape/sense.h"

#include <array>
#include <cstdio>

namespace stripeback::tape {
namespace {

constexpr int kAny = -1;

struct SenseRow {
  SenseKey key;
  int asc, ascq;  // kAny matches every value
  Condition condition;
  const char* text;
};

// The one table. Rows are tried in order; the first match wins, so specific ASC/ASCQ rows
// come before a key's catch-all row.
constexpr std::array kTable{
    SenseRow{SenseKey::no_sense, 0x00, 0x01, Condition::filemark, "filemark detected"},
    SenseRow{SenseKey::no_sense, 0x00, 0x02, Condition::early_warning, "end of partition/medium detected"},
    SenseRow{SenseKey::no_sense, 0x00, 0x04, Condition::beginning, "beginning of partition/medium detected"},
    SenseRow{SenseKey::no_sense, 0x00, 0x05, Condition::end_of_data, "end of data detected"},
    SenseRow{SenseKey::no_sense, kAny, kAny, Condition::none, "no sense"},
    SenseRow{SenseKey::recovered_error, kAny, kAny, Condition::recovered, "recovered error"},
    SenseRow{SenseKey::not_ready, 0x04, 0x01, Condition::becoming_ready, "drive is becoming ready"},
    SenseRow{SenseKey::not_ready, 0x3a, kAny, Condition::not_ready, "no medium loaded"},
    SenseRow{SenseKey::not_ready, kAny, kAny, Condition::not_ready, "drive not ready"},
    SenseRow{SenseKey::medium_error, 0x31, 0x00, Condition::medium_error, "medium format corrupted (tgt: read at end of data or of a block of another size)"},
    SenseRow{SenseKey::medium_error, 0x0c, 0x00, Condition::medium_error, "write error"},
    SenseRow{SenseKey::medium_error, kAny, kAny, Condition::medium_error, "medium error"},
    SenseRow{SenseKey::hardware_error, kAny, kAny, Condition::hardware_error, "hardware error"},
    SenseRow{SenseKey::illegal_request, 0x20, 0x00, Condition::illegal_request, "invalid command operation code"},
    SenseRow{SenseKey::illegal_request, 0x24, 0x00, Condition::illegal_request, "invalid field in CDB"},
    SenseRow{SenseKey::illegal_request, 0x26, kAny, Condition::illegal_request, "invalid field in parameter list"},
    SenseRow{SenseKey::illegal_request, kAny, kAny, Condition::illegal_request, "illegal request"},
    SenseRow{SenseKey::unit_attention, 0x28, 0x00, Condition::unit_attention, "medium may have changed"},
    SenseRow{SenseKey::unit_attention, 0x29, kAny, Condition::unit_attention, "power on or reset"},
    SenseRow{SenseKey::unit_attention, kAny, kAny, Condition::unit_attention, "unit attention"},
    SenseRow{SenseKey::data_protect, kAny, kAny, Condition::data_protect, "medium is write protected"},
    SenseRow{SenseKey::blank_check, kAny, kAny, Condition::end_of_data, "blank check: end of data"},
    SenseRow{SenseKey::aborted_command, kAny, kAny, Condition::aborted, "command aborted"},
    SenseRow{SenseKey::volume_overflow, kAny, kAny, Condition::volume_overflow, "volume overflow: physical end of medium"},
};

const SenseRow* lookup(SenseKey key, uint8_t asc, uint8_t ascq) {
  for (const SenseRow& r : kTable) {
    if (r.key != key) continue;
    if (r.asc != kAny && r.asc != asc) continue;
    if (r.ascq != kAny && r.ascq != ascq) continue;
    return &r;
  }
  return nullptr;
}

int64_t be_signed(std::span<const uint8_t> b) {
  uint64_t v = 0;
  for (uint8_t x : b) v = (v << 8) | x;
  // Sign-extend from the field width.
  const unsigned bits = static_cast<unsigned>(b.size() * 8);
  if (bits < 64 && (v >> (bits - 1)) & 1) v |= ~uint64_t{0} << bits;
  return static_cast<int64_t>(v);
}

}  // namespace

Sense decode_sense(std::span<const uint8_t> raw) {
  Sense s;
  if (raw.size() < 2) {
    s.condition = raw.empty() ? Condition::none : Condition::other;
    return s;
  }
  const uint8_t code = raw[0] & 0x7f;
  if (code == 0x70 || code == 0x71) {
    if (raw.size() < 3) {
      s.condition = Condition::other;
      return s;
    }
    s.valid = true;
    s.filemark = raw[2] & 0x80;
    s.eom = raw[2] & 0x40;
    s.ili = raw[2] & 0x20;
    s.key = static_cast<SenseKey>(raw[2] & 0x0f);
    if (raw.size() >= 7) {
      s.info_valid = raw[0] & 0x80;
      s.info = be_signed(raw.subspan(3, 4));
    }
    if (raw.size() >= 14) {
      s.asc = raw[12];
      s.ascq = raw[13];
    }
  } else if (code == 0x72 || code == 0x73) {
    if (raw.size() < 4) {
      s.condition = Condition::other;
      return s;
    }
    s.valid = true;
    s.key = static_cast<SenseKey>(raw[1] & 0x0f);
    s.asc = raw[2];
    s.ascq = raw[3];
    size_t end = raw.size() >= 8 ? std::min(raw.size(), size_t{8} + raw[7]) : raw.size();
    for (size_t at = 8; at + 2 <= end;) {
      const uint8_t type = raw[at];
      const size_t len = size_t{2} + raw[at + 1];
      if (at + len > end) break;
      auto d = raw.subspan(at, len);
      if (type == 0x00 && len >= 12) {  // information
        s.info_valid = d[2] & 0x80;
        s.info = be_signed(d.subspan(4, 8));
      } else if (type == 0x04 && len >= 4) {  // stream commands
        s.filemark = d[3] & 0x80;
        s.eom = d[3] & 0x40;
        s.ili = d[3] & 0x20;
      }
      at += len;
    }
  } else {
    s.condition = Condition::other;
    return s;
  }

  const SenseRow* row = lookup(s.key, s.asc, s.ascq);
  s.condition = row ? row->condition : Condition::other;
  // With NO SENSE or RECOVERED ERROR the stream flags carry the news.
  if (s.condition == Condition::none || s.condition == Condition::recovered) {
    if (s.filemark)
      s.condition = Condition::filemark;
    else if (s.eom)
      s.condition = Condition::early_warning;
    else if (s.ili)
      s.condition = Condition::ili;
  }
  return s;
}

const char* condition_name(Condition c) {
  switch (c) {
    case Condition::none: return "none";
    case Condition::recovered: return "recovered";
    case Condition::filemark: return "filemark";
    case Condition::early_warning: return "early warning";
    case Condition::end_of_data: return "end of data";
    case Condition::beginning: return "beginning of medium";
    case Condition::ili: return "incorrect length";
    case Condition::not_ready: return "not ready";
    case Condition::becoming_ready: return "becoming ready";
    case Condition::medium_error: return "medium error";
    case Condition::hardware_error: return "hardware error";
    case Condition::illegal_request: return "illegal request";
    case Condition::unit_attention: return "unit attention";
    case Condition::data_protect: return "write protected";
    case Condition::volume_overflow: return "volume overflow";
    case Condition::aborted: return "aborted";
    case Condition::other: return "unknown sense";
  }
  return "unknown sense";
}

std::string describe(const Sense& s) {
  static constexpr std::array<const char*, 16> kKeys{
      "NO SENSE",        "RECOVERED ERROR", "NOT READY",     "MEDIUM ERROR",
      "HARDWARE ERROR",  "ILLEGAL REQUEST", "UNIT ATTENTION", "DATA PROTECT",
      "BLANK CHECK",     "VENDOR SPECIFIC", "COPY ABORTED",  "ABORTED COMMAND",
      "EQUAL",           "VOLUME OVERFLOW", "MISCOMPARE",    "COMPLETED"};
  if (!s.valid) return "unrecognized sense data";
  char code[16];
  std::snprintf(code, sizeof code, "%02x/%02x/%02x", static_cast<unsigned>(s.key), s.asc, s.ascq);
  const SenseRow* row = lookup(s.key, s.asc, s.ascq);
  std::string out = std::string(kKeys[static_cast<size_t>(s.key) & 0xf]) + " " + code;
  if (row) out += std::string(" (") + row->text + ")";
  if (s.filemark) out += " [filemark]";
  if (s.eom) out += " [eom]";
  if (s.ili) out += " [ili]";
  return out;
}

Errc errc_for(Condition c) {
  switch (c) {
    case Condition::not_ready:
    case Condition::becoming_ready:
    case Condition::unit_attention: return Errc::busy;
    case Condition::early_warning:
    case Condition::volume_overflow: return Errc::end_of_medium;
    case Condition::illegal_request: return Errc::unsupported;
    case Condition::end_of_data: return Errc::not_found;
    case Condition::aborted: return Errc::cancelled;
    default: return Errc::io;
  }
}

}  // namespace stripeback::tape
