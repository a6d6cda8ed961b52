// The preview's time estimate (engine/history/time_estimate.h): from the finished jobs of
// the same kind whose backups are on the medium read, and none without such history.
#include "engine/history/time_estimate.h"

#include <gtest/gtest.h>

namespace stripeback::engine {
namespace {

catalog::Backup backup_on(uint64_t id, const std::string& location) {
  catalog::Backup b;
  b.id = id;
  catalog::PieceRecord p;
  p.name = "p" + std::to_string(id);
  p.location = location;
  b.pieces.push_back(p);
  return b;
}

catalog::JobRecord job(const std::string& type, uint64_t backup, uint64_t bytes, double seconds,
                       const std::string& status = "complete") {
  catalog::JobRecord j;
  j.type = type;
  j.status = status;
  j.backup_ids = {backup};
  j.bytes_in = bytes;
  j.start_ns = 1'000'000'000;
  j.end_ns = j.start_ns + static_cast<int64_t>(seconds * 1e9);
  return j;
}

RestorePreview reading(const std::string& medium, uint64_t bytes, bool verify_only = false) {
  RestorePreview p;
  p.verify_only = verify_only;
  PreviewPiece piece;
  piece.medium = medium;
  piece.bytes_to_read = bytes;
  p.pieces.push_back(piece);
  return p;
}

TEST(TimeEstimate, RateOfFinishedRestoresFromTheSameMedium) {
  std::vector<catalog::Backup> backups{backup_on(1, "/backups"), backup_on(2, "s3://b/p")};
  std::vector<catalog::JobRecord> jobs{
      job("restore", 1, 100'000'000, 1.0), job("restore", 1, 300'000'000, 3.0),
      job("restore", 2, 1'000'000, 10.0),                // another medium
      job("validate", 1, 1'000'000, 10.0),               // another kind of job
      job("restore", 1, 1'000'000, 10.0, "failed"),      // not finished
      job("restore", 9, 1'000'000, 10.0)};               // its backup is gone
  RestorePreview p = reading("disk", 200'000'000);
  estimate_time(p, jobs, backups);
  ASSERT_EQ(p.estimates.size(), 1u);
  EXPECT_EQ(p.estimates[0].medium, "disk");
  EXPECT_EQ(p.estimates[0].jobs, 2u);
  EXPECT_NEAR(p.estimates[0].mb_per_s, 100.0, 0.01);
  EXPECT_NEAR(p.estimates[0].seconds, 2.0, 0.001);
  ASSERT_TRUE(p.seconds.has_value());
  EXPECT_NEAR(*p.seconds, 2.0, 0.001);
}

TEST(TimeEstimate, NoneWithoutHistoryOnTheMedium) {
  std::vector<catalog::Backup> backups{backup_on(1, "/backups")};
  std::vector<catalog::JobRecord> jobs{job("restore", 1, 100'000'000, 1.0)};
  RestorePreview p = reading("s3", 5'000'000);
  estimate_time(p, jobs, backups);
  ASSERT_EQ(p.estimates.size(), 1u);
  EXPECT_EQ(p.estimates[0].jobs, 0u);
  EXPECT_FALSE(p.seconds.has_value());
  RestorePreview v = reading("disk", 5'000'000, true);
  estimate_time(v, jobs, backups);  // a validation goes by validations only
  EXPECT_FALSE(v.seconds.has_value());
}

TEST(TimeEstimate, MediumOfAPiece) {
  catalog::PieceRecord p;
  p.location = "/var/backups";
  EXPECT_EQ(piece_medium(p), "disk");
  p.location = "nfs://filer/export";
  EXPECT_EQ(piece_medium(p), "nfs");
  p.media = catalog::MediaLocation{};
  EXPECT_EQ(piece_medium(p), "tape");
}

}  // namespace
}  // namespace stripeback::engine
