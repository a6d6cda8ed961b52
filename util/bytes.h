// Little-endian encoding helpers for the on-disk formats (pieces, catalog records).
// ByteWriter appends to a growing buffer; ByteReader reads a bounded span and remembers
// whether any read ran past its end, so a decoder checks `ok()` once at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stripeback::util {

inline void put_le16(uint8_t* p, uint16_t v) { p[0] = uint8_t(v); p[1] = uint8_t(v >> 8); }
inline void put_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void put_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline uint16_t get_le16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t get_le32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t get_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  // Encoded in place and appended (a resize and a write into the new end made GCC 12 at
  // -O3 report a false overflow).
  void u16(uint16_t v) { uint8_t b[2]; put_le16(b, v); bytes(b, sizeof b); }
  void u32(uint32_t v) { uint8_t b[4]; put_le32(b, v); bytes(b, sizeof b); }
  void u64(uint64_t v) { uint8_t b[8]; put_le64(b, v); bytes(b, sizeof b); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
  }
  // A string as u32 length + bytes.
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  size_t size() const { return buf_.size(); }
  std::vector<uint8_t>& buffer() { return buf_; }
  std::vector<uint8_t> take() { return std::move(buf_); }

 private:
  std::vector<uint8_t> buf_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> s) : s_(s) {}
  uint8_t u8() { return need(1) ? s_[pos_++] : 0; }
  uint16_t u16() { return need(2) ? get_le16(adv(2)) : 0; }
  uint32_t u32() { return need(4) ? get_le32(adv(4)) : 0; }
  uint64_t u64() { return need(8) ? get_le64(adv(8)) : 0; }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  void bytes(void* out, size_t n) {
    if (need(n)) std::memcpy(out, adv(n), n);
  }
  std::string str(size_t max_len = 1u << 20) {
    uint32_t n = u32();
    if (n > max_len || !need(n)) {
      ok_ = false;
      return {};
    }
    const uint8_t* p = adv(n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  bool ok() const { return ok_; }
  size_t position() const { return pos_; }
  size_t remaining() const { return s_.size() - pos_; }

 private:
  bool need(size_t n) {
    if (!ok_ || s_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  const uint8_t* adv(size_t n) {
    const uint8_t* p = s_.data() + pos_;
    pos_ += n;
    return p;
  }
  std::span<const uint8_t> s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace stripeback::util
