// The seal of the catalog (catalog/seal.h): attaching the key, verifying the log with it,
// sealing what is appended.
#include <sys/file.h>

#include <algorithm>
#include <mutex>

#include "catalog/catalog.h"
#include "catalog/catalog_state.h"
#include "util/clock.h"

namespace stripeback::catalog {

void Catalog::State::reset_reading() {
  model.clear();
  end = kFileHeaderSize;
  frames_end = kFileHeaderSize;
  last_sequence = 0;
  if (sealer) verifier = std::make_unique<ChainVerifier>(*sealer);
}

void Catalog::State::follow_frames(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (verifier) verifier->next(f, f.offset != frames_end);
    frames_end = f.offset + f.size;
  }
}

Result<void> Catalog::State::verify_all() {
  verifier = std::make_unique<ChainVerifier>(*sealer);
  frames_end = kFileHeaderSize;
  SB_ASSIGN(auto bytes, log_range(kFileHeaderSize, end - kFileHeaderSize));
  ScanResult scan = scan_records(bytes, kFileHeaderSize, 0);
  follow_frames(scan.frames);
  return ok();
}

Result<std::vector<uint8_t>> Catalog::State::frame_records(
    const std::vector<EncodedRecord>& records, uint64_t* last, Mac* chain, bool* seal_begins) {
  std::vector<uint8_t> buf;
  uint64_t seq = last_sequence;
  *seal_begins = false;
  if (!sealer) {
    if (model.seal() || model.has_sealed_frames() || header_version == kSealedFormatVersion)
      return fail(Errc::invalid_argument,
                  "the catalog in '" + dir +
                      "' is sealed: only a writer holding its key may append to it "
                      "(docs/security.md, \"Tamper-evident catalog\")");
    for (const auto& r : records) append_frame(buf, ++seq, r.type, r.payload);
    *last = seq;
    return buf;
  }
  *chain = verifier->chain();
  if (!model.seal()) {
    SB_ASSIGN(auto rec, encode_seal(seal_params));
    append_sealed_frame(buf, ++seq, rec.type, rec.payload, *sealer, *chain);
    *seal_begins = true;
  }
  for (const auto& r : records)
    append_sealed_frame(buf, ++seq, r.type, r.payload, *sealer, *chain);
  *last = seq;
  return buf;
}

Result<void> Catalog::State::mark_header_sealed() {
  if (header_version == kSealedFormatVersion) return ok();
  SB_TRY(log_write(0, encode_file_header(kSealedFormatVersion), "catalog file header"));
  SB_TRY(log_out->commit());
  header_version = kSealedFormatVersion;
  return ok();
}

bool Catalog::sealed() const {
  std::lock_guard<std::mutex> g(mu_);
  const State& s = *state_;
  return s.model.seal() || s.model.has_sealed_frames() ||
         s.header_version == kSealedFormatVersion;
}

std::optional<SealParams> Catalog::seal_params() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->model.seal();
}

bool Catalog::seal_attached() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_->sealer != nullptr;
}

Result<void> Catalog::attach_seal(std::shared_ptr<const Sealer> sealer, const SealParams& params) {
  std::lock_guard<std::mutex> g(mu_);
  State& s = *state_;
  SB_ASSIGN(FileLock lock, FileLock::acquire(s.lock_fd.get(), LOCK_SH, s.lock_path));
  SB_TRY(s.follow_replaced());
  SB_TRY(s.catch_up());
  if (const auto& have = s.model.seal()) {
    if (seal_check(*sealer) != have->check)
      return fail(Errc::wrong_key,
                  "the key given is not the one the catalog in '" + s.dir +
                      "' is sealed with (key version " + std::to_string(have->kek_version) +
                      "): a wrong passphrase or key file, or the catalog was sealed anew by "
                      "someone else");
    s.seal_params = *have;
  } else if (s.model.has_sealed_frames()) {
    return fail(Errc::tampered, "the catalog in '" + s.dir +
                                    "' carries sealed records but its seal record is gone: "
                                    "it cannot be verified (rebuild it from the media)");
  } else {
    s.seal_params = params;
    if (s.seal_params.sealed_ns == 0) s.seal_params.sealed_ns = util::wall_now_ns();
  }
  s.sealer = std::move(sealer);
  return s.verify_all();
}

std::vector<TamperFinding> Catalog::tampering() const {
  std::lock_guard<std::mutex> g(mu_);
  const State& s = *state_;
  std::vector<TamperFinding> out;
  if (s.header_version == kSealedFormatVersion && !s.model.has_sealed_frames())
    out.push_back({0, 0,
                   "the file header of '" + s.log_path +
                       "' says the log is sealed, but no record carries a seal: the seals "
                       "were stripped"});
  if (s.model.has_sealed_frames() && !s.model.seal())
    out.push_back({0, 0, "records of '" + s.log_path +
                             "' carry seals, but its seal record is gone"});
  if (s.verifier)
    for (const auto& f : s.verifier->findings()) out.push_back(f);
  return out;
}

}  // namespace stripeback::catalog
