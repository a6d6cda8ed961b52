#include "engine/restore/delta_undo.h"

#include <sys/stat.h>

#include <array>
#include <cstring>
#include <vector>

#include "util/bytes.h"
#include "util/digest.h"

namespace stripeback::engine {
namespace {

constexpr char kMagic[8] = {'S', 'B', 'U', 'N', 'D', 'O', '0', '1'};
constexpr uint32_t kRecordMagic = 0x52554253;  // "SBUR"
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 64;
constexpr size_t kRecordHead = 32;
constexpr uint32_t kMaxRecord = 64u << 20;

}  // namespace

Result<std::unique_ptr<UndoLog>> UndoLog::create(storage::Directory& dir, const std::string& name,
                                                 const std::string& shown, const OldFile& old) {
  std::unique_ptr<UndoLog> u(new UndoLog());
  u->shown_ = shown;
  storage::CreateOptions co;
  co.direct = false;
  co.mode = 0600;
  auto made = dir.create(name, co);
  if (!made) return made.error().wrap("unable to create the undo log of '" + shown + "'");
  u->out_ = std::move(*made);
  std::array<uint8_t, kHeader> h{};
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  util::put_le32(h.data() + 8, kVersion);
  util::put_le32(h.data() + 12, old.mode);
  util::put_le32(h.data() + 16, old.uid);
  util::put_le32(h.data() + 20, old.gid);
  util::put_le64(h.data() + 24, old.size);
  util::put_le64(h.data() + 32, static_cast<uint64_t>(old.mtime_ns));
  SB_TRY(u->out_->write_at(reinterpret_cast<const std::byte*>(h.data()), kHeader, 0));
  u->end_ = kHeader;
  return u;
}

Result<void> UndoLog::save(uint64_t off, const std::byte* data, uint32_t len) {
  uint8_t head[kRecordHead];
  util::put_le32(head, kRecordMagic);
  util::put_le32(head + 4, len);
  util::put_le64(head + 8, off);
  util::Digest d = util::digest(data, len);
  std::memcpy(head + 16, d.data(), d.size());
  uint64_t at = 0;
  {
    std::lock_guard lock(mu_);
    at = end_;
    end_ += kRecordHead + len;
    bytes_ += len;
  }
  auto fail_save = [&](const Error& e) {
    return e.wrap("unable to save the old bytes of '" + shown_ + "' in its undo log");
  };
  if (auto r = out_->write_at(reinterpret_cast<const std::byte*>(head), kRecordHead, at); !r)
    return fail_save(r.error());
  if (auto r = out_->write_at(data, len, at + kRecordHead); !r) return fail_save(r.error());
  return ok();
}

Result<void> UndoLog::commit() {
  if (auto r = out_->commit(); !r)
    return r.error().wrap("unable to make the undo log of '" + shown_ + "' durable");
  return ok();
}

Result<void> UndoLog::close() { return out_->close(); }

uint64_t UndoLog::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::string distrust(const storage::FileInfo& st, std::optional<uint32_t> owner,
                     bool private_mode) {
  if (!S_ISREG(st.mode)) return "is not a regular file";
  if (st.nlink != 1) return "has " + std::to_string(st.nlink) + " links";
  if (owner && st.uid != *owner)
    return "is owned by uid " + std::to_string(st.uid) + ", not " + std::to_string(*owner);
  if (private_mode && (st.mode & 022) != 0) return "is writable by others";
  return "";
}

Result<void> roll_back_delta(storage::Directory& dir, const std::string& temp,
                             const std::string& undo, const std::string& final, bool set_owner,
                             std::optional<uint32_t> log_owner) {
  const std::string shown = dir.location().join(final).str();
  auto bad = [&](const std::string& why) {
    return fail(Errc::corrupt, "unable to put '" + shown + "' back as it was: its undo log " + why);
  };
  auto refuse = [&](const std::string& what, const std::string& why) {
    return fail(Errc::invalid_argument, "unable to put '" + shown + "' back as it was: " + what + " '" +
                                  dir.location().join(what == "its undo log" ? undo : temp).str() +
                                  "' " + why + "; left alone");
  };
  SB_ASSIGN(auto in, dir.open(undo, {false}));
  {
    SB_ASSIGN(storage::FileInfo st, in->stat());
    if (auto why = distrust(st, log_owner, log_owner.has_value()); !why.empty())
      return refuse("its undo log", why);
  }
  std::vector<std::byte> head(kHeader);
  SB_ASSIGN(size_t got, in->read_at(head.data(), kHeader, 0));
  const auto* h = reinterpret_cast<const uint8_t*>(head.data());
  if (got < kHeader || std::memcmp(h, kMagic, sizeof kMagic) != 0 ||
      util::get_le32(h + 8) != kVersion)
    return bad("is not one");
  OldFile old;
  old.mode = util::get_le32(h + 12);
  old.uid = util::get_le32(h + 16);
  old.gid = util::get_le32(h + 20);
  old.size = util::get_le64(h + 24);
  old.mtime_ns = static_cast<int64_t>(util::get_le64(h + 32));
  SB_ASSIGN(auto out, dir.open_write(temp, {false}));
  {
    auto st = out->stat();
    if (!st) return refuse("its temporary", "cannot be checked (" + st.error().what + ")");
    if (auto why = distrust(*st, std::nullopt, false); !why.empty()) {
      out->abandon();
      return refuse("its temporary", why);
    }
  }
  uint64_t at = kHeader;
  std::vector<std::byte> data;
  while (true) {
    uint8_t rh[kRecordHead];
    SB_ASSIGN(size_t n, in->read_at(reinterpret_cast<std::byte*>(rh), kRecordHead, at));
    if (n == 0) break;
    if (n < kRecordHead || util::get_le32(rh) != kRecordMagic) return bad("is cut short");
    const uint32_t len = util::get_le32(rh + 4);
    const uint64_t off = util::get_le64(rh + 8);
    if (len > kMaxRecord || off + len > old.size) return bad("holds a record out of range");
    data.resize(len);
    SB_ASSIGN(size_t m, in->read_at(data.data(), len, at + kRecordHead));
    util::Digest d = util::digest(data.data(), len);
    if (m < len || std::memcmp(d.data(), rh + 16, d.size()) != 0) return bad("is damaged");
    SB_TRY(out->write_at(data.data(), len, off));
    at += kRecordHead + len;
  }
  SB_TRY(out->truncate(old.size));
  SB_TRY(out->commit());
  SB_TRY(out->set_attrs(storage::Attrs::of(set_owner, old.uid, old.gid, old.mode, old.mtime_ns)));
  SB_TRY(out->close());
  if (auto r = dir.rename(temp, final, /*replace=*/false); !r)
    return r.error().wrap("unable to put '" + shown + "' back in place");
  SB_TRY(dir.sync());
  return dir.remove(undo);
}

}  // namespace stripeback::engine
