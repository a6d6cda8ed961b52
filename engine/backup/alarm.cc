#include "engine/backup/alarm.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string_view>

namespace stripeback::engine {
namespace {

double share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0;
}

// The files with the largest `jump` (before, after) first, those that did not worsen left
// out, at most kAlarmFilesShown.
template <class Jump>
std::vector<AlarmFile> top_files(std::vector<AlarmFile> files, Jump jump) {
  std::erase_if(files, [&](const AlarmFile& f) { return !(jump(f) > 0); });
  std::stable_sort(files.begin(), files.end(),
                   [&](const AlarmFile& a, const AlarmFile& b) { return jump(a) > jump(b); });
  if (files.size() > kAlarmFilesShown) files.resize(kAlarmFilesShown);
  return files;
}

}  // namespace

std::optional<Suspicion> compare_profiles(const catalog::FileProfiles& before,
                                          const catalog::FileProfiles& after,
                                          const AlarmThresholds& t) {
  std::map<std::string_view, const catalog::FileProfile*> earlier;
  for (const auto& f : before.files) earlier.emplace(f.path, &f);
  PageEvidence pages;
  CompressionEvidence comp;
  std::vector<AlarmFile> page_files, comp_files;
  for (const auto& now : after.files) {
    auto it = earlier.find(now.path);
    if (it == earlier.end()) continue;
    const catalog::FileProfile& was = *it->second;
    if (was.pages_checked > 0 && now.pages_checked > 0) {
      ++pages.files;
      pages.checked_before += was.pages_checked;
      pages.failed_before += was.pages_failed;
      pages.checked_after += now.pages_checked;
      pages.failed_after += now.pages_failed;
      page_files.push_back({now.path, share(was.pages_failed, was.pages_checked),
                            share(now.pages_failed, now.pages_checked)});
    }
    if (was.bytes_stored > 0 && now.bytes_stored > 0) {
      ++comp.files;
      comp.raw_before += was.bytes_raw;
      comp.stored_before += was.bytes_stored;
      comp.raw_after += now.bytes_raw;
      comp.stored_after += now.bytes_stored;
      comp_files.push_back({now.path, share(was.bytes_raw, was.bytes_stored),
                            share(now.bytes_raw, now.bytes_stored)});
    }
  }
  if (pages.files == 0 && comp.files == 0) return std::nullopt;
  Suspicion s;
  s.previous_backup = before.backup_id;
  if (pages.files > 0) {
    pages.share_before = share(pages.failed_before, pages.checked_before);
    pages.share_after = share(pages.failed_after, pages.checked_after);
    const bool enough = pages.failed_after >= pages.failed_before + kAlarmPageFloor;
    if (enough && pages.share_after - pages.share_before > t.page_share)
      s.rules.push_back("page_share");
    if (enough && pages.share_after > t.page_factor * pages.share_before)
      s.rules.push_back("page_factor");
    pages.top = top_files(std::move(page_files),
                          [](const AlarmFile& f) { return f.after - f.before; });
    s.pages = std::move(pages);
  }
  if (comp.files > 0) {
    comp.ratio_before = share(comp.raw_before, comp.stored_before);
    comp.ratio_after = share(comp.raw_after, comp.stored_after);
    if (comp.ratio_before >= kAlarmMinRatio &&
        comp.ratio_after < comp.ratio_before * (1 - t.compression_drop))
      s.rules.push_back("compression_drop");
    // The fall relative to where the file was: 0.6 for a ratio from 5 to 2.
    comp.top = top_files(std::move(comp_files), [](const AlarmFile& f) {
      return f.before > 0 ? (f.before - f.after) / f.before : 0;
    });
    s.compression = std::move(comp);
  }
  return s;
}

std::string suspicion_line(const Suspicion& s) {
  std::string out;
  char buf[256];
  for (const auto& r : s.rules) out += (out.empty() ? "" : ", ") + r;
  if (s.pages) {
    std::snprintf(buf, sizeof buf, "; failing pages %.2f%% -> %.2f%% (%llu -> %llu)",
                  100 * s.pages->share_before, 100 * s.pages->share_after,
                  static_cast<unsigned long long>(s.pages->failed_before),
                  static_cast<unsigned long long>(s.pages->failed_after));
    out += buf;
  }
  if (s.compression) {
    std::snprintf(buf, sizeof buf, "; compression ratio %.2f -> %.2f",
                  s.compression->ratio_before, s.compression->ratio_after);
    out += buf;
  }
  out += "; against backup " + std::to_string(s.previous_backup);
  if (s.previous_kept) out += " (kept)";
  return out;
}

}  // namespace stripeback::engine
