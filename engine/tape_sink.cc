#include "engine/tape_sink.h"

#include <fcntl.h>

#include <cstring>

namespace stripeback::engine {
namespace {

io::IoCompletion completion(uint64_t tag, io::OpKind kind, Result<uint32_t> r) {
  io::IoCompletion c;
  c.tag = tag;
  c.kind = kind;
  c.result = std::move(r);
  return c;
}

}  // namespace

TapePieceOutput::TapePieceOutput(TapeChannelSink& sink, tape::StreamId id, std::string name)
    : sink_(sink), id_(id), name_(std::move(name)),
      placeholder_(::open("/dev/null", O_WRONLY | O_CLOEXEC)) {}

std::string TapePieceOutput::describe() const { return "tape:" + sink_.url(); }

Result<void> TapePieceOutput::append(std::span<const std::byte> data) {
  if (error_) return *error_;
  auto r = sink_.deliver(*this, data);
  if (!r) error_ = r.error();
  return r;
}

void TapePieceOutput::drain(std::vector<io::IoCompletion>* done) {
  while (!held_.empty() && held_.begin()->first == next_) {
    Held h = std::move(held_.begin()->second);
    held_.erase(held_.begin());
    auto r = append({h.copy.empty() ? h.data : h.copy.data(), h.len});
    next_ += h.len;
    if (h.tag && done) {
      done->push_back(completion(*h.tag, io::OpKind::write,
                                 r ? Result<uint32_t>(h.len) : Result<uint32_t>(r.error())));
    }
  }
}

Result<void> TapePieceOutput::write_at(uint64_t offset, std::span<const std::byte> data) {
  if (offset < next_ || held_.count(offset))
    return fail(Errc::invalid_argument, "piece '" + name_ + "': a tape piece is append-only, "
                                        "offset " + std::to_string(offset) + " written twice");
  if (offset == next_) {
    SB_TRY(append(data));
    next_ += data.size();
    // Held frame writes cannot be pending here: PieceWriter writes the header before any
    // frame and the trailer after every frame completed.
    drain(nullptr);
    return error_ ? Result<void>(*error_) : ok();
  }
  Held h{nullptr, static_cast<uint32_t>(data.size()), std::nullopt,
         std::vector<std::byte>(data.begin(), data.end())};
  held_.emplace(offset, std::move(h));
  return ok();
}

void TapePieceOutput::accept(const io::IoOp& op, std::vector<io::IoCompletion>& done) {
  if (op.kind != io::OpKind::write) {
    // Durability is commit()'s job on tape.
    done.push_back(completion(op.tag, op.kind, uint32_t{0}));
    return;
  }
  if (op.offset < next_ || held_.count(op.offset)) {
    done.push_back(completion(op.tag, op.kind,
                              Error{Errc::invalid_argument, 0,
                                    "piece '" + name_ + "': offset " + std::to_string(op.offset) +
                                        " written twice to an append-only tape piece"}));
    return;
  }
  held_.emplace(op.offset, Held{op.buf, op.len, op.tag, {}});
  drain(&done);
}

void TapePieceOutput::fail_held(std::vector<io::IoCompletion>& done) {
  for (auto& [offset, h] : held_)
    if (h.tag)
      done.push_back(completion(*h.tag, io::OpKind::write,
                                Error{Errc::io, 0,
                                      "piece '" + name_ + "': the write before offset " +
                                          std::to_string(offset) + " never came"}));
  held_.clear();
  if (!error_) error_ = Error{Errc::io, 0, "piece '" + name_ + "': writes missing"};
}

Result<void> TapePieceOutput::commit() {
  if (error_) return *error_;
  if (!held_.empty())
    return fail(Errc::io, "piece '" + name_ + "': a gap at offset " + std::to_string(next_) +
                              " remains before the tape stream can be closed");
  SB_ASSIGN(location_, sink_.finish(*this));
  return ok();
}

TapeChannelSink::TapeChannelSink(std::unique_ptr<tape::Volume> volume,
                                 tape::VolumeProvider* spares, uint32_t block_size,
                                 size_t buffers, tape::TapeIoHelper::Mode mode)
    : volume_(std::move(volume)), url_(volume_->url) {
  helper_ = std::make_unique<tape::TapeIoHelper>(volume_, spares, block_size, buffers, mode);
}

TapeChannelSink::~TapeChannelSink() {
  // The helper thread uses volume_: stop it first.
  helper_.reset();
}

Result<TapePieceOutput*> TapeChannelSink::open_piece(const tape::StreamId& id,
                                                     const std::string& name) {
  auto out = std::make_unique<TapePieceOutput>(*this, id, name);
  if (!out->placeholder_.valid())
    return sys_error(errno, "unable to open /dev/null for a tape piece");
  outputs_.push_back(std::move(out));
  TapePieceOutput* p = outputs_.back().get();
  if (outputs_.size() == 1) SB_TRY(activate(*p));
  return p;
}

Result<void> TapeChannelSink::activate(TapePieceOutput& out) {
  SB_TRY(helper_->begin_stream(out.id_));
  out.active_ = true;
  if (!out.backlog_.empty()) {
    std::vector<std::byte> b = std::move(out.backlog_);
    out.backlog_.clear();
    SB_TRY(deliver(out, b));
  }
  return ok();
}

Result<void> TapeChannelSink::deliver(TapePieceOutput& out, std::span<const std::byte> data) {
  if (!out.active_) {
    out.backlog_.insert(out.backlog_.end(), data.begin(), data.end());
    return ok();
  }
  while (!data.empty()) {
    if (!have_buf_) {
      SB_ASSIGN(buf_, helper_->acquire());
      have_buf_ = true;
      fill_ = 0;
    }
    const size_t n = std::min(buf_.size() - fill_, data.size());
    std::memcpy(buf_.data() + fill_, data.data(), n);
    fill_ += n;
    data = data.subspan(n);
    if (fill_ == buf_.size()) {
      have_buf_ = false;
      SB_TRY(helper_->submit(fill_));
    }
  }
  return ok();
}

Result<tape::StreamLocation> TapeChannelSink::finish(TapePieceOutput& out) {
  if (outputs_.empty() || outputs_.front().get() != &out)
    return fail(Errc::invalid_argument, "tape pieces must be finished in the order they began");
  if (have_buf_) {
    have_buf_ = false;
    SB_TRY(helper_->submit(fill_));
  }
  SB_ASSIGN(tape::StreamLocation loc, helper_->end_stream());
  finished_.push_back(std::move(outputs_.front()));
  outputs_.pop_front();
  if (!outputs_.empty()) SB_TRY(activate(*outputs_.front()));
  return loc;
}

catalog::MediaLocation TapeChannelSink::to_catalog(const tape::StreamLocation& loc) {
  catalog::MediaLocation t;
  t.block_size = loc.block_size;
  t.bytes = loc.bytes;
  for (const auto& s : loc.spans)
    t.spans.push_back({s.volume_id, s.url, s.file, s.block, s.first_seq, s.blocks, s.address});
  return t;
}

}  // namespace stripeback::engine
