#include "backends/s3/write_file.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "backends/s3/url.h"
#include "storage/ordered_writes.h"

namespace stripeback::s3 {
namespace {

using Buffer = std::vector<std::byte>;

// What the part uploads in flight share with the file: their handlers keep it (and the
// buffers they send) alive after the file is gone.
struct Upload {
  std::string id;
  std::vector<CompletedPart> parts;  // part n at n - 1
  std::vector<Buffer> spare;         // buffers of parts that went out
  size_t in_flight = 0;
  std::optional<Error> error;
};

// How long an abandoned object waits for its parts in flight before aborting the upload.
constexpr auto kAbandonWait = std::chrono::seconds(30);

class S3WriteFile final : public storage::WriteFile {
 public:
  S3WriteFile(std::shared_ptr<Session> session, const storage::Location& at, const void* key,
              std::optional<ObjectLock> lock)
      : session_(std::move(session)),
        lock_(std::move(lock)),
        name_(at.str()),
        bucket_(bucket_of(at)),
        object_(key_of(at)),
        key_(key),
        part_size_(session_->client().config().part_size),
        w_(name_, "s3", [this](std::span<const std::byte> b) { return take(b); }),
        up_(std::make_shared<Upload>()) {}
  ~S3WriteFile() override {
    if (!committed_ && !abandoned_) abort_upload();
  }

  const std::string& name() const override { return name_; }
  Result<void> submit(storage::IoLoop& loop, const storage::Request& r) override {
    return w_.submit(loop, key_, r);
  }
  Result<void> write_at(const std::byte* buf, size_t len, uint64_t offset) override {
    return w_.write_at(buf, len, offset);
  }
  Result<void> preallocate(uint64_t, uint64_t) override { return ok(); }
  Result<void> truncate(uint64_t size) override {
    if (size == w_.next() && !w_.has_held()) return ok();
    return fail(Errc::unsupported, "'" + name_ + "' cannot be truncated: an object being written "
                                                 "takes its bytes in order, once");
  }
  Result<void> set_attrs(const storage::Attrs&) override { return ok(); }
  Result<void> commit() override;
  Result<void> close() override { return ok(); }
  void abandon() override {
    abandoned_ = true;
    w_.fail_held();
    abort_upload();
  }

 private:
  Result<void> take(std::span<const std::byte> bytes);
  Result<void> send_part();
  Result<void> wait_parts(size_t at_most);
  Result<void> finish_multipart();
  Result<void> check_size();
  void abort_upload();
  Error failed(const Error& e, const char* what) const {
    return e.wrap("unable to " + std::string(what) + " '" + name_ + "'");
  }

  std::shared_ptr<Session> session_;
  std::optional<ObjectLock> lock_;  // the object's retention, set when it is created
  std::string name_, bucket_, object_;
  const void* key_;
  uint64_t part_size_;
  storage::OrderedWrites w_;
  std::shared_ptr<Upload> up_;
  Buffer cur_;
  uint64_t taken_ = 0;  // bytes of the stream taken so far
  bool committed_ = false, abandoned_ = false;
};

// Fills the current part; a full part goes out only once more bytes come, so an object of
// exactly one part is still sent with one PutObject.
Result<void> S3WriteFile::take(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (cur_.size() >= part_size_) SB_TRY(send_part());
    if (cur_.capacity() < part_size_) cur_.reserve(part_size_);
    size_t n = std::min<size_t>(bytes.size(), part_size_ - cur_.size());
    cur_.insert(cur_.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    bytes = bytes.subspan(n);
    taken_ += n;
  }
  // Keep the parts in flight moving without waiting.
  if (up_->in_flight > 0) session_->poll(Clock::now());
  if (up_->error) return *up_->error;
  return ok();
}

Result<void> S3WriteFile::wait_parts(size_t at_most) {
  while (up_->in_flight > at_most && !up_->error)
    session_->poll(Clock::now() + std::chrono::seconds(1));
  if (up_->error) return *up_->error;
  return ok();
}

Result<void> S3WriteFile::send_part() {
  const S3Config& cfg = session_->client().config();
  if (up_->id.empty()) {
    S3Op op;
    op.kind = S3OpKind::create_multipart_upload;
    op.lock = lock_;
    op.bucket = bucket_;
    op.key = object_;
    S3Result r = session_->run(std::move(op));
    if (!r.outcome) return failed(r.outcome.error(), "start writing");
    up_->id = r.upload_id;
  }
  SB_TRY(wait_parts(std::max<uint32_t>(cfg.parts_in_flight, 1) - 1));
  auto number = static_cast<uint32_t>(up_->parts.size() + 1);
  if (number > kMaxPartNumber)
    return fail(Errc::invalid_argument, "'" + name_ + "' needs more than " +
                                            std::to_string(kMaxPartNumber) + " parts");
  up_->parts.push_back({number, "", ""});
  auto body = std::make_shared<Buffer>(std::move(cur_));
  S3Op op;
  op.kind = S3OpKind::upload_part;
  op.bucket = bucket_;
  op.key = object_;
  op.upload_id = up_->id;
  op.part_number = number;
  op.body = *body;
  ++up_->in_flight;
  std::string name = name_;
  session_->start(std::move(op), [up = up_, body, number, name](S3Result r) {
    --up->in_flight;
    if (r.outcome) {
      up->parts[number - 1].etag = r.etag;
      up->parts[number - 1].checksum_crc32c = r.checksum_crc32c;
    } else if (!up->error) {
      up->error = r.outcome.error().wrap("unable to write '" + name + "'");
    }
    body->clear();
    up->spare.push_back(std::move(*body));
  });
  // The next part: a spare buffer, and a larger size once the object grows so large that
  // it would not fit S3's part count at this one.
  if (!up_->spare.empty()) {
    cur_ = std::move(up_->spare.back());
    up_->spare.pop_back();
  } else {
    cur_ = Buffer();
  }
  auto grown = cfg.part_size_for(2 * taken_);
  if (!grown) return failed(grown.error(), "write");
  part_size_ = std::max(part_size_, *grown);
  return ok();
}

Result<void> S3WriteFile::finish_multipart() {
  SB_TRY(send_part());
  SB_TRY(wait_parts(0));
  S3Op op;
  op.kind = S3OpKind::complete_multipart_upload;
  op.bucket = bucket_;
  op.key = object_;
  op.upload_id = up_->id;
  op.parts = up_->parts;
  op.expected_size = taken_;
  S3Result r = session_->run(std::move(op));
  if (!r.outcome) return failed(r.outcome.error(), "complete");
  up_->id.clear();
  return check_size();
}

// The gateway's answer to a completion carries no checksum of the whole: the size is what
// can be checked.
Result<void> S3WriteFile::check_size() {
  S3Op op;
  op.kind = S3OpKind::head_object;
  op.bucket = bucket_;
  op.key = object_;
  S3Result r = session_->run(std::move(op));
  if (!r.outcome) return failed(r.outcome.error(), "check");
  if (r.size != taken_)
    return fail(Errc::corrupt, "'" + name_ + "' holds " + std::to_string(r.size) +
                                   " bytes after it was completed, " + std::to_string(taken_) +
                                   " were written");
  return ok();
}

Result<void> S3WriteFile::commit() {
  if (committed_) return ok();
  if (w_.has_held())
    return fail(Errc::io, "'" + name_ + "': writes before offset " + std::to_string(w_.next()) +
                              " are missing at commit");
  if (w_.error()) return *w_.error();
  if (up_->id.empty()) {
    S3Op op;
    op.kind = S3OpKind::put_object;
    op.lock = lock_;
    op.bucket = bucket_;
    op.key = object_;
    op.body = cur_;
    S3Result r = session_->run(std::move(op));
    if (!r.outcome) return failed(r.outcome.error(), "write");
  } else {
    SB_TRY(finish_multipart());
  }
  committed_ = true;
  cur_ = Buffer();
  return ok();
}

void S3WriteFile::abort_upload() {
  auto until = Clock::now() + kAbandonWait;
  while (up_->in_flight > 0 && Clock::now() < until) session_->poll(until);
  if (up_->id.empty()) return;
  S3Op op;
  op.kind = S3OpKind::abort_multipart_upload;
  op.bucket = bucket_;
  op.key = object_;
  op.upload_id = up_->id;
  (void)session_->run(std::move(op));  // best effort: a leftover upload costs space only
  up_->id.clear();
}

}  // namespace

std::unique_ptr<storage::WriteFile> make_write_file(std::shared_ptr<Session> session,
                                                    const storage::Location& at,
                                                    const void* key,
                                                    std::optional<ObjectLock> lock) {
  return std::make_unique<S3WriteFile>(std::move(session), at, key, std::move(lock));
}

}  // namespace stripeback::s3
