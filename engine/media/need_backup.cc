#include "engine/media/need_backup.h"

#include <map>

namespace stripeback::engine {

std::vector<NeedBackup> find_need_backup(const std::vector<catalog::Backup>& backups,
                                         const RetentionPolicy& policy, int64_t now_ns,
                                         const std::vector<std::string>* present) {
  std::map<std::string, NeedBackup> files;
  if (present)
    for (const auto& p : *present) files[p].path = p;
  for (const auto& b : backups) {
    if (!b.usable()) continue;
    for (const auto& rec : b.files) {
      if ((rec.mode & 0170000) != 0100000) continue;
      auto it = files.find(rec.path);
      if (it == files.end()) {
        if (present) continue;
        it = files.emplace(rec.path, NeedBackup{rec.path}).first;
      }
      NeedBackup& n = it->second;
      ++n.backups;
      if (b.begin.start_time_ns >= n.newest_time_ns) {
        n.newest_id = b.id;
        n.newest_time_ns = b.begin.start_time_ns;
      }
    }
  }
  std::vector<NeedBackup> out;
  for (auto& [path, n] : files) {
    bool short_of = n.backups == 0;
    if (policy.kind == RetentionPolicy::Kind::window) {
      const auto window_ns = static_cast<int64_t>(policy.window_days * 86400.0 * 1e9);
      short_of = short_of || n.newest_time_ns < now_ns - window_ns;
    } else {
      const uint32_t want = policy.kind == RetentionPolicy::Kind::redundancy ? policy.redundancy : 1;
      short_of = short_of || n.backups < want;
    }
    if (short_of) out.push_back(std::move(n));
  }
  return out;
}

}  // namespace stripeback::engine
