#include "backends/tape/sense.h"

#include <gtest/gtest.h>

#include <vector>

namespace stripeback::tape {
namespace {

// Fixed format: byte 2 = FM/EOM/ILI + key, bytes 3..6 INFO, 12/13 ASC/ASCQ.
std::vector<uint8_t> fixed(uint8_t flags_key, uint8_t asc, uint8_t ascq, int32_t info = 0,
                           bool info_valid = false) {
  std::vector<uint8_t> s(18, 0);
  s[0] = static_cast<uint8_t>(0x70 | (info_valid ? 0x80 : 0));
  s[2] = flags_key;
  auto u = static_cast<uint32_t>(info);
  s[3] = static_cast<uint8_t>(u >> 24);
  s[4] = static_cast<uint8_t>(u >> 16);
  s[5] = static_cast<uint8_t>(u >> 8);
  s[6] = static_cast<uint8_t>(u);
  s[7] = 10;
  s[12] = asc;
  s[13] = ascq;
  return s;
}

// Descriptor format with an information descriptor and a stream-commands descriptor.
std::vector<uint8_t> descriptor(uint8_t key, uint8_t asc, uint8_t ascq, uint8_t stream_flags,
                                int64_t info) {
  std::vector<uint8_t> s{0x72, key, asc, ascq, 0, 0, 0, 0};
  std::vector<uint8_t> d_info{0x00, 0x0a, 0x80, 0};
  auto u = static_cast<uint64_t>(info);
  for (int i = 7; i >= 0; --i) d_info.push_back(static_cast<uint8_t>(u >> (8 * i)));
  std::vector<uint8_t> d_stream{0x04, 0x02, 0x00, stream_flags};
  s.insert(s.end(), d_info.begin(), d_info.end());
  s.insert(s.end(), d_stream.begin(), d_stream.end());
  s[7] = static_cast<uint8_t>(s.size() - 8);
  return s;
}

struct Case {
  const char* name;
  std::vector<uint8_t> raw;
  Condition condition;
  bool info_valid;
  int64_t info;
};

TEST(Sense, TableDecodesFixedAndDescriptorFormats) {
  const std::vector<Case> cases{
      {"fixed filemark on read", fixed(0x80, 0, 1, 3, true), Condition::filemark, true, 3},
      {"tgt filemark (flag only)", fixed(0x80, 0, 0, 7, true), Condition::filemark, true, 7},
      {"tgt end of medium warning", fixed(0x40, 0, 0), Condition::early_warning, false, 0},
      {"early warning 00/02", fixed(0x40, 0, 2, 0, true), Condition::early_warning, true, 0},
      {"ili with residual", fixed(0x20, 0, 0, 512, true), Condition::ili, true, 512},
      {"ili negative residual", fixed(0x20, 0, 0, -100, true), Condition::ili, true, -100},
      {"blank check", fixed(0x08, 0, 5, 1, true), Condition::end_of_data, true, 1},
      {"tgt space into end of data", fixed(0x00, 0, 5), Condition::end_of_data, false, 0},
      {"not ready, no medium", fixed(0x02, 0x3a, 0), Condition::not_ready, false, 0},
      {"becoming ready", fixed(0x02, 0x04, 0x01), Condition::becoming_ready, false, 0},
      {"tgt medium error at end of data", fixed(0x03, 0x31, 0), Condition::medium_error, false, 0},
      {"write error", fixed(0x03, 0x0c, 0), Condition::medium_error, false, 0},
      {"illegal request", fixed(0x05, 0x20, 0), Condition::illegal_request, false, 0},
      {"unit attention", fixed(0x06, 0x28, 0), Condition::unit_attention, false, 0},
      {"write protected", fixed(0x07, 0x27, 0), Condition::data_protect, false, 0},
      {"volume overflow", fixed(0x4d, 0, 2, 5, true), Condition::volume_overflow, true, 5},
      {"recovered with filemark", fixed(0x81, 0x17, 0), Condition::filemark, false, 0},
      {"descriptor filemark", descriptor(0x00, 0, 1, 0x80, 4), Condition::filemark, true, 4},
      {"descriptor ili", descriptor(0x00, 0, 0, 0x20, -8), Condition::ili, true, -8},
      {"descriptor eom", descriptor(0x00, 0, 2, 0x40, 0), Condition::early_warning, true, 0},
      {"descriptor not ready", descriptor(0x02, 0x3a, 0, 0, 0), Condition::not_ready, true, 0},
      {"descriptor blank check", descriptor(0x08, 0, 5, 0, 2), Condition::end_of_data, true, 2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Sense s = decode_sense(c.raw);
    EXPECT_TRUE(s.valid);
    EXPECT_EQ(s.condition, c.condition) << condition_name(s.condition) << " " << describe(s);
    EXPECT_EQ(s.info_valid, c.info_valid);
    if (c.info_valid) {
      EXPECT_EQ(s.info, c.info);
    }
  }
}

TEST(Sense, GarbageIsNotMisread) {
  EXPECT_EQ(decode_sense({}).condition, Condition::none);
  std::vector<uint8_t> junk{0x12, 0x34, 0x56};
  Sense s = decode_sense(junk);
  EXPECT_FALSE(s.valid);
  EXPECT_EQ(s.condition, Condition::other);
  std::vector<uint8_t> short_fixed{0x70, 0x00};
  EXPECT_EQ(decode_sense(short_fixed).condition, Condition::other);
}

TEST(Sense, DescribeNamesKeyCodesAndMeaning) {
  auto s = decode_sense(fixed(0x03, 0x31, 0));
  EXPECT_NE(describe(s).find("MEDIUM ERROR 03/31/00"), std::string::npos) << describe(s);
  auto nr = decode_sense(fixed(0x02, 0x3a, 0));
  EXPECT_NE(describe(nr).find("no medium"), std::string::npos) << describe(nr);
  EXPECT_EQ(errc_for(nr.condition), Errc::busy);
  EXPECT_EQ(errc_for(Condition::early_warning), Errc::end_of_medium);
}

}  // namespace
}  // namespace stripeback::tape
