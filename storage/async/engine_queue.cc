#include "storage/async/engine_queue.h"

namespace stripeback::io {

OpKind op_kind(storage::OpKind k) {
  switch (k) {
    case storage::OpKind::read: return OpKind::read;
    case storage::OpKind::write: return OpKind::write;
    case storage::OpKind::sync: return OpKind::fdatasync;
  }
  return OpKind::read;
}

storage::OpKind op_kind(OpKind k) {
  switch (k) {
    case OpKind::read: return storage::OpKind::read;
    case OpKind::write: return storage::OpKind::write;
    default: return storage::OpKind::sync;
  }
}

EngineQueue::EngineQueue(std::unique_ptr<IoEngine> engine, std::string name, bool can_wake,
                         const std::vector<std::pair<std::byte*, size_t>>& regions)
    : engine_(std::move(engine)), name_(name.empty() ? engine_->name() : std::move(name)),
      can_wake_(can_wake),
      fixed_(!regions.empty() && engine_->register_buffers(regions)), comps_(64) {}

void EngineQueue::add(int fd, const storage::Request& r) {
  pending_.push_back(IoOp{op_kind(r.kind), fd, r.offset, r.buf, r.len, r.tag,
                          fixed_ ? r.region : int16_t{-1}});
}

void EngineQueue::flush() {
  if (pending_.empty()) return;
  auto r = engine_->submit(pending_);
  if (!r)  // the engine itself is broken: every op of the batch fails with its error
    for (const IoOp& op : pending_) failed_.push_back({op.tag, op_kind(op.kind), r.error()});
  pending_.clear();
}

size_t EngineQueue::reap(std::span<storage::Completion> out, size_t min_complete,
                         storage::Clock::time_point until) {
  flush();
  size_t n = 0;
  while (!failed_.empty() && n < out.size()) {
    out[n++] = std::move(failed_.back());
    failed_.pop_back();
  }
  if (n == out.size()) return n;
  if (comps_.size() < out.size() - n) comps_.resize(out.size() - n);
  std::span<IoCompletion> c(comps_.data(), out.size() - n);
  size_t got = engine_->reap(c, min_complete > n ? min_complete - n : 0, until);
  for (size_t i = 0; i < got; ++i)
    out[n++] = storage::Completion{c[i].tag, op_kind(c[i].kind), std::move(c[i].result)};
  return n;
}

size_t EngineQueue::in_flight() const {
  return engine_->in_flight() + pending_.size() + failed_.size();
}

}  // namespace stripeback::io
