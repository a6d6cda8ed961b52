// Tape as a backup destination for one channel: TapeChannelSink owns the channel's drive
// (its current volume and its TapeIoHelper) and hands out one TapePieceOutput per piece.
// Each piece becomes one tape stream (one tape file, more when it spans volumes).
//
// Pieces are produced append-only, but the channel's engine may complete frame writes out
// of order; the output puts every byte in piece order before it reaches the drive. Only
// one piece streams to the drive at a time: bytes of a piece opened while the previous one
// is still finishing wait in memory until it is committed.
//
// Everything here runs on the channel's thread, except the helper's own drive thread.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "engine/piece_writer.h"
#include "io/file.h"
#include "io/io_engine.h"
#include "tape/io_helper.h"
#include "tape/volume.h"

namespace stripeback::engine {

class TapeChannelSink;

class TapePieceOutput final : public PieceOutput {
 public:
  TapePieceOutput(TapeChannelSink& sink, tape::StreamId id, std::string name);
  int fd() const override { return placeholder_.get(); }
  std::string describe() const override;
  Result<void> write_at(uint64_t offset, std::span<const std::byte> data) override;
  Result<void> commit() override;
  void abandon() override {}

  // A frame write routed here by the channel's engine. Completions of every write that is
  // now in piece order are appended to `done` (the op's buffer is free once completed).
  void accept(const io::IoOp& op, std::vector<io::IoCompletion>& done);
  size_t held() const { return held_.size(); }
  // Completes every held write with an error (the write before it never came).
  void fail_held(std::vector<io::IoCompletion>& done);
  // Where the piece went (after commit).
  const std::optional<tape::StreamLocation>& location() const { return location_; }
  const tape::StreamId& id() const { return id_; }

 private:
  friend class TapeChannelSink;
  struct Held {
    const std::byte* data;
    uint32_t len;
    std::optional<uint64_t> tag;    // an IoOp's tag; none for write_at copies
    std::vector<std::byte> copy;    // write_at data, owned
  };
  Result<void> append(std::span<const std::byte> data);
  void drain(std::vector<io::IoCompletion>* done);

  TapeChannelSink& sink_;
  tape::StreamId id_;
  std::string name_;
  io::UniqueFd placeholder_;  // identifies this piece's ops; nothing is written to it
  uint64_t next_ = 0;  // piece bytes delivered in order so far
  std::map<uint64_t, Held> held_;
  std::vector<std::byte> backlog_;  // in-order bytes waiting for the drive (not active yet)
  bool active_ = false;
  std::optional<Error> error_;
  std::optional<tape::StreamLocation> location_;
};

class TapeChannelSink {
 public:
  TapeChannelSink(std::unique_ptr<tape::Volume> volume, tape::VolumeProvider* spares,
                  uint32_t block_size, size_t buffers, tape::TapeIoHelper::Mode mode);
  ~TapeChannelSink();

  // A new piece; its stream starts when every earlier piece is committed.
  Result<TapePieceOutput*> open_piece(const tape::StreamId& id, const std::string& name);
  const std::string& url() const { return url_; }
  tape::DriveStats stats() const { return helper_->stats(); }
  // Converts a finished piece's location for the catalog.
  static catalog::MediaLocation to_catalog(const tape::StreamLocation& loc);

 private:
  friend class TapePieceOutput;
  Result<void> deliver(TapePieceOutput& out, std::span<const std::byte> data);
  Result<tape::StreamLocation> finish(TapePieceOutput& out);
  Result<void> activate(TapePieceOutput& out);

  std::unique_ptr<tape::Volume> volume_;
  std::string url_;
  std::unique_ptr<tape::TapeIoHelper> helper_;
  std::deque<std::unique_ptr<TapePieceOutput>> outputs_;  // uncommitted, oldest first
  std::vector<std::unique_ptr<TapePieceOutput>> finished_;
  std::span<uint8_t> buf_;  // helper buffer being filled
  size_t fill_ = 0;
  bool have_buf_ = false;
};

}  // namespace stripeback::engine
