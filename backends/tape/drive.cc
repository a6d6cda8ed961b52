#include "backends/tape/drive.h"

#include <algorithm>
#include <array>
#include <thread>

#include "backends/tape/cdb.h"

namespace stripeback::tape {
namespace {

std::string trimmed(const uint8_t* p, size_t n) {
  std::string s(reinterpret_cast<const char*>(p), n);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

std::span<uint8_t> writable(std::span<const uint8_t> d) {
  // Transports take one span type; write commands never modify it.
  return {const_cast<uint8_t*>(d.data()), d.size()};
}

}  // namespace

Result<void> check_block_size(uint32_t block_size, const BlockLimits& limits,
                              const std::string& drive) {
  if (limits.max != 0 && block_size > limits.max)
    return fail(Errc::invalid_argument, "tape block size " + std::to_string(block_size) +
                                            " is above the maximum block size " +
                                            std::to_string(limits.max) + " of drive '" +
                                            drive + "'");
  if (block_size < limits.min)
    return fail(Errc::invalid_argument, "tape block size " + std::to_string(block_size) +
                                            " is below the minimum block size " +
                                            std::to_string(limits.min) + " of drive '" +
                                            drive + "'");
  if (block_size % limits.granule() != 0)
    return fail(Errc::invalid_argument,
                "tape block size " + std::to_string(block_size) +
                    " is not a multiple of the granularity " + std::to_string(limits.granule()) +
                    " of drive '" + drive + "'");
  return ok();
}

TapeDrive::TapeDrive(std::unique_ptr<Transport> transport) : t_(std::move(transport)) {}

Result<std::unique_ptr<TapeDrive>> TapeDrive::open(const std::string& url) {
  SB_ASSIGN(auto t, open_transport(url));
  return std::make_unique<TapeDrive>(std::move(t));
}

Result<TapeDrive::Outcome> TapeDrive::run(std::span<const uint8_t> cdb, DataDir dir,
                                          std::span<uint8_t> data) {
  ScsiCommand cmd{cdb, dir, data};
  SB_ASSIGN(ScsiReply reply, t_->execute(cmd));
  if (reply.status != kStatusGood && reply.status != kStatusCheckCondition)
    return fail(reply.status == kStatusBusy ? Errc::busy : Errc::io,
                "tape '" + name() + "': " + opcode_name(cdb[0]) + " returned SCSI status 0x" +
                    std::to_string(reply.status));
  Outcome o{std::move(reply), {}};
  if (o.reply.status == kStatusCheckCondition) o.sense = decode_sense(o.reply.sense);
  return o;
}

Error TapeDrive::sense_error(std::span<const uint8_t> cdb, const Sense& s) const {
  std::string what = "tape '" + name() + "': " + opcode_name(cdb[0]) + " failed: " + describe(s);
  if (s.condition == Condition::not_ready || s.condition == Condition::becoming_ready)
    what += " (drive not ready: is a tape loaded?)";
  return Error{errc_for(s.condition), 0, what};
}

Result<void> TapeDrive::test_unit_ready() {
  auto c = cdb::test_unit_ready();
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  if (o.reply.status == kStatusGood) return ok();
  return sense_error(c, o.sense);
}

Result<void> TapeDrive::wait_ready(std::chrono::milliseconds max,
                                   const std::function<void(const std::string&)>& waiting) {
  const auto until = std::chrono::steady_clock::now() + max;
  bool told = false;
  for (;;) {
    auto r = test_unit_ready();
    if (r) return ok();
    // Unit attention (medium changed, reset) is news, not a failure: ask again.
    if (r.error().code != Errc::busy) return r;
    if (std::chrono::steady_clock::now() >= until)
      return Error{Errc::busy, 0,
                   r.error().what + "; gave up waiting after " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(max).count()) + " s"};
    if (!told && waiting) {
      waiting("waiting for tape in '" + name() + "': " + r.error().what);
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Result<InquiryData> TapeDrive::inquiry() {
  std::array<uint8_t, 96> buf{};
  auto c = cdb::inquiry(static_cast<uint16_t>(buf.size()));
  SB_ASSIGN(Outcome o, run(c, DataDir::read, buf));
  if (o.reply.status != kStatusGood) return sense_error(c, o.sense);
  InquiryData d;
  d.device_type = buf[0] & 0x1f;
  d.vendor = trimmed(&buf[8], 8);
  d.product = trimmed(&buf[16], 16);
  d.revision = trimmed(&buf[32], 4);
  return d;
}

Result<BlockLimits> TapeDrive::read_block_limits() {
  std::array<uint8_t, 6> buf{};
  auto c = cdb::read_block_limits();
  SB_ASSIGN(Outcome o, run(c, DataDir::read, buf));
  if (o.reply.status != kStatusGood) return sense_error(c, o.sense);
  BlockLimits l;
  l.granularity = buf[0] & 0x1f;
  l.max = (uint32_t{buf[1]} << 16) | (uint32_t{buf[2]} << 8) | buf[3];
  l.min = (uint32_t{buf[4]} << 8) | buf[5];
  return l;
}

Result<uint32_t> TapeDrive::block_size() {
  std::array<uint8_t, 12> buf{};
  auto c = cdb::mode_sense6(0x00, static_cast<uint8_t>(buf.size()));
  SB_ASSIGN(Outcome o, run(c, DataDir::read, buf));
  if (o.reply.status != kStatusGood) return sense_error(c, o.sense);
  if (buf[3] < 8)
    return fail(Errc::io, "tape '" + name() + "': MODE SENSE returned no block descriptor");
  return (uint32_t{buf[9]} << 16) | (uint32_t{buf[10]} << 8) | buf[11];
}

Result<void> TapeDrive::set_block_size(uint32_t size) {
  auto param = cdb::mode_select_block_size(size);
  auto c = cdb::mode_select6(static_cast<uint8_t>(param.size()));
  SB_ASSIGN(Outcome o, run(c, DataDir::write, param));
  if (o.reply.status != kStatusGood) return sense_error(c, o.sense);
  return ok();
}

Result<WriteResult> TapeDrive::write_fixed(std::span<const uint8_t> data, uint32_t block_size) {
  if (block_size == 0 || data.size() % block_size != 0 || data.size() / block_size > cdb::kMax24)
    return fail(Errc::invalid_argument, "tape '" + name() + "': write of " +
                                            std::to_string(data.size()) +
                                            " bytes is not whole blocks of " +
                                            std::to_string(block_size));
  const auto count = static_cast<uint32_t>(data.size() / block_size);
  auto c = cdb::write6(cdb::Fixed::yes, count);
  SB_ASSIGN(Outcome o, run(c, DataDir::write, writable(data)));
  WriteResult w{count, false};
  if (o.reply.status == kStatusCheckCondition) {
    const Sense& s = o.sense;
    if (s.condition == Condition::early_warning || s.condition == Condition::volume_overflow) {
      // INFO = blocks not written (0 at early warning: everything was taken).
      const int64_t missing = s.info_valid ? std::clamp<int64_t>(s.info, 0, count) : 0;
      w.blocks = count - static_cast<uint32_t>(missing);
      w.early_warning = true;
    } else if (s.condition != Condition::recovered && s.condition != Condition::none) {
      pos_.known = false;
      return sense_error(c, s);
    }
  }
  pos_.block += w.blocks;
  return w;
}

Result<WriteResult> TapeDrive::write_variable(std::span<const uint8_t> block) {
  if (block.empty() || block.size() > cdb::kMax24)
    return fail(Errc::invalid_argument, "tape '" + name() + "': variable block of " +
                                            std::to_string(block.size()) + " bytes");
  auto c = cdb::write6(cdb::Fixed::no, static_cast<uint32_t>(block.size()));
  SB_ASSIGN(Outcome o, run(c, DataDir::write, writable(block)));
  WriteResult w{1, false};
  if (o.reply.status == kStatusCheckCondition) {
    const Sense& s = o.sense;
    if (s.condition == Condition::early_warning) {
      w.early_warning = true;
    } else if (s.condition == Condition::volume_overflow) {
      w = {0, true};
    } else if (s.condition != Condition::recovered && s.condition != Condition::none) {
      pos_.known = false;
      return sense_error(c, s);
    }
  }
  pos_.block += w.blocks;
  return w;
}

Result<ReadResult> TapeDrive::read_fixed(std::span<uint8_t> buf, uint32_t block_size) {
  const auto count = static_cast<uint32_t>(std::min<size_t>(buf.size() / block_size, cdb::kMax24));
  if (count == 0)
    return fail(Errc::invalid_argument, "tape '" + name() + "': read buffer smaller than a block");
  auto c = cdb::read6(cdb::Fixed::yes, count);
  SB_ASSIGN(Outcome o, run(c, DataDir::read, buf.first(size_t{count} * block_size)));
  ReadResult r{count, false, false};
  if (o.reply.status == kStatusCheckCondition) {
    const Sense& s = o.sense;
    // INFO = requested blocks not read. Never the iSCSI residual: tgt's is wrong.
    const auto missing = static_cast<uint32_t>(s.info_valid ? std::clamp<int64_t>(s.info, 0, count) : count);
    switch (s.condition) {
      case Condition::filemark:
        r.blocks = count - missing;
        r.filemark = true;
        break;
      case Condition::end_of_data:
        r.blocks = count - missing;
        r.end_of_data = true;
        break;
      case Condition::early_warning:
      case Condition::recovered:
      case Condition::none:
        r.blocks = count - (s.info_valid ? missing : 0);
        break;
      default:
        pos_.known = false;
        return sense_error(c, s);
    }
  }
  pos_.block += r.blocks;
  if (r.filemark) {
    ++pos_.file;
    pos_.block = 0;
  }
  return r;
}

Result<ReadResult> TapeDrive::read_variable(std::span<uint8_t> buf) {
  const auto want = static_cast<uint32_t>(std::min<size_t>(buf.size(), cdb::kMax24));
  auto c = cdb::read6(cdb::Fixed::no, want);
  SB_ASSIGN(Outcome o, run(c, DataDir::read, buf.first(want)));
  ReadResult r{want, false, false};
  if (o.reply.status == kStatusCheckCondition) {
    const Sense& s = o.sense;
    switch (s.condition) {
      case Condition::filemark:
        r = {0, true, false};
        break;
      case Condition::end_of_data:
        r = {0, false, true};
        break;
      case Condition::ili:
        // INFO = requested - actual; negative: the block was longer than the buffer.
        if (!s.info_valid || s.info < 0)
          return fail(Errc::invalid_argument,
                      "tape '" + name() + "': block longer than the " + std::to_string(want) +
                          "-byte read buffer (by " + std::to_string(-s.info) + " bytes)");
        r.blocks = want - static_cast<uint32_t>(s.info);
        break;
      case Condition::early_warning:
      case Condition::recovered:
      case Condition::none:
        break;
      default:
        pos_.known = false;
        return sense_error(c, s);
    }
  }
  if (r.filemark) {
    ++pos_.file;
    pos_.block = 0;
  } else if (!r.end_of_data) {
    ++pos_.block;
  }
  return r;
}

Result<void> TapeDrive::write_filemarks(uint32_t count) {
  auto c = cdb::write_filemarks6(count, cdb::Immed::no);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::early_warning &&
      o.sense.condition != Condition::recovered && o.sense.condition != Condition::none) {
    pos_.known = false;
    return sense_error(c, o.sense);
  }
  if (count > 0) {
    pos_.file += count;
    pos_.block = 0;
  }
  return ok();
}

Result<void> TapeDrive::rewind() {
  auto c = cdb::rewind(cdb::Immed::no);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::recovered &&
      o.sense.condition != Condition::none && o.sense.condition != Condition::beginning) {
    pos_.known = false;
    return sense_error(c, o.sense);
  }
  pos_ = Position{0, 0, true};
  return ok();
}

Result<void> TapeDrive::space_filemarks(int32_t count) {
  auto c = cdb::space6(cdb::SpaceCode::filemarks, count);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::recovered &&
      o.sense.condition != Condition::none) {
    pos_.known = false;
    if (o.sense.condition == Condition::end_of_data)
      return fail(Errc::not_found, "tape '" + name() + "': SPACE over " + std::to_string(count) +
                                       " filemarks reached the end of data (" + describe(o.sense) + ")");
    return sense_error(c, o.sense);
  }
  // Forward: after the count-th filemark, at block 0 of the next file. Backward moves are
  // left unknown: drives differ in where they stop (tgt goes one object too far).
  if (count >= 0 && pos_.known) {
    pos_.file += static_cast<uint32_t>(count);
    pos_.block = 0;
  } else if (count < 0) {
    pos_.known = false;
  }
  return ok();
}

Result<void> TapeDrive::space_blocks(int32_t count) {
  auto c = cdb::space6(cdb::SpaceCode::blocks, count);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::recovered &&
      o.sense.condition != Condition::none) {
    pos_.known = false;
    return sense_error(c, o.sense);
  }
  if (count >= 0)
    pos_.block += static_cast<uint64_t>(count);
  else
    pos_.block -= std::min<uint64_t>(pos_.block, static_cast<uint64_t>(-static_cast<int64_t>(count)));
  return ok();
}

Result<void> TapeDrive::space_to_end_of_data() {
  auto c = cdb::space6(cdb::SpaceCode::end_of_data, 0);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  pos_.known = false;
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::recovered &&
      o.sense.condition != Condition::none && o.sense.condition != Condition::end_of_data)
    return sense_error(c, o.sense);
  return ok();
}

Result<DevicePosition> TapeDrive::read_position() {
  std::array<uint8_t, 20> buf{};
  auto c = cdb::read_position_short();
  SB_ASSIGN(Outcome o, run(c, DataDir::read, buf));
  if (o.reply.status != kStatusGood) return sense_error(c, o.sense);
  DevicePosition p;
  p.bop = buf[0] & 0x80;
  p.eop = buf[0] & 0x40;
  // tgt answers all zeros; "no BOP and block 0" cannot be a real position.
  p.unknown = (buf[0] & 0x04) || (!p.bop && buf[4] == 0 && buf[5] == 0 && buf[6] == 0 && buf[7] == 0);
  p.block = (uint32_t{buf[4]} << 24) | (uint32_t{buf[5]} << 16) | (uint32_t{buf[6]} << 8) | buf[7];
  return p;
}

Result<void> TapeDrive::locate(uint32_t block) {
  auto c = cdb::locate10(block);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  pos_.known = false;
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::recovered &&
      o.sense.condition != Condition::none)
    return sense_error(c, o.sense);
  return ok();
}

Result<void> TapeDrive::seek_file(uint32_t file) {
  if (pos_.known && pos_.file == file && pos_.block == 0) return ok();
  if (!pos_.known || pos_.file > file || pos_.block != 0) SB_TRY(rewind());
  if (file > pos_.file) SB_TRY(space_filemarks(static_cast<int32_t>(file - pos_.file)));
  return ok();
}

Result<void> TapeDrive::load() {
  auto c = cdb::load_unload(true);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::recovered &&
      o.sense.condition != Condition::none)
    return sense_error(c, o.sense);
  pos_ = Position{0, 0, true};
  return ok();
}

Result<void> TapeDrive::unload() {
  auto c = cdb::load_unload(false);
  SB_ASSIGN(Outcome o, run(c, DataDir::none, {}));
  pos_.known = false;
  if (o.reply.status == kStatusCheckCondition && o.sense.condition != Condition::recovered &&
      o.sense.condition != Condition::none)
    return sense_error(c, o.sense);
  return ok();
}

}  // namespace stripeback::tape
