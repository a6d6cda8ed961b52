#include "database/recovery_plan.h"

#include <algorithm>
#include <set>

#include "database/wal_names.h"

namespace stripeback::database {
namespace {

uint32_t segment_size_of(const catalog::HotBackup& hot) {
  return hot.wal_segment_size ? hot.wal_segment_size : kDefaultWalSegmentSize;
}

// The segment numbers archived for the cluster of `hot` on its timeline or a later one.
std::set<uint64_t> archived_numbers(const std::vector<catalog::WalFile>& archive,
                                    const catalog::HotBackup& hot) {
  std::set<uint64_t> numbers;
  const uint32_t size = segment_size_of(hot);
  for (const auto& w : archive) {
    if (w.event != catalog::WalFile::Event::pushed || wal_kind(w.name) != WalKind::segment)
      continue;
    if (w.system_id != 0 && hot.system_id != 0 && w.system_id != hot.system_id) continue;
    const auto pos = segment_pos(w.name, size);
    if (pos && pos->timeline >= hot.timeline) numbers.insert(pos->number);
  }
  return numbers;
}

std::optional<uint64_t> number_of(const std::string& name, const catalog::HotBackup& hot) {
  const auto pos = segment_pos(name, segment_size_of(hot));
  if (!pos) return std::nullopt;
  return pos->number;
}

// What a message says of where a backup ends, for the kind of target.
std::string end_text(const catalog::HotBackup& h, TargetKind kind) {
  return kind == TargetKind::lsn ? lsn_text(h.stop_lsn) : iso_time_text(h.stop_time_ns);
}

bool ends_before(const catalog::HotBackup& h, const RecoveryTarget& t) {
  switch (t.kind) {
    case TargetKind::time:
      return h.stop_time_ns <= t.time_ns;
    case TargetKind::lsn:
      return h.stop_lsn <= t.lsn;
    case TargetKind::xid:
    case TargetKind::none:
      break;
  }
  return true;
}

// Orders by where the backup ends for the target's kind, then by id.
bool ends_earlier(const catalog::Backup& a, const catalog::Backup& b, TargetKind kind) {
  if (kind == TargetKind::lsn && a.hot->stop_lsn != b.hot->stop_lsn)
    return a.hot->stop_lsn < b.hot->stop_lsn;
  if (kind != TargetKind::lsn && a.hot->stop_time_ns != b.hot->stop_time_ns)
    return a.hot->stop_time_ns < b.hot->stop_time_ns;
  return a.id < b.id;
}

Result<std::vector<const catalog::Backup*>> candidates(const std::vector<catalog::Backup>& backups,
                                                       const BackupFilter& filter) {
  std::vector<const catalog::Backup*> out;
  for (const auto& b : backups) {
    if (filter.backup_id && b.id != *filter.backup_id) continue;
    if (!filter.tag.empty() && b.begin.tag != filter.tag) continue;
    if (filter.backup_id && !has_postgres_record(b))
      return fail(Errc::invalid_argument,
                  "backup " + std::to_string(b.id) +
                      " has no PostgreSQL backup mode record (it was not taken from a "
                      "PostgreSQL cluster in backup mode): a recovery target needs one");
    if (has_postgres_record(b) && b.usable() && b.status_name() == "complete") out.push_back(&b);
  }
  if (out.empty()) {
    std::string which = filter.backup_id ? "backup " + std::to_string(*filter.backup_id)
                        : !filter.tag.empty() ? "no complete backup tagged '" + filter.tag + "'"
                                              : "no complete backup in the catalog";
    if (filter.backup_id)
      return fail(Errc::not_found, which + " is not a complete, usable backup");
    return fail(Errc::invalid_argument,
                which + " has a PostgreSQL backup mode record: a recovery target needs one");
  }
  return out;
}

}  // namespace

bool has_postgres_record(const catalog::Backup& b) {
  return b.hot && b.hot->database == "postgres";
}

std::optional<std::string> first_missing_segment(const std::vector<catalog::WalFile>& archive,
                                                 const catalog::HotBackup& hot, uint64_t first,
                                                 uint64_t last) {
  const auto numbers = archived_numbers(archive, hot);
  for (uint64_t n = first; n <= last; ++n)
    if (!numbers.count(n)) return segment_name({hot.timeline, n}, segment_size_of(hot));
  return std::nullopt;
}

std::optional<std::string> missing_backup_wal(const std::vector<catalog::WalFile>& archive,
                                              const catalog::HotBackup& hot) {
  const uint32_t size = segment_size_of(hot);
  const uint64_t first = number_of(hot.start_wal, hot).value_or(segment_of(hot.start_lsn, size));
  const uint64_t last = number_of(hot.stop_wal, hot).value_or(segment_of(hot.stop_lsn, size));
  return first_missing_segment(archive, hot, first, last);
}

std::optional<uint64_t> newest_archived_segment(const std::vector<catalog::WalFile>& archive,
                                                const catalog::HotBackup& hot) {
  const auto numbers = archived_numbers(archive, hot);
  if (numbers.empty()) return std::nullopt;
  return *numbers.rbegin();
}

Result<RecoveryPlan> plan_recovery(const std::vector<catalog::Backup>& backups,
                                   const std::vector<catalog::WalFile>& archive,
                                   const RecoveryTarget& t, const BackupFilter& filter) {
  SB_ASSIGN(auto all, candidates(backups, filter));
  const auto earlier = [&](const catalog::Backup* a, const catalog::Backup* b) {
    return ends_earlier(*a, *b, t.kind);
  };
  std::sort(all.begin(), all.end(), earlier);
  const catalog::Backup* chosen = nullptr;
  for (const catalog::Backup* b : all)
    if (ends_before(*b->hot, t)) chosen = b;
  if (!chosen) {
    const catalog::Backup& oldest = *all.front();
    return fail(Errc::not_found, "no backup ends before " + target_text(t) + "; the oldest" +
                                     (filter.backup_id ? "" : " with a PostgreSQL record") +
                                     " ends at " + end_text(*oldest.hot, t.kind) + " (backup " +
                                     std::to_string(oldest.id) + ")");
  }
  RecoveryPlan plan;
  plan.backup_id = chosen->id;
  plan.hot = *chosen->hot;
  const uint32_t size = segment_size_of(plan.hot);
  plan.first_segment =
      number_of(plan.hot.start_wal, plan.hot).value_or(segment_of(plan.hot.start_lsn, size));
  const uint64_t stop =
      number_of(plan.hot.stop_wal, plan.hot).value_or(segment_of(plan.hot.stop_lsn, size));
  if (t.kind == TargetKind::lsn) {
    plan.last_segment = std::max(stop, segment_of(t.lsn, size));
  } else {
    plan.last_segment = std::max(stop, newest_archived_segment(archive, plan.hot).value_or(0));
  }
  if (auto missing = first_missing_segment(archive, plan.hot, plan.first_segment,
                                           plan.last_segment))
    return fail(Errc::not_found,
                "the archive lacks WAL segment " + *missing + ", which recovering backup " +
                    std::to_string(plan.backup_id) + " to " + target_text(t) + " needs (" +
                    segment_name({plan.hot.timeline, plan.first_segment}, size) + " to " +
                    segment_name({plan.hot.timeline, plan.last_segment}, size) + ")");
  return plan;
}

}  // namespace stripeback::database
