// Compaction: the log rewritten without its damaged regions and the records of the
// backups dropped, put in place by an atomic rename.
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <sys/file.h>

#include "catalog/catalog.h"
#include "catalog/catalog_state.h"
#include "catalog/seal.h"
#include "util/crash_point.h"

namespace stripeback::catalog {

namespace {
// The backup a record of a type this build knows is about (every such payload starts with
// a version byte and the backup id); none for other types. A Resume record belongs to its
// backup too: left behind by a compaction that drops the backup, it would name a backup
// without a begin record, which every later load reports as damaged.
std::optional<uint64_t> record_backup_id(const Frame& f) {
  const bool per_backup = (f.type >= static_cast<uint16_t>(RecordType::backup_begin) &&
                           f.type <= static_cast<uint16_t>(RecordType::frame_check)) ||
                          f.type == static_cast<uint16_t>(RecordType::resume) ||
                          f.type == static_cast<uint16_t>(RecordType::lock) ||
                          f.type == static_cast<uint16_t>(RecordType::hot) ||
                          f.type == static_cast<uint16_t>(RecordType::keep) ||
                          f.type == static_cast<uint16_t>(RecordType::file_profile);
  if (!per_backup || f.payload.size() < 9) return std::nullopt;
  uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id |= uint64_t{f.payload[1 + static_cast<size_t>(i)]} << (8 * i);
  return id;
}

// The KeyWrap records as a compaction writes them again (docs/security.md, "What the old
// key still opens"): of each piece only its current wrap, the one of the last record that
// names it (as loading the catalog takes it), and none of a backup dropped. A superseded
// wrap is the piece's data key under a key-encryption key a rekey retired: kept, the old
// key and the catalog would still open the piece. By frame index: the record to write in
// its place, nullopt to leave the frame out; frames not in the map are copied as they are.
// A record that does not decode is copied as it is (loading reports it).
std::map<size_t, std::optional<std::vector<uint8_t>>> current_key_wraps(
    const std::vector<Frame>& frames, const std::set<uint64_t>& dropped) {
  std::map<size_t, KeyWraps> records;
  std::map<std::string, size_t> last;  // piece -> frame of its current wrap
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].type != static_cast<uint16_t>(RecordType::key_wrap)) continue;
    auto w = decode_key_wraps(frames[i].payload);
    if (!w) continue;
    for (const KeyWrap& x : w->wraps) last[x.piece] = i;
    records.emplace(i, std::move(*w));
  }
  std::map<size_t, std::optional<std::vector<uint8_t>>> out;
  for (auto& [i, w] : records) {
    const size_t before = w.wraps.size();
    std::erase_if(w.wraps, [&, i = i](const KeyWrap& x) {
      return last[x.piece] != i || dropped.count(x.backup_id) > 0;
    });
    if (w.wraps.size() == before) continue;
    if (w.wraps.empty()) {
      out.emplace(i, std::nullopt);
      continue;
    }
    auto rec = encode_key_wraps(w);
    if (rec) out.emplace(i, std::move(rec->payload));
  }
  return out;
}
// The damaged regions are kept for inspection, as a cut torn tail is, before the log that
// no longer holds them takes its place: each saved as catalog.log.dropped-<time>-<offset>.
Result<void> save_damaged_regions(const std::string& dir, const std::vector<uint8_t>& bytes,
                                  const ScanResult& scan, CompactReport& rep) {
  std::vector<LoadWarning> regions;
  for (const auto& w : scan.warnings)
    if (w.length > 0) regions.push_back(w);
  if (scan.torn_tail && scan.torn_tail->length > 0) regions.push_back(*scan.torn_tail);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now().time_since_epoch());
  for (const auto& w : regions) {
    if (w.offset + w.length > bytes.size()) continue;
    rep.damaged_bytes += w.length;
    std::string name = std::string(kLogName) + ".dropped-" + std::to_string(now.count()) + "-" +
                       std::to_string(w.offset);
    SB_ASSIGN(std::string saved,
              save_new_file(dir, name,
                            std::span<const uint8_t>(bytes).subspan(w.offset, w.length)));
    rep.saved.push_back(std::move(saved));
  }
  return ok();
}

// Writes the compacted log to catalog.log.compact, synced and closed (removed again on
// failure); the caller renames it into place.
Result<void> write_new_log(storage::Storage& st, const std::string& log_path,
                           const std::vector<uint8_t>& out) {
  const std::string tmp_path = log_path + ".compact";
  const auto tmp = storage::Location::local(tmp_path);
  (void)st.remove(tmp);  // of a compaction killed half-way
  storage::CreateOptions co;
  co.direct = false;
  co.mode = 0600;
  SB_ASSIGN(auto file, st.create(tmp, co));
  auto written = [&]() -> Result<void> {
    SB_TRY(file->write_at(reinterpret_cast<const std::byte*>(out.data()), out.size(), 0));
    SB_TRY(file->commit());
    return file->close();
  }();
  if (!written) {
    file->abandon();
    (void)st.remove(tmp);
    return written.error().wrap("unable to write the compacted catalog log '" + tmp_path + "'");
  }
  return ok();
}
}  // namespace

Result<CompactReport> Catalog::compact(const CompactOptions& o) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(FileLock lock, FileLock::acquire(s.lock_fd.get(), LOCK_EX, s.lock_path));
  SB_TRY(s.follow_replaced());
  SB_TRY(s.catch_up());
  CompactReport rep;
  const bool was_sealed =
      s.model.seal() || s.model.has_sealed_frames() || s.header_version == kSealedFormatVersion;
  if (was_sealed && !s.sealer)
    return fail(Errc::invalid_argument, "the catalog in '" + s.dir +
                                            "' is sealed: compacting it needs its key");
  if (s.sealer) {
    // Sealing the records anew would vouch for what someone changed: refused.
    if (const auto& found = s.verifier->findings(); !found.empty())
      return fail(Errc::tampered, "the catalog in '" + s.dir + "' shows tampering (" +
                                      found.front().what +
                                      "); it is not compacted (rebuild it from the media)");
    if (was_sealed && !s.model.seal())
      return fail(Errc::tampered, "the catalog in '" + s.dir + "' has lost its seal record");
  }
  const Sealer* sealer = o.reseal ? o.reseal.get() : s.sealer.get();
  const SealParams seal_params = o.reseal ? o.reseal_params : s.seal_params;
  SB_ASSIGN(uint64_t size, s.log_size());
  SB_ASSIGN(auto bytes, s.log_range(0, size));
  if (bytes.size() < kFileHeaderSize)
    return fail(Errc::corrupt, "'" + s.log_path + "' is shorter than its file header");
  ScanResult scan = scan_records(std::span<const uint8_t>(bytes).subspan(kFileHeaderSize),
                                 kFileHeaderSize, 0);
  rep.bytes_before = bytes.size();
  rep.records_before = scan.frames.size();
  std::set<uint64_t> drop;
  uint64_t identity_begin = 0, max_id = 0;
  if (o.drop_backup) {
    std::set<uint64_t> asked;
    for (const Frame& f : scan.frames)
      if (auto id = record_backup_id(f)) {
        max_id = std::max(max_id, *id);
        if (asked.insert(*id).second && o.drop_backup(*id)) drop.insert(*id);
        if (!identity_begin && f.type == static_cast<uint16_t>(RecordType::backup_begin))
          if (auto b = decode_begin(f.payload); b && b->begin.catalog_id != 0)
            identity_begin = b->backup_id;
      }
  }
  rep.dropped_backups.assign(drop.begin(), drop.end());
  const auto wraps = current_key_wraps(scan.frames, drop);
  std::vector<uint8_t> out =
      encode_file_header(sealer ? kSealedFormatVersion : kFormatVersion);
  uint64_t seq = 0;
  Mac chain{};
  // Sealed: the Seal record first, then every record sealed anew in its new place.
  auto put = [&](RecordType type, std::span<const uint8_t> payload) {
    if (sealer) append_sealed_frame(out, ++seq, type, payload, *sealer, chain);
    else append_frame(out, ++seq, type, payload);
  };
  if (sealer) {
    chain = chain_start(*sealer);
    SB_ASSIGN(auto rec, encode_seal(seal_params));
    put(rec.type, rec.payload);
  }
  for (size_t i = 0; i < scan.frames.size(); ++i) {
    const Frame& f = scan.frames[i];
    if (f.type == static_cast<uint16_t>(RecordType::seal)) continue;
    auto id = record_backup_id(f);
    // The identity and the next id are the catalog's, not its backups': those begins stay.
    const bool keeps_catalog = id && f.type == static_cast<uint16_t>(RecordType::backup_begin) &&
                               (*id == identity_begin || *id == max_id);
    if (id && drop.count(*id) && !keeps_catalog) continue;
    if (auto w = wraps.find(i); w != wraps.end()) {
      if (w->second) put(RecordType::key_wrap, *w->second);
      continue;
    }
    put(static_cast<RecordType>(f.type), f.payload);
  }
  rep.records_after = seq;
  rep.bytes_after = out.size();
  SB_TRY(save_damaged_regions(s.dir, bytes, scan, rep));
  SB_TRY(write_new_log(*s.st, s.log_path, out));
  util::crash_point("catalog-compact-written");
  const auto tmp = storage::Location::local(s.log_path + ".compact");
  if (auto r = s.st->rename(tmp, storage::Location::local(s.log_path), true); !r) {
    (void)s.st->remove(tmp);
    return r.error().wrap("unable to put the compacted catalog log in place");
  }
  SB_TRY(sync_dir(s.dir));
  util::crash_point("catalog-compact-renamed");
  SB_TRY(s.open_log());
  if (o.reseal) {
    s.sealer = o.reseal;
    s.seal_params = o.reseal_params;
  }
  s.header_version = sealer ? kSealedFormatVersion : kFormatVersion;
  s.reset_reading();
  s.tail.reset();
  SB_TRY(s.catch_up());
  return rep;
}

}  // namespace stripeback::catalog
