#include "engine/monitor/progress.h"

#include <unistd.h>

#include <algorithm>

#include "util/clock.h"
#include "util/process.h"

namespace stripeback::engine {

const char* state_name(ChannelState s) {
  switch (s) {
    case ChannelState::starting:
      return "starting";
    case ChannelState::reading:
      return "reading";
    case ChannelState::writing:
      return "writing";
    case ChannelState::throttled:
      return "throttled";
    case ChannelState::working:
      return "working";
    case ChannelState::idle:
      return "idle";
    case ChannelState::done:
      return "done";
  }
  return "unknown";
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t wall_ns() { return util::wall_now_ns(); }

void ChannelProgress::set(ChannelState s) {
  const auto v = static_cast<uint8_t>(s);
  const uint8_t cur = state_.load(std::memory_order_relaxed);
  if (cur == v) return;
  const int64_t now = steady_ns();
  const int64_t since = since_ns_.load(std::memory_order_relaxed);
  int64_t begin = now;
  if (s == ChannelState::working) {
    before_work_ = cur;
    before_since_ = since;
  } else if (cur == static_cast<uint8_t>(ChannelState::working) && v == before_work_ &&
             now - since < 50'000'000) {
    begin = before_since_;  // back to the same wait after a moment's work
  }
  since_ns_.store(begin, std::memory_order_relaxed);
  state_.store(v, std::memory_order_relaxed);
}

JobProgress::JobProgress(std::string operation, std::string tag, double hang_after_s)
    : operation_(std::move(operation)),
      tag_(std::move(tag)),
      hang_after_s_(hang_after_s),
      started_ns_(wall_ns()),
      last_progress_ns_(started_ns_) {}

void JobProgress::start(uint32_t channels, uint64_t bytes_total) {
  if (started_.load(std::memory_order_acquire)) return;
  for (uint32_t i = 0; i < channels; ++i) {
    channels_.push_back(std::make_unique<ChannelProgress>());
    channels_.back()->set(ChannelState::starting);
  }
  total_.store(bytes_total, std::memory_order_relaxed);
  // Snapshots look at the channels only once this is seen (they are not added to later).
  started_.store(true, std::memory_order_release);
}

ChannelProgress* JobProgress::channel(uint32_t i) {
  if (i == 0 || i > channels_.size()) return nullptr;
  return channels_[i - 1].get();
}

void JobProgress::finish(std::string verdict, std::string stage, std::string suggestion) {
  std::lock_guard<std::mutex> g(mu_);
  finished_ = true;
  verdict_ = std::move(verdict);
  verdict_stage_ = std::move(stage);
  verdict_suggestion_ = std::move(suggestion);
  if (started_.load(std::memory_order_acquire))
    for (auto& c : channels_) c->set(ChannelState::done);
}

void JobProgress::set_suspicious(std::string line) {
  std::lock_guard<std::mutex> g(mu_);
  suspicious_ = std::move(line);
}

ProgressSnapshot JobProgress::snapshot() {
  std::lock_guard<std::mutex> g(mu_);
  ProgressSnapshot s;
  s.operation = operation_;
  s.id = id_.load(std::memory_order_relaxed);
  s.tag = tag_;
  s.pid = static_cast<int32_t>(::getpid());
  s.host = util::hostname();
  s.started_ns = started_ns_;
  s.last_update_ns = wall_ns();
  s.hang_after_s = hang_after_s_;
  s.finished = finished_;
  s.verdict = verdict_;
  s.verdict_stage = verdict_stage_;
  s.verdict_suggestion = verdict_suggestion_;
  s.suspicious = suspicious_;
  const int64_t now = steady_ns();
  const bool started = started_.load(std::memory_order_acquire);
  for (uint32_t i = 0; started && i < channels_.size(); ++i) {
    const ChannelProgress& c = *channels_[i];
    ChannelSnapshot cs;
    cs.channel = i + 1;
    cs.state = state_name(c.state());
    cs.state_s = std::max<double>(0, static_cast<double>(now - c.since_ns()) / 1e9);
    cs.bytes = c.bytes();
    s.bytes_done += cs.bytes;
    s.channels.push_back(std::move(cs));
  }
  s.bytes_total = std::max(total_.load(std::memory_order_relaxed), s.bytes_done);
  if (s.bytes_done > last_done_) {
    last_done_ = s.bytes_done;
    last_progress_ns_ = s.last_update_ns;
  }
  s.last_progress_ns = last_progress_ns_;
  // The rate over the last 5 seconds of samples.
  samples_.push_back({now, s.bytes_done});
  while (samples_.size() > 2 && now - samples_.front().first > 5'000'000'000LL)
    samples_.erase(samples_.begin());
  const auto& [t0, b0] = samples_.front();
  if (now > t0) s.rate = static_cast<double>(s.bytes_done - b0) / (static_cast<double>(now - t0) / 1e9);
  if (s.rate > 0 && s.bytes_total >= s.bytes_done)
    s.eta_s = static_cast<double>(s.bytes_total - s.bytes_done) / s.rate;
  if (s.finished) s.eta_s = 0;
  return s;
}

ProgressPublisher::ProgressPublisher(JobProgress& job, std::vector<Sink> sinks,
                                     std::chrono::milliseconds interval)
    : job_(job), sinks_(std::move(sinks)), interval_(interval) {
  if (!sinks_.empty()) thread_ = std::thread([this] { run(); });
}

ProgressPublisher::~ProgressPublisher() { stop(); }

void ProgressPublisher::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (sinks_.empty()) return;
  const ProgressSnapshot last = job_.snapshot();
  for (auto& s : sinks_) s(last);
}

void ProgressPublisher::run() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    lk.unlock();
    const ProgressSnapshot s = job_.snapshot();
    for (auto& sink : sinks_) sink(s);
    lk.lock();
    cv_.wait_for(lk, interval_, [&] { return stop_; });
  }
}

}  // namespace stripeback::engine
