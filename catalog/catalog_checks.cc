// The records of checks (page checks, frame checks) and the history of jobs.
#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/catalog_state.h"

namespace stripeback::catalog {

Result<void> Catalog::add_page_check(const PageCheck& check) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_page_check(check));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  PageCheck kept = check;
  kept.corrupt_total = std::max<uint64_t>(kept.corrupt_total, kept.corrupt.size());
  if (kept.corrupt.size() > PageCheck::kMaxCorrupt) kept.corrupt.resize(PageCheck::kMaxCorrupt);
  s.model.add_page_check(std::move(kept));
  return ok();
}

Result<void> Catalog::add_frame_check(const FrameCheck& check) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_frame_check(check));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  s.model.add_frame_check(check);
  return ok();
}
Result<uint64_t> Catalog::add_job(const JobRecord& job) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(auto rec, encode_job(job));
  SB_TRY(s.append([&]() -> Result<std::vector<EncodedRecord>> {
    return std::vector<EncodedRecord>{rec};
  }));
  JobRecord kept = job;
  kept.sequence = s.last_sequence;  // that of the record just written
  kept.files_total = std::max<uint64_t>(kept.files_total, std::min(kept.file_io.size(), JobRecord::kMaxFiles));
  if (kept.file_io.size() > JobRecord::kMaxFiles) kept.file_io.resize(JobRecord::kMaxFiles);
  s.model.add_job(std::move(kept));
  return s.last_sequence;
}

std::vector<JobRecord> Catalog::jobs() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.jobs();
}

std::vector<PageCheck> Catalog::page_checks() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.page_checks();
}

std::vector<FrameCheck> Catalog::frame_checks() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.frame_checks();
}

namespace {
// Whether `file` is `source` or lies below it.
bool lies_in(const std::string& file, const std::string& source) {
  std::string dir = source;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (file == dir) return true;
  // A URL's query ends it: compare what comes before.
  const std::string base = dir.substr(0, dir.find('?'));
  const std::string f = file.substr(0, base.find("://") != std::string::npos ? file.find('?')
                                                                             : std::string::npos);
  return f.size() > base.size() && f.compare(0, base.size(), base) == 0 &&
         (base == "/" || f[base.size()] == '/');
}
}  // namespace

std::vector<std::pair<CorruptPage, PageCheck>> Catalog::corrupt_pages() const {
  auto checks = page_checks();
  std::vector<std::pair<CorruptPage, PageCheck>> out;
  for (size_t i = 0; i < checks.size(); ++i) {
    for (const CorruptPage& p : checks[i].corrupt) {
      bool superseded = false;
      for (size_t j = i + 1; j < checks.size() && !superseded; ++j) {
        if (!checks[j].complete) continue;
        for (const auto& src : checks[j].sources) superseded = superseded || lies_in(p.file, src);
      }
      if (!superseded) {
        PageCheck by = checks[i];
        by.corrupt.clear();
        out.push_back({p, std::move(by)});
      }
    }
  }
  return out;
}

}  // namespace stripeback::catalog
