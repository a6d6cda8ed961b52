#include "engine/tuning/channel_choice.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace stripeback::engine {

uint32_t ChannelBounds::cap() const {
  return std::max<uint32_t>(1, std::min({memory, units, most}));
}

std::string ChannelBounds::cap_reason() const {
  const uint32_t c = cap();
  if (c == std::max<uint32_t>(1, memory)) return "the memory limit of the I/O buffers";
  if (c == std::max<uint32_t>(1, units)) return std::to_string(units) + " unit(s) of work";
  return "the maximum of " + std::to_string(most);
}

uint32_t smallest_near_best(const std::map<uint32_t, double>& rates, double near) {
  double best = 0;
  for (const auto& [n, r] : rates) best = std::max(best, r);
  for (const auto& [n, r] : rates)  // in increasing count
    if (r >= best * (1 - near)) return n;
  return 0;
}

uint32_t largest_near_best(const std::map<uint32_t, double>& rates, double near) {
  double best = 0;
  for (const auto& [n, r] : rates) best = std::max(best, r);
  uint32_t chosen = 0;
  for (const auto& [n, r] : rates)  // in increasing count
    if (r >= best * (1 - near)) chosen = n;
  return chosen;
}

std::string rates_text(const std::map<uint32_t, double>& rates) {
  std::string s;
  for (const auto& [n, r] : rates) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%u=%.0f", s.empty() ? "" : " ", n, r);
    s += buf;
  }
  return s + " MB/s";
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// `n` within the bounds, with what capped it said after `reason`.
ChannelChoice bounded(uint32_t n, std::string reason, const ChannelBounds& bounds) {
  const uint32_t cap = bounds.cap();
  if (n > cap) {
    reason += "; capped at " + std::to_string(cap) + " by " + bounds.cap_reason();
    n = cap;
  }
  return {std::max<uint32_t>(1, n), std::move(reason)};
}

}  // namespace

std::optional<ChannelChoice> choose_from_history(std::span<const PastRun> runs,
                                                 const std::string& what,
                                                 const ChannelBounds& bounds) {
  std::map<uint32_t, std::vector<double>> by_count;
  size_t used = 0;
  for (const PastRun& r : runs) {
    if (r.channels == 0 || r.channels > bounds.cap() || !(r.mb_per_s > 0)) continue;
    by_count[r.channels].push_back(r.mb_per_s);
    ++used;
  }
  if (used < kHistoryRunsEnough || by_count.size() < 2) return std::nullopt;
  std::map<uint32_t, double> rates;
  for (auto& [n, v] : by_count) rates[n] = median(std::move(v));
  const uint32_t n = smallest_near_best(rates);
  std::string reason = "history: " + what + ": " + rates_text(rates);
  if (used < runs.size())
    reason += " (" + std::to_string(runs.size() - used) + " run(s) above the cap of " +
              std::to_string(bounds.cap()) + " left out)";
  return bounded(n, std::move(reason), bounds);
}

ChannelChoice choose_from_probe(const std::map<uint32_t, double>& rates,
                                const ChannelBounds& bounds) {
  if (rates.empty()) return choose_unmeasured("the probe measured nothing", bounds);
  return bounded(largest_near_best(rates), "probe: " + rates_text(rates), bounds);
}

ChannelChoice choose_unmeasured(const std::string& why, const ChannelBounds& bounds) {
  return bounded(kAutoChannelsDefault, why + ": the default " +
                                           std::to_string(kAutoChannelsDefault), bounds);
}

}  // namespace stripeback::engine
