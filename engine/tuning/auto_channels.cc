#include "engine/tuning/auto_channels.h"

#include <sys/sysmacros.h>

#include <algorithm>
#include <map>

#include "engine/wiring/backends.h"
#include "util/units.h"

namespace stripeback::engine {
namespace {

// "backup" -> "backups", for the reason's "5 backups from A to B".
std::string runs_named(size_t n, const AutoChannelsInput& in) {
  std::string what = std::to_string(n) + " " + in.kind + (n == 1 ? "" : "s") + " from " +
                     in.source_medium;
  if (!in.destination_medium.empty()) what += " to " + in.destination_medium;
  return what;
}

// The counts the probe tries: its own that the bounds allow, and the cap itself when it is
// below the largest of them.
std::vector<uint32_t> probe_counts(const std::vector<uint32_t>& counts, uint32_t cap) {
  std::vector<uint32_t> out;
  uint32_t largest = 0;
  for (uint32_t n : counts) {
    largest = std::max(largest, n);
    if (n <= cap) out.push_back(n);
  }
  if (cap < largest && std::find(out.begin(), out.end(), cap) == out.end()) out.push_back(cap);
  return out;
}

ChannelChoice from_probe(const AutoChannelsInput& in) {
  ProbeOptions o = in.probe;
  o.counts = probe_counts(o.counts, in.bounds.cap());
  if (o.counts.size() < 2)
    return {in.bounds.cap(), "capped at " + std::to_string(in.bounds.cap()) + " by " +
                                 in.bounds.cap_reason() + ": nothing to measure"};
  const uint64_t threshold = probe_bytes(o) * kProbeShare;
  if (in.total_bytes < threshold)
    return choose_unmeasured("no probe: " + util::format_bytes(in.total_bytes) +
                                 " to read is below the probe's threshold of " +
                                 util::format_bytes(threshold),
                             in.bounds);
  if (!probe_fits(in.files, o))
    return choose_unmeasured("no probe: the files are too small to sample " +
                                 util::format_bytes(probe_bytes(o)) + " without rereading",
                             in.bounds);
  auto rounds = probe_reads(in.files, o);
  if (!rounds) return choose_unmeasured("no probe (" + rounds.error().what + ")", in.bounds);
  std::map<uint32_t, double> rates;
  for (const ProbeRound& r : *rounds) rates[r.readers] = r.mb_per_s;
  return choose_from_probe(rates, in.bounds);
}

// Each distinct name once, in order, " + "-joined.
std::string joined_distinct(const std::vector<std::string>& names) {
  std::vector<std::string> seen;
  for (const auto& n : names)
    if (std::find(seen.begin(), seen.end(), n) == seen.end()) seen.push_back(n);
  std::string s;
  for (const auto& n : seen) s += (s.empty() ? "" : " + ") + n;
  return s;
}

}  // namespace

std::string medium_of(const std::string& text) {
  if (storage::has_scheme(text)) {
    auto at = storage::Location::parse(text);
    if (!at) return text;
    storage::Location m;
    m.scheme = at->scheme;
    m.authority = at->authority;
    m.opaque = at->opaque;
    m.path = at->opaque ? "" : "/";
    std::string s = m.str();
    if (!at->opaque && s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
  }
  storage::Location at = storage::Location::local(storage::normal_path(text));
  auto st = storage_for(at);
  for (int up = 0; st && up < 64; ++up) {
    if (auto info = (*st)->stat(at, true); info)
      return "local disk (device " + std::to_string(major(info->dev)) + ":" +
             std::to_string(minor(info->dev)) + ")";
    const storage::Location parent = at.parent();
    if (parent == at) break;
    at = parent;
  }
  return "local disk";
}

std::string media_of(const std::vector<std::string>& texts) {
  std::vector<std::string> media;
  for (const auto& t : texts) media.push_back(medium_of(t));
  return joined_distinct(media);
}

std::vector<PastRun> past_runs(const catalog::Catalog& cat, const AutoChannelsInput& in) {
  std::map<uint64_t, catalog::Backup> backups;
  for (auto& b : cat.backups()) backups.emplace(b.id, std::move(b));
  std::map<std::string, std::string> media;  // medium_of() of each location seen
  auto medium = [&](const std::string& text) -> const std::string& {
    auto it = media.find(text);
    if (it == media.end()) it = media.emplace(text, medium_of(text)).first;
    return it->second;
  };
  std::vector<PastRun> runs;
  for (const catalog::JobRecord& j : cat.jobs()) {
    if (j.type != in.kind || j.status != "complete" || j.bytes_in < kHistoryMinBytes ||
        j.end_ns <= j.start_ns || j.backup_ids.empty())
      continue;
    auto b = backups.find(j.backup_ids.front());
    if (b == backups.end()) continue;
    const catalog::BackupBegin& begin = b->second.begin;
    PastRun r;
    if (in.kind == "backup") {
      std::vector<std::string> from;
      for (const auto& s : begin.sources) from.push_back(medium(s));
      if (joined_distinct(from) != in.source_medium || medium(begin.destination) != in.destination_medium)
        continue;
      r.channels = begin.channels;
    } else {
      if (medium(begin.destination) != in.source_medium) continue;
      r.channels = static_cast<uint32_t>(j.channels.size());
    }
    r.mb_per_s = static_cast<double>(j.bytes_in) / 1e6 /
                 (static_cast<double>(j.end_ns - j.start_ns) / 1e9);
    runs.push_back(r);
  }
  if (runs.size() > kHistoryNewest)
    runs.erase(runs.begin(), runs.end() - static_cast<ptrdiff_t>(kHistoryNewest));
  return runs;
}

ChannelChoice choose_channels(const catalog::Catalog& cat, const AutoChannelsInput& in) {
  if (in.kind != "validate-sources") {
    const std::vector<PastRun> runs = past_runs(cat, in);
    if (auto c = choose_from_history(runs, runs_named(runs.size(), in), in.bounds)) return *c;
  }
  return from_probe(in);
}

}  // namespace stripeback::engine
