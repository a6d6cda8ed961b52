#include "engine/history/time_estimate.h"

#include <map>
#include <set>
#include <string>

#include "util/units.h"

namespace stripeback::engine {
namespace {

// The one medium all the pieces of the job's backups are on, or "" (several, or a backup
// no longer in the catalog).
std::string job_medium(const catalog::JobRecord& j,
                       const std::map<uint64_t, const catalog::Backup*>& by_id) {
  std::set<std::string> media;
  for (uint64_t id : j.backup_ids) {
    auto b = by_id.find(id);
    if (b == by_id.end()) return {};
    for (const auto& p : b->second->pieces) media.insert(piece_medium(p));
  }
  return media.size() == 1 ? *media.begin() : std::string();
}

}  // namespace

void estimate_time(RestorePreview& p, const std::vector<catalog::JobRecord>& jobs,
                   const std::vector<catalog::Backup>& backups) {
  std::map<uint64_t, const catalog::Backup*> by_id;
  for (const auto& b : backups) by_id[b.id] = &b;
  std::map<std::string, uint64_t> to_read;
  for (const auto& piece : p.pieces) to_read[piece.medium] += piece.bytes_to_read;
  struct Rate {
    uint64_t jobs = 0, bytes = 0;
    double seconds = 0;
  };
  std::map<std::string, Rate> rates;
  const std::string type = p.verify_only ? "validate" : "restore";
  for (const auto& j : jobs) {
    if (j.type != type || j.status != "complete" || j.bytes_in == 0 || j.end_ns <= j.start_ns)
      continue;
    const std::string medium = job_medium(j, by_id);
    if (!to_read.count(medium)) continue;
    Rate& r = rates[medium];
    ++r.jobs;
    r.bytes += j.bytes_in;
    r.seconds += static_cast<double>(j.end_ns - j.start_ns) / 1e9;
  }
  p.estimates.clear();
  double total = 0;
  bool known = true;
  for (const auto& [medium, bytes] : to_read) {
    TimeEstimate e;
    e.medium = medium;
    e.bytes = bytes;
    auto r = rates.find(medium);
    if (r == rates.end()) {
      known = false;
    } else {
      e.jobs = r->second.jobs;
      e.mb_per_s = util::mb_per_s(r->second.bytes, r->second.seconds);
      e.seconds = static_cast<double>(bytes) * r->second.seconds /
                  static_cast<double>(r->second.bytes);
      total += e.seconds;
    }
    p.estimates.push_back(std::move(e));
  }
  if (known) p.seconds = total;
  else p.seconds.reset();
}

}  // namespace stripeback::engine
