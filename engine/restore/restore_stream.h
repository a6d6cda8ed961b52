// Restore from media that are read in order only (StorageCaps without random_read).
//
// A piece's index is at its end, so these pieces are not opened by their trailer first:
// each needed piece is read once, straight from its medium, in frame order, and every frame
// is checked as it comes (header, payload CRC, authentication, decompression, digest) and
// its data written to the file's temporary at once. The trailer, when it arrives, must
// list exactly the extents seen (and their digests), the footer's checksum over header and
// frame headers must be the one computed and the one the catalog recorded; only then are
// the piece's files counted done, and a file whose last piece is done is verified whole
// against the catalog and renamed into place by the same steps as any restored file
// (restore_channel.h). Nothing is staged anywhere.
//
// Pieces are grouped by the drive they were written in and each group has its own channel,
// so pieces on different drives are restored at once. With drives given for the restore
// (volumes looked for by label) one channel reads them all, so no two channels ever share
// a drive.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "catalog/catalog.h"
#include "engine/pieces/change_map.h"
#include "engine/restore/restore_channel.h"

namespace stripeback::engine {

class Keyring;
class FrameCipher;

class StreamPlan {
 public:
  StreamPlan();
  ~StreamPlan();
  // A file of `b` whose pieces are on media read in order.
  Result<void> add(const catalog::FileRecord& f, const catalog::Backup& b);
  // A file of a backup with a level on such media: `units` is its change map in `b`,
  // `older` the chain it builds on (newest first, each on such media too), and `owner` the
  // backup each change unit is read from (the newest of the chain that wrote it). Each
  // piece of the chain is read once; from each frame only the units its backup owns are
  // written, and every unit is checked against `units`.
  Result<void> add_chain(const catalog::FileRecord& f, const catalog::Backup& b,
                         std::shared_ptr<const UnitMap> units,
                         const std::vector<std::pair<const catalog::Backup*,
                                                     const catalog::FileRecord*>>& older,
                         std::vector<uint64_t> owner);
  // Opens the first piece of each channel and checks its header and key, before the
  // target is created: a missing key is invalid_argument, a wrong one wrong_key.
  Result<void> check_keys(Keyring* keys, const std::vector<std::string>& drives);
  uint32_t channels() const { return static_cast<uint32_t>(groups_.size()); }
  // Runs channel `index` (of channels()), reported as channel number `number`.
  RestoreOutcome run_channel(const RestoreContext& ctx, uint32_t index, uint32_t number,
                             Keyring* keys, const std::vector<std::string>& drives);
  std::vector<std::string> pieces_read() const;
  // The pieces planned to be read, each once, with the backup each belongs to.
  std::vector<std::pair<uint64_t, const catalog::PieceRecord*>> planned_pieces() const;
  uint64_t bytes_read() const { return bytes_read_.load(); }

  struct File;
  struct Piece;

 private:
  Result<void> open_piece(Piece& p, Keyring* keys, const std::vector<std::string>& drives);
  std::deque<File> files_;
  std::map<std::string, File*> by_key_;  // backup id + path
  std::deque<Piece> pieces_;
  std::map<std::string, Piece*> piece_by_name_;
  std::vector<std::vector<Piece*>> groups_;
  std::atomic<uint64_t> bytes_read_{0};
  mutable std::mutex mu_;
  std::vector<std::string> read_;
};

}  // namespace stripeback::engine
