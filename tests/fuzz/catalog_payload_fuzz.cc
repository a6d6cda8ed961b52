// Catalog record payloads (catalog/payload.h): the mode byte, less one, is the record type
// (modulo 16): decode_begin, decode_piece, ..., decode_job for the rest of the input (types
// this build does not know are passed); what decodes is then
// applied to a model as a frame of that type, after a begin record for its backup.
// Invariants: encoding what was decoded gives one record of the same type that decodes
// and encodes to the same bytes; when the input has the version the encoder writes, the
// encoding is the input itself (no field is lost or invented); the model takes the record
// as the payload says and holds its invariants.
#include <algorithm>
#include <cstring>
#include <optional>

#include "catalog/model.h"
#include "catalog/payload.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/model_check.h"

using namespace stripeback;
using namespace stripeback::catalog;

namespace {

// Decodes `payload` as `type` and encodes the result again; nullopt if it does not decode.
std::optional<std::vector<uint8_t>> reencode(RecordType type, std::span<const uint8_t> payload,
                                             uint64_t* backup_id) {
  Result<std::vector<EncodedRecord>> records = std::vector<EncodedRecord>{};
  switch (type) {
    case RecordType::backup_begin: {
      auto p = decode_begin(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      auto e = encode_begin(p->backup_id, p->begin);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::piece: {
      auto p = decode_piece(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      records = encode_piece(p->backup_id, p->piece, p->files);
      break;
    }
    case RecordType::files: {
      auto p = decode_files(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      records = encode_files(p->backup_id, p->files);
      break;
    }
    case RecordType::backup_end: {
      auto p = decode_end(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      auto e = encode_end(p->backup_id, p->end);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::page_check: {
      auto p = decode_page_check(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      auto e = encode_page_check(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::frame_check: {
      auto p = decode_frame_check(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      auto e = encode_frame_check(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::setting: {
      auto p = decode_setting(payload);
      if (!p) return std::nullopt;
      auto e = encode_setting(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::crosscheck: {
      auto p = decode_crosscheck(payload);
      if (!p) return std::nullopt;
      for (const auto& pc : p->pieces) *backup_id = std::max(*backup_id, pc.backup_id);
      auto e = encode_crosscheck(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::deletion: {
      auto p = decode_deletion(payload);
      if (!p) return std::nullopt;
      for (uint64_t b : p->backups) *backup_id = std::max(*backup_id, b);
      auto e = encode_deletion(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::resume: {
      auto p = decode_resume(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      auto e = encode_resume(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::keep: {
      auto p = decode_keep(payload);
      if (!p) return std::nullopt;
      *backup_id = p->backup_id;
      auto e = encode_keep(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    case RecordType::job: {
      auto p = decode_job(payload);
      if (!p) return std::nullopt;
      for (uint64_t b : p->backup_ids) *backup_id = std::max(*backup_id, b);
      auto e = encode_job(*p);
      FUZZ_CHECK(e.has_value());
      records = std::vector<EncodedRecord>{std::move(*e)};
      break;
    }
    default:
      return std::nullopt;
  }
  FUZZ_CHECK(records.has_value() && records->size() == 1);
  FUZZ_CHECK((*records)[0].type == type);
  return std::move((*records)[0].payload);
}

Frame frame_of(RecordType type, std::span<const uint8_t> payload, uint64_t sequence) {
  Frame f;
  f.offset = kFileHeaderSize + sequence * 64;
  f.size = kFrameHeaderSize + payload.size();
  f.sequence = sequence;
  f.type = static_cast<uint16_t>(type);
  f.payload = payload;
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto in = fuzz::split_mode(data, size);
  auto payload = fuzz::exact_copy(in.rest);
  // The mode byte is the record type less one (types this build does not know are passed).
  const auto type = static_cast<RecordType>(in.mode % 16 + 1);
  uint64_t id = 0;
  auto e1 = reencode(type, payload, &id);
  if (!e1) return 0;
  uint64_t id2 = 0;
  auto e2 = reencode(type, *e1, &id2);
  FUZZ_CHECK(e2 && *e2 == *e1 && id2 == id);
  if (!payload.empty() && (*e1)[0] == payload[0]) FUZZ_CHECK(*e1 == payload);

  if (type == RecordType::setting || type == RecordType::crosscheck ||
      type == RecordType::deletion) {
    // Applied to a catalog without backups, they create none.
    Model m;
    m.apply(frame_of(type, payload, 1));
    FUZZ_CHECK(m.snapshot().empty());
    FUZZ_CHECK(m.settings().size() == (type == RecordType::setting && payload.size() > 1 &&
                                               !decode_setting(payload)->value.empty()
                                           ? 1u
                                           : 0u));
    return 0;
  }
  if (type == RecordType::job) {
    // A job's history stands beside the backups, under the frame's sequence.
    Model m;
    m.apply(frame_of(type, payload, 1));
    FUZZ_CHECK(m.snapshot().empty() && m.warnings().empty());
    FUZZ_CHECK(m.jobs().size() == 1 && m.jobs()[0].sequence == 1);
    FUZZ_CHECK(m.next_id() > id);
    return 0;
  }
  if (type == RecordType::page_check || type == RecordType::frame_check) {
    // Checks stand beside the backups: applied, they change no backup.
    Model m;
    m.apply(frame_of(type, payload, 1));
    FUZZ_CHECK(m.snapshot().empty());
    FUZZ_CHECK(m.page_checks().size() + m.frame_checks().size() == 1);
    FUZZ_CHECK(m.next_id() > id);
    return 0;
  }
  Model m;
  BackupBegin begin;
  begin.tag = "fuzz";
  if (type != RecordType::backup_begin) m.add_begin(id, begin, 0);
  const size_t before = m.snapshot().size();
  m.apply(frame_of(type, payload, 1));
  fuzz::check_model(m, 2);
  auto all = m.snapshot();
  if (id == 0) {
    FUZZ_CHECK(all.empty());
    return 0;
  }
  FUZZ_CHECK(all.size() == 1);
  const Backup& b = all[0];
  FUZZ_CHECK(b.id == id);
  switch (type) {
    case RecordType::backup_begin:
      FUZZ_CHECK(before == 0);
      break;
    case RecordType::piece: {
      auto p = decode_piece(payload);
      FUZZ_CHECK(b.pieces.size() == 1 && b.pieces[0].name == p->piece.name);
      FUZZ_CHECK(b.files.size() == p->files.size());
      break;
    }
    case RecordType::files:
      FUZZ_CHECK(b.files.size() == decode_files(payload)->files.size());
      break;
    case RecordType::backup_end:
      FUZZ_CHECK(b.ended && b.end.status == decode_end(payload)->end.status);
      break;
    case RecordType::resume:
      FUZZ_CHECK(b.resumes == 1 && b.begin.pid == decode_resume(payload)->pid);
      break;
    case RecordType::keep: {
      // The latest keep record is the backup's keep; a cleared one leaves none.
      const Keep k = *decode_keep(payload);
      FUZZ_CHECK(b.keep.has_value() == (k.kind != Keep::Kind::cleared));
      if (b.keep) FUZZ_CHECK(b.keep->kind == k.kind && b.keep->until_ns == k.until_ns);
      break;
    }
    default:
      break;
  }
  return 0;
}
