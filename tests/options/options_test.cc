// The option schema: one definition per option, checked alike whichever front end sets it,
// and messages that name an option in the words of the front end that runs the job.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "options/job_options.h"
#include "options/schema.h"
#include "util/option_words.h"

namespace stripeback::options {
namespace {

// Installs a front end's wording for one test.
struct Wording {
  explicit Wording(const util::OptionWording& w) { util::set_option_wording(&w); }
  ~Wording() { util::set_option_wording(nullptr); }
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string error_of(const Result<void>& r) { return r ? std::string() : r.error().what; }

Result<void> set(Settings& s, std::string_view key, std::string_view value) {
  const Option* o = find_option(key);
  if (o == nullptr) return fail(Errc::invalid_argument, "no option " + std::string(key));
  return set_option(*o, s, value);
}

TEST(OptionSchema, EveryOptionIsComplete) {
  for (const auto& o : schema()) {
    SCOPED_TRACE(std::string(o.key));
    EXPECT_FALSE(o.key.empty());
    EXPECT_FALSE(o.help.empty());
    EXPECT_NE(o.set, nullptr);
    EXPECT_NE(o.reset, nullptr);
    EXPECT_NE(o.jobs, 0u);
    EXPECT_TRUE(o.api || !o.flag.empty()) << "an option nobody can set";
    if (o.type == Type::number && o.lo != 0) {
      EXPECT_LE(o.lo, o.hi);
    }
  }
}

// Within one job, a key and a flag each stand for one option.
TEST(OptionSchema, KeysAndFlagsAreUniquePerJob) {
  for (unsigned job : {kBackup, kRestore, kValidate}) {
    std::set<std::string_view> keys, flags;
    for (const auto& o : schema()) {
      if ((o.jobs & job) == 0) continue;
      EXPECT_TRUE(keys.insert(o.key).second) << o.key << " twice for job " << job;
      if (!o.flag.empty()) {
        EXPECT_TRUE(flags.insert(o.flag).second) << o.flag << " twice";
      }
    }
  }
}

// Entries that share a key (force, tag) set the same thing.
TEST(OptionSchema, EntriesOfOneKeySetTheSameField) {
  for (const auto& o : schema()) {
    const Option* first = find_option(o.key);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->type, o.type) << o.key;
    EXPECT_EQ(first->api, o.api) << o.key;
  }
}

// docs/embedding.md lists every key the C API takes.
TEST(OptionSchema, EmbeddingGuideNamesEveryKey) {
  std::ifstream in(STRIPEBACK_SOURCE_DIR "/docs/embedding.md");
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  for (const auto& o : schema())
    if (o.api) {
      EXPECT_TRUE(contains(text.str(), "`" + std::string(o.key) + "`")) << o.key;
    }
}

TEST(OptionWording, EachFrontEndNamesTheOptionItsOwnWay) {
  {
    Wording w(cli_wording());
    EXPECT_EQ(util::option_word("files_per_set"), "--files-per-set");
    EXPECT_EQ(util::option_word("destination"), "--to");
    EXPECT_EQ(util::option_value_word("backup_id", "ID"), "--backup ID");
    EXPECT_EQ(util::ask_option("force"), "use --force");
    EXPECT_EQ(util::command_word("list"), "'stripeback list'");
  }
  {
    Wording w(api_wording());
    EXPECT_EQ(util::option_word("files_per_set"), "'files_per_set'");
    EXPECT_EQ(util::option_value_word("backup_id", "ID"), "'backup_id'");
    EXPECT_EQ(util::ask_option("force"), "set 'force'");
    EXPECT_EQ(util::command_word("list"), "sb_catalog_list");
  }
}

// One check for both front ends: the range of channels was 1-64 in the C API and 1-256 on
// the command line; now both take what the engine runs.
TEST(OptionChecks, OneRangeWhicheverFrontEndSetsIt) {
  Settings s;
  {
    Wording w(cli_wording());
    EXPECT_EQ(error_of(set(s, "channels", "0")),
              "option --channels wants a whole number from 1 to 256; got '0'");
  }
  {
    Wording w(api_wording());
    EXPECT_EQ(error_of(set(s, "channels", "257")),
              "option 'channels' wants a whole number from 1 to 256; got '257'");
  }
  ASSERT_TRUE(set(s, "channels", "100"));
  EXPECT_EQ(s.channels, 100u);
  EXPECT_EQ(s.given.at("channels"), "100");
}

TEST(OptionChecks, ValuesAreParsedOnce) {
  Settings s;
  ASSERT_TRUE(set(s, "max_piece_size", "4G"));
  EXPECT_EQ(s.max_piece_size, 4ull << 30);
  ASSERT_TRUE(set(s, "duration", "90m"));
  EXPECT_EQ(s.duration->count(), 5400);
  ASSERT_TRUE(set(s, "duration", "01:30"));
  EXPECT_EQ(s.duration->count(), 5400);
  ASSERT_TRUE(set(s, "checkpoint_interval", "256M,1m"));
  EXPECT_EQ(s.checkpoints->bytes, 256ull << 20);
  EXPECT_EQ(s.checkpoints->interval.count(), 60000);
  ASSERT_TRUE(set(s, "compress", "medium"));
  EXPECT_EQ(s.compress_level, 3);
  ASSERT_TRUE(set(s, "part", "2/7"));
  EXPECT_EQ(s.part->first, 2u);
  EXPECT_EQ(s.part->second, 7u);
  ASSERT_TRUE(set(s, "resume", "last"));
  EXPECT_EQ(*s.resume, 0u);
  ASSERT_TRUE(set(s, "source", "/a"));
  ASSERT_TRUE(set(s, "source", "/b"));
  EXPECT_EQ(s.sources.size(), 2u);
  ASSERT_TRUE(set(s, "direct", "false"));
  EXPECT_FALSE(s.direct);
}

TEST(OptionChecks, BadValuesNameTheOptionAndTheValue) {
  Wording w(cli_wording());
  Settings s;
  EXPECT_TRUE(contains(error_of(set(s, "compress", "zstd:99")),
                       "option --compress: invalid value 'zstd:99'"));
  EXPECT_TRUE(contains(error_of(set(s, "sample", "150%")), "--sample wants a share"));
  EXPECT_TRUE(contains(error_of(set(s, "resume", "x")), "--resume takes a backup id or 'last'"));
  EXPECT_TRUE(contains(error_of(set(s, "change_unit", "24K")), "--change-unit must be a power"));
  EXPECT_TRUE(contains(error_of(set(s, "force", "maybe")), "option --force wants true or false"));
  EXPECT_TRUE(contains(error_of(set(s, "rate", "0")), "option --rate wants a size from"));
  EXPECT_FALSE(s.was_given("compress"));  // a refused value is not recorded
}

// The checks that relate options to one another are shared too, and worded per front end.
TEST(JobOptions, RelatedOptionsAreCheckedOnceAndWordedPerFrontEnd) {
  Settings s;
  ASSERT_TRUE(set(s, "source", "/data"));
  ASSERT_TRUE(set(s, "destination", "/backup"));
  ASSERT_TRUE(set(s, "partial", "true"));
  {
    Wording w(cli_wording());
    auto o = backup_options(s);
    ASSERT_FALSE(o);
    EXPECT_EQ(o.error().what, "--partial needs --duration");
  }
  {
    Wording w(api_wording());
    auto o = backup_options(s);
    ASSERT_FALSE(o);
    EXPECT_EQ(o.error().what, "'partial' needs 'duration'");
  }
  ASSERT_TRUE(set(s, "duration", "1h"));
  auto o = backup_options(s);
  ASSERT_TRUE(o) << o.error().what;
  EXPECT_TRUE(o->partial);
  EXPECT_EQ(o->duration->count(), 3600);
  EXPECT_EQ(o->destination, "/backup");
}

TEST(JobOptions, TapeSettingsForADirectoryAreRefused) {
  Wording w(cli_wording());
  Settings s;
  ASSERT_TRUE(set(s, "source", "/data"));
  ASSERT_TRUE(set(s, "destination", "/backup"));
  ASSERT_TRUE(set(s, "tape_wait", "5"));
  auto o = backup_options(s);
  ASSERT_FALSE(o);
  EXPECT_TRUE(contains(o.error().what, "--tape-wait needs --to tape:URL")) << o.error().what;
}

// How objects are written to S3: a storage class of S3's characters, AES256 or aws:kms, a
// KMS key only with aws:kms, and none of them for a destination that is not s3://.
TEST(JobOptions, S3StorageClassAndEncryptionAreCheckedBeforeAnythingIsWritten) {
  Wording w(cli_wording());
  Settings s;
  ASSERT_TRUE(set(s, "source", "/data"));
  ASSERT_TRUE(set(s, "destination", "s3://backups/db1"));
  EXPECT_EQ(error_of(set(s, "s3_storage_class", "standard ia")),
            "option --s3-storage-class wants a storage class of upper-case letters, digits and "
            "'_' (STANDARD, STANDARD_IA, GLACIER_IR, ...); got 'standard ia'");
  EXPECT_EQ(error_of(set(s, "s3_sse", "aes")),
            "option --s3-sse wants AES256|aws:kms; got 'aes'");
  EXPECT_TRUE(contains(error_of(set(s, "s3_sse_kms_key_id", "my key")), "got 'my key'"));
  ASSERT_TRUE(set(s, "s3_storage_class", "STANDARD_IA"));
  ASSERT_TRUE(set(s, "s3_sse_kms_key_id", "alias/backups"));
  auto o = backup_options(s);
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().what,
            "--s3-sse-kms-key-id needs --s3-sse aws:kms: a KMS key encrypts only with the "
            "store's key management service");
  ASSERT_TRUE(set(s, "s3_sse", "AES256"));
  o = backup_options(s);
  ASSERT_FALSE(o);
  EXPECT_TRUE(contains(o.error().what, "--s3-sse aws:kms: a KMS key encrypts only with the "
                                       "store's key management service, not AES256"))
      << o.error().what;
  ASSERT_TRUE(set(s, "s3_sse", "aws:kms"));
  o = backup_options(s);
  ASSERT_TRUE(o) << o.error().what;
  EXPECT_EQ(s.s3.storage_class, "STANDARD_IA");
  EXPECT_EQ(s.s3.sse, "aws:kms");
  EXPECT_EQ(s.s3.sse_kms_key_id, "alias/backups");

  Settings local;
  ASSERT_TRUE(set(local, "source", "/data"));
  ASSERT_TRUE(set(local, "destination", "/backup"));
  ASSERT_TRUE(set(local, "s3_sse", "AES256"));
  {
    Wording api(api_wording());
    auto l = backup_options(local);
    ASSERT_FALSE(l);
    EXPECT_EQ(l.error().what,
              "'s3_sse' needs 'destination' s3://BUCKET/PREFIX: it sets how objects are "
              "written, and '/backup' is not one");
  }
}

TEST(JobOptions, RestoreRefusesWhatIsForOtherJobs) {
  Wording w(api_wording());
  Settings s;
  ASSERT_TRUE(set(s, "target", "/r"));
  ASSERT_TRUE(set(s, "seed", "4"));
  auto o = restore_options(s, false);
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().what, "'seed' goes with 'sample'");
  Settings v;
  ASSERT_TRUE(set(v, "sample", "10%"));
  ASSERT_TRUE(set(v, "seed", "4"));
  auto checked = restore_options(v, true);
  ASSERT_TRUE(checked) << checked.error().what;
  EXPECT_EQ(checked->select.seed, 4u);
  EXPECT_DOUBLE_EQ(*checked->select.sample, 0.1);
}

TEST(JobOptions, ExclusionsAreCheckedWhenSetAndFilesOfThemWhenTheJobIsMade) {
  Wording w(cli_wording());
  Settings s;
  ASSERT_TRUE(set(s, "source", "/data"));
  ASSERT_TRUE(set(s, "destination", "/backup"));
  const std::string bad = error_of(set(s, "exclude", "log[0-9"));
  EXPECT_TRUE(contains(bad, "--exclude")) << bad;
  EXPECT_TRUE(contains(bad, "'log[0-9'")) << bad;
  ASSERT_TRUE(set(s, "exclude", "*.tmp"));
  auto o = backup_options(s);
  ASSERT_TRUE(o) << o.error().what;
  EXPECT_EQ(o->excludes, std::vector<std::string>{"*.tmp"});
  ASSERT_TRUE(set(s, "exclude_from", "/nonexistent/stripeback-excludes"));
  auto missing = backup_options(s);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().what,
            "--exclude-from '/nonexistent/stripeback-excludes' cannot be read: No such file or "
            "directory");
}

TEST(JobOptions, NotBackedUpSinceTakesADurationBackFromNowOrATime) {
  Wording w(api_wording());
  Settings s;
  ASSERT_TRUE(set(s, "source", "/data"));
  ASSERT_TRUE(set(s, "destination", "/backup"));
  ASSERT_TRUE(set(s, "not_backed_up_since", "2026-12-07T14:45:32Z"));
  auto at = backup_options(s);
  ASSERT_TRUE(at) << at.error().what;
  EXPECT_EQ(*at->not_backed_up_since_ns, int64_t{1796654732} * 1000000000);
  ASSERT_TRUE(set(s, "not_backed_up_since", "2d"));
  auto ago = backup_options(s);
  ASSERT_TRUE(ago) << ago.error().what;
  const int64_t two_days_ns = int64_t{2} * 86400 * 1000000000;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_NEAR(static_cast<double>(now - *ago->not_backed_up_since_ns),
              static_cast<double>(two_days_ns), 60e9);
  const std::string bad = error_of(set(s, "not_backed_up_since", "yesterday"));
  EXPECT_TRUE(contains(bad, "'not_backed_up_since'")) << bad;
  EXPECT_TRUE(contains(bad, "'yesterday'")) << bad;
}

}  // namespace
}  // namespace stripeback::options
