#include "database/recovery_target.h"

#include <gtest/gtest.h>

namespace stripeback::database {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(RecoveryTarget, TimesReadAsIso8601WithAZoneOrEpochSeconds) {
  const int64_t base = int64_t{1796654732} * kSecond;  // 2026-12-07T14:45:32Z
  EXPECT_EQ(*parse_target_time("2026-12-07T14:45:32Z", "t"), base);
  EXPECT_EQ(*parse_target_time("2026-12-07 14:45:32Z", "t"), base);
  EXPECT_EQ(*parse_target_time("2026-12-07T15:45:32+01:00", "t"), base);
  EXPECT_EQ(*parse_target_time("2026-12-07T15:45:32+0100", "t"), base);
  EXPECT_EQ(*parse_target_time("2026-12-07T09:45:32-05", "t"), base);
  EXPECT_EQ(*parse_target_time("2026-12-07T14:45:32.25Z", "t"), base + kSecond / 4);
  EXPECT_EQ(*parse_target_time("2026-12-07T14:45:32.123456789Z", "t"), base + 123456789);
  EXPECT_EQ(*parse_target_time("1796654732", "t"), base);
}

TEST(RecoveryTarget, TimesWithoutAZoneOrInvalidAreRefusedNamingTheOption) {
  for (const char* bad : {"", "2026-12-07T14:45:32", "2026-12-07", "2026-13-07T14:45:32Z",
                          "2026-02-30T14:45:32Z", "2026-12-07T24:00:00Z", "yesterday",
                          "2026-12-07T14:45:32Zjunk", "2026-12-07T14:45:32.Z", "-5"}) {
    auto t = parse_target_time(bad, "--target-time");
    ASSERT_FALSE(t) << bad;
    EXPECT_EQ(t.error().code, Errc::invalid_argument);
    EXPECT_NE(t.error().what.find("--target-time '"), std::string::npos) << t.error().what;
    EXPECT_NE(t.error().what.find("ISO 8601"), std::string::npos) << t.error().what;
  }
}

TEST(RecoveryTarget, XidsAndActions) {
  EXPECT_EQ(*parse_target_xid("1234", "x"), 1234u);
  EXPECT_EQ(*parse_target_xid("4294967295", "x"), 4294967295u);
  for (const char* bad : {"", "0", "2", "4294967296", "12a", "-1", " 5"})
    EXPECT_FALSE(parse_target_xid(bad, "--target-xid")) << bad;
  EXPECT_EQ(*parse_target_action("promote", "a"), TargetAction::promote);
  EXPECT_EQ(*parse_target_action("pause", "a"), TargetAction::pause);
  EXPECT_EQ(*parse_target_action("shutdown", "a"), TargetAction::shutdown);
  auto bad = parse_target_action("resume", "--target-action");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what.find("--target-action 'resume' is not one of promote, pause, shutdown"),
            std::string::npos)
      << bad.error().what;
  EXPECT_EQ(RecoveryTarget{}.action, TargetAction::pause);  // PostgreSQL's default
  EXPECT_TRUE(RecoveryTarget{}.inclusive);
}

TEST(RecoveryTarget, TimesAreWrittenForPostgresInUtcToTheMicrosecond) {
  const int64_t t = int64_t{1796654732} * kSecond + 250'000'999;
  EXPECT_EQ(pg_time_text(t), "2026-12-07 14:45:32.250000+00");
  EXPECT_EQ(iso_time_text(t), "2026-12-07T14:45:32.25Z");
  EXPECT_EQ(iso_time_text(int64_t{1796654732} * kSecond), "2026-12-07T14:45:32Z");
}

TEST(RecoveryTarget, QuotingForTheConfigurationFileAndTheShell) {
  EXPECT_EQ(conf_quote("a'b\\c"), "'a''b\\\\c'");
  EXPECT_EQ(shell_quote("/usr/bin/stripeback"), "/usr/bin/stripeback");
  EXPECT_EQ(shell_quote("/my dir/it's"), "'/my dir/it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(RecoveryTarget, SettingsForATimeTarget) {
  RecoveryTarget t;
  t.kind = TargetKind::time;
  t.time_ns = int64_t{1796654732} * kSecond;
  t.action = TargetAction::promote;
  const std::string s = recovery_settings(t, "/bin/sb archive-get --catalog /c %f %p");
  EXPECT_EQ(s,
            "# recovery settings written by stripeback restore (time 2026-12-07T14:45:32Z)\n"
            "restore_command = '/bin/sb archive-get --catalog /c %f %p'\n"
            "recovery_target_time = '2026-12-07 14:45:32.000000+00'\n"
            "recovery_target_inclusive = 'on'\n"
            "recovery_target_action = 'promote'\n"
            "recovery_target_timeline = 'latest'\n");
}

TEST(RecoveryTarget, SettingsForAnLsnAnXidAndAStandby) {
  RecoveryTarget t;
  t.kind = TargetKind::lsn;
  t.lsn = 0x3000028;
  t.inclusive = false;
  std::string s = recovery_settings(t, "cmd 'x'");
  EXPECT_NE(s.find("restore_command = 'cmd ''x'''\n"), std::string::npos) << s;
  EXPECT_NE(s.find("recovery_target_lsn = '0/3000028'\n"), std::string::npos) << s;
  EXPECT_NE(s.find("recovery_target_inclusive = 'off'\n"), std::string::npos) << s;
  EXPECT_NE(s.find("recovery_target_action = 'pause'\n"), std::string::npos) << s;
  t.kind = TargetKind::xid;
  t.xid = 987;
  s = recovery_settings(t, "cmd");
  EXPECT_NE(s.find("recovery_target_xid = '987'\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("recovery_target_lsn"), std::string::npos) << s;
  RecoveryTarget standby;
  standby.standby = true;
  s = recovery_settings(standby, "cmd");
  EXPECT_NE(s.find("restore_command = 'cmd'\n"), std::string::npos) << s;
  EXPECT_NE(s.find("recovery_target_timeline = 'latest'\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("recovery_target_action"), std::string::npos) << s;
  EXPECT_EQ(s.find("recovery_target_inclusive"), std::string::npos) << s;
}

}  // namespace
}  // namespace stripeback::database
