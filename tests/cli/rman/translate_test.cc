#include "cli/rman/translate.h"

#include <gtest/gtest.h>

namespace stripeback::cli::rman {
namespace {

// Each command of `text` as one line ("backup --channels 2 /d/a"), or the error.
std::vector<std::string> lines_of(const std::string& text) {
  auto commands = translate(text);
  if (!commands) return {"error: " + commands.error().what};
  std::vector<std::string> out;
  for (const auto& c : *commands) {
    std::string line;
    for (const auto& a : c.args) line += (line.empty() ? "" : " ") + a;
    out.push_back(line);
  }
  return out;
}

std::string line_of(const std::string& text) {
  auto lines = lines_of(text);
  return lines.size() == 1 ? lines[0] : "(" + std::to_string(lines.size()) + " commands)";
}

std::string error_of(const std::string& text) {
  auto commands = translate(text);
  return commands.has_value() ? "(no error)" : commands.error().what;
}

using Lines = std::vector<std::string>;

TEST(RmanTranslate, ABlockWithChannelsGivesTheBackupEveryOption) {
  EXPECT_EQ(lines_of("RUN {\n"
                     "  ALLOCATE CHANNEL c1 DEVICE TYPE DISK FORMAT '/b/%U' RATE 200M "
                     "MAXPIECESIZE 2G MAXOPENFILES 4;\n"
                     "  allocate channel c2 device type disk format '/b/db_%d_%s_%p' rate 200m "
                     "maxpiecesize 2048M maxopenfiles 4;\n"
                     "  BACKUP INCREMENTAL LEVEL 1 CUMULATIVE FILESPERSET 4 SECTION SIZE 1G "
                     "DURATION 01:30 PARTIAL MINIMIZE LOAD DATAFILE '/d/a', '/d/b c';\n"
                     "}"),
            Lines({"backup --channels 2 --to /b --max-piece-size 2G --rate 200M "
                   "--max-open-files 4 --level 1 --cumulative --files-per-set 4 --section-size "
                   "1G --duration 01:30 --partial --minimize-load /d/a /d/b c"}));
}

TEST(RmanTranslate, ABackupOutsideABlockTakesTheConfiguredChannelsAndDestination) {
  EXPECT_EQ(line_of("BACKUP '/d/a' '/d/b';"), "backup /d/a /d/b");
  EXPECT_EQ(line_of("BACKUP INCREMENTAL LEVEL 0 TAG weekly DATAFILE '/d';"),
            "backup --level 0 --tag weekly /d");
  EXPECT_EQ(line_of("BACKUP FULL TAG 'sun day' DATAFILE '/d';"), "backup --tag sun day /d");
  EXPECT_EQ(line_of("BACKUP AS COMPRESSED BACKUPSET DATAFILE '/d';"),
            "backup --compress medium /d");
  EXPECT_EQ(line_of("BACKUP AS BACKUPSET DURATION 2:05 MINIMIZE TIME '/d';"),
            "backup --duration 2:05 /d");
  EXPECT_EQ(line_of("BACKUP FORMAT '/b/x_%U' DATAFILE '/d';"), "backup --to /b /d");
  EXPECT_EQ(line_of("BACKUP FORMAT '/%U' DATAFILE '/d';"), "backup --to / /d");
}

TEST(RmanTranslate, ThePathsComeAfterADoubleDashWhenOneLooksLikeAFlag) {
  EXPECT_EQ(line_of("BACKUP DATAFILE '-odd', '/d';"), "backup -- -odd /d");
}

TEST(RmanTranslate, TheBackupsOwnFormatReplacesTheChannels) {
  EXPECT_EQ(line_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK FORMAT '/x/%U';"
                    " BACKUP FORMAT '/y/%U' DATAFILE '/d'; }"),
            "backup --channels 1 --to /y /d");
}

TEST(RmanTranslate, SbtChannelsAreTapeDrivesOneChannelEach) {
  EXPECT_EQ(lines_of("RUN {\n"
                     " ALLOCATE CHANNEL t1 DEVICE TYPE SBT FORMAT 'tape:/dev/sg1';\n"
                     " ALLOCATE CHANNEL t2 DEVICE TYPE SBT FORMAT "
                     "'tape:iscsi://127.0.0.1:3260/iqn.x:tape1/1';\n"
                     " BACKUP DATAFILE '/d';\n"
                     " RESTORE TO '/r';\n"
                     " RESTORE VALIDATE;\n"
                     "}"),
            Lines({"backup --to tape:/dev/sg1 --to tape:iscsi://127.0.0.1:3260/iqn.x:tape1/1 "
                   "/d",
                   "restore --to /r --tape-drive tape:/dev/sg1 --tape-drive "
                   "tape:iscsi://127.0.0.1:3260/iqn.x:tape1/1",
                   "validate --channels 2"}));
}

TEST(RmanTranslate, SizesThatAreTheSameBytesAreTheSameSetting) {
  EXPECT_EQ(line_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK RATE 1K;"
                    " ALLOCATE CHANNEL b DEVICE TYPE DISK RATE 1024; BACKUP '/d'; }"),
            "backup --channels 2 --rate 1K /d");
}

TEST(RmanTranslate, ChannelsEndWithTheirBlockAndReleaseTakesOneAway) {
  EXPECT_EQ(lines_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK; ALLOCATE CHANNEL b DEVICE "
                     "TYPE DISK; BACKUP '/d'; RELEASE CHANNEL a; BACKUP '/e'; }\n"
                     "RUN { BACKUP '/f'; }"),
            Lines({"backup --channels 2 /d", "backup --channels 1 /e", "backup /f"}));
}

TEST(RmanTranslate, Restore) {
  EXPECT_EQ(line_of("RESTORE DATAFILE '/d/a', '/d/b' TO '/r' FROM TAG 'nightly' FORCE;"),
            "restore --to /r --tag nightly --force /d/a /d/b");
  EXPECT_EQ(line_of("RESTORE TO '/r';"), "restore --to /r");
  EXPECT_EQ(line_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK FORMAT '/b/%U';"
                    " ALLOCATE CHANNEL b DEVICE TYPE DISK FORMAT '/b/%U'; RESTORE '/d' TO '/r'; }"),
            "restore --to /r --channels 2 /d");
}

TEST(RmanTranslate, ValidateOfBackupsAndOfSources) {
  EXPECT_EQ(line_of("RESTORE DATAFILE '/d/a' VALIDATE;"), "validate /d/a");
  EXPECT_EQ(line_of("RESTORE FROM TAG t VALIDATE;"), "validate --tag t");
  EXPECT_EQ(line_of("VALIDATE BACKUPSET 7;"), "validate --backup 7");
  EXPECT_EQ(line_of("VALIDATE DATAFILE '/d/a', '/d/b';"), "backup --validate /d/a /d/b");
  EXPECT_EQ(line_of("VALIDATE CHECK LOGICAL '/pg';"), "backup --validate --check-logical /pg");
  EXPECT_EQ(line_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK FORMAT '/b/%U' RATE 10M "
                    "MAXPIECESIZE 1G; BACKUP VALIDATE CHECK LOGICAL DATAFILE '/pg'; }"),
            "backup --validate --channels 1 --rate 10M --check-logical /pg");
}

TEST(RmanTranslate, CatalogStatements) {
  EXPECT_EQ(line_of("CROSSCHECK BACKUP;"), "crosscheck");
  EXPECT_EQ(line_of("CROSSCHECK BACKUP TAG 'n';"), "crosscheck --tag n");
  EXPECT_EQ(line_of("CROSSCHECK BACKUPSET 4;"), "crosscheck --backup 4");
  EXPECT_EQ(line_of("DELETE NOPROMPT OBSOLETE;"), "delete obsolete");
  EXPECT_EQ(line_of("DELETE OBSOLETE;"), "delete obsolete");
  EXPECT_EQ(line_of("DELETE NOPROMPT EXPIRED BACKUP;"), "delete expired");
  EXPECT_EQ(line_of("LIST BACKUP;"), "list");
  EXPECT_EQ(line_of("LIST BACKUP SUMMARY;"), "list");
  EXPECT_EQ(line_of("LIST BACKUPSET 2;"), "list --backup 2 --files");
  EXPECT_EQ(line_of("REPORT OBSOLETE;"), "report obsolete");
  EXPECT_EQ(line_of("SHOW ALL;"), "configure --show");
}

TEST(RmanTranslate, Configure) {
  EXPECT_EQ(line_of("CONFIGURE RETENTION POLICY TO REDUNDANCY 2;"),
            "configure retention redundancy 2");
  EXPECT_EQ(line_of("configure retention policy to recovery window of 14 days;"),
            "configure retention recovery-window 14");
  EXPECT_EQ(line_of("CONFIGURE DEVICE TYPE DISK PARALLELISM 4 BACKUP TYPE TO BACKUPSET;"),
            "configure channels 4");
  EXPECT_EQ(line_of("CONFIGURE CHANNEL DEVICE TYPE DISK FORMAT '/backup/%U';"),
            "configure destination /backup");
}

TEST(RmanTranslate, EachCommandKnowsItsStatementAndWhereItStarts) {
  auto c = translate("# nightly\nRUN {\n  ALLOCATE CHANNEL a DEVICE TYPE DISK;\n"
                     "  backup '/d';\n}\n  list backup;");
  ASSERT_TRUE(c.has_value()) << c.error().what;
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].statement, "BACKUP");
  EXPECT_EQ((*c)[0].at.line, 4);
  EXPECT_EQ((*c)[0].at.column, 3);
  EXPECT_EQ((*c)[1].statement, "LIST");
  EXPECT_EQ((*c)[1].at.line, 6);
}

// Errors: each names the line and column and what to do instead.

TEST(RmanTranslate, AnUnknownStatement) {
  EXPECT_EQ(error_of("LIST BACKUP;\n  FROB '/d';"),
            "2:3: unknown statement 'FROB' (docs/rman.md lists the statements stripeback run "
            "accepts)");
}

TEST(RmanTranslate, AnErrorInTheLastStatementTranslatesNothing) {
  auto c = translate("BACKUP '/d';\nLIST BACKUP;\nRESTORE '/d';");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().what.rfind("3:13: RESTORE needs TO 'dir'", 0), 0u) << c.error().what;
}

TEST(RmanTranslate, StatementsStripebackDoesNotTakeSayWhatToUse) {
  EXPECT_EQ(error_of("BACKUP DATABASE;").rfind("1:8: BACKUP DATABASE is not supported: ", 0), 0u);
  EXPECT_NE(error_of("BACKUP DATABASE;").find("--pg CONNINFO"), std::string::npos);
  EXPECT_NE(error_of("BACKUP ARCHIVELOG ALL;").find("archive-push"), std::string::npos);
  EXPECT_NE(error_of("BACKUP DATAFILE '/d' PLUS ARCHIVELOG;").find("1:22: BACKUP PLUS"),
            std::string::npos);
  EXPECT_NE(error_of("recover database;").find("1:1: RECOVER is not supported: "),
            std::string::npos);
  EXPECT_NE(error_of("RECOVER DATABASE;").find("--target-time"), std::string::npos);
  EXPECT_NE(error_of("RUN { SET NEWNAME FOR DATAFILE 1 TO '/x'; }").find(
                "1:11: SET NEWNAME is not supported: stripeback restore --remap"),
            std::string::npos);
  EXPECT_EQ(error_of("SET ECHO ON;"), "1:5: SET ECHO is not supported");
  EXPECT_NE(error_of("SWITCH DATAFILE ALL;").find("1:1: SWITCH is not supported"),
            std::string::npos);
  EXPECT_NE(error_of("BACKUP DATAFILE '/d' KEEP FOREVER;").find("stripeback keep"),
            std::string::npos);
  EXPECT_NE(error_of("DELETE BACKUPSET 3;").find("1:8: DELETE BACKUPSET is not supported: "
                                                 "stripeback delete backup ID"),
            std::string::npos);
  EXPECT_NE(error_of("RESTORE DATABASE;").find("RESTORE TO 'dir'"), std::string::npos);
  EXPECT_NE(error_of("BACKUP AS COPY DATAFILE '/d';").find("1:11: AS COPY is not supported"),
            std::string::npos);
}

TEST(RmanTranslate, AllocateChannelWithParmsSaysHowTapeDrivesAreNamed) {
  EXPECT_EQ(error_of("RUN {\n ALLOCATE CHANNEL t1 DEVICE TYPE SBT PARMS 'SBT_LIBRARY=x';\n}")
                .rfind("2:38: PARMS is not supported: Stripeback has no media manager library; "
                       "an SBT channel names its drive with FORMAT",
                       0),
            0u);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL t1 DEVICE TYPE SBT; }")
                .find("1:24: SBT channel t1 names no tape drive"),
            std::string::npos);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL t1 DEVICE TYPE SBT FORMAT '%U'; }")
                .find("1:50: an SBT channel's FORMAT names its tape drive"),
            std::string::npos);
  EXPECT_EQ(error_of("RUN { ALLOCATE CHANNEL t1 DEVICE TYPE TAPE; }"),
            "1:39: DEVICE TYPE is DISK or SBT, not 'TAPE'");
}

TEST(RmanTranslate, AllocateOutsideABlockAndTwiceTheSameName) {
  EXPECT_NE(error_of("ALLOCATE CHANNEL a DEVICE TYPE DISK;")
                .find("1:1: ALLOCATE CHANNEL is only valid inside RUN { ... }"),
            std::string::npos);
  EXPECT_EQ(error_of("RUN {\nALLOCATE CHANNEL a DEVICE TYPE DISK;\n"
                     "ALLOCATE CHANNEL a DEVICE TYPE DISK;\n}"),
            "3:18: channel a is already allocated (at line 2)");
  EXPECT_EQ(error_of("RUN { RELEASE CHANNEL z; }"), "1:23: no channel 'z' is allocated");
}

TEST(RmanTranslate, ChannelsThatDifferAreRefusedSayingWhich) {
  EXPECT_EQ(error_of("RUN {\n ALLOCATE CHANNEL a DEVICE TYPE DISK FORMAT '/x/%U';\n"
                     " ALLOCATE CHANNEL b DEVICE TYPE DISK FORMAT '/y/%U';\n BACKUP '/d';\n}"),
            "4:2: FORMAT's directory differs between channel a (/x) and channel b (/y): "
            "Stripeback's channels write into one destination directory");
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK RATE 10M;"
                     " ALLOCATE CHANNEL b DEVICE TYPE DISK RATE 20M; BACKUP '/d'; }")
                .find("RATE differs between channel a (10M) and channel b (20M)"),
            std::string::npos);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK MAXOPENFILES 2;"
                     " ALLOCATE CHANNEL b DEVICE TYPE DISK; BACKUP '/d'; }")
                .find("MAXOPENFILES differs between channel a (2) and channel b (none)"),
            std::string::npos);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK;"
                     " ALLOCATE CHANNEL b DEVICE TYPE SBT FORMAT 'tape:/dev/sg1'; BACKUP '/d'; }")
                .find("channel a is DISK and channel b is not"),
            std::string::npos);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE SBT FORMAT 'tape:/dev/sg1';"
                     " ALLOCATE CHANNEL b DEVICE TYPE SBT FORMAT 'tape:/dev/sg1'; BACKUP '/d'; }")
                .find("channels a and b name the same tape drive"),
            std::string::npos);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK RATE 10M; RESTORE TO '/r'; }")
                .find("1:53: RATE of channel a applies to backups only"),
            std::string::npos);
}

TEST(RmanTranslate, FormatMustNameAFixedDirectory) {
  EXPECT_NE(error_of("BACKUP FORMAT '%U' '/d';").find("1:15: FORMAT '%U' names no directory"),
            std::string::npos);
  EXPECT_NE(error_of("BACKUP FORMAT '/b/%d/%U' '/d';")
                .find("1:15: FORMAT '/b/%d/%U' has a substitution variable in its directory"),
            std::string::npos);
}

TEST(RmanTranslate, BadNumbersAndSizes) {
  EXPECT_EQ(error_of("BACKUP FILESPERSET x '/d';"),
            "1:20: FILESPERSET takes a whole number from 1 to 1000000, not 'x'");
  EXPECT_EQ(error_of("BACKUP FILESPERSET 0 '/d';"),
            "1:20: FILESPERSET takes a whole number from 1 to 1000000, not '0'");
  EXPECT_EQ(error_of("CONFIGURE RETENTION POLICY TO REDUNDANCY 99999999999999999999999;"),
            "1:42: REDUNDANCY takes a whole number from 1 to 18446744073709551615, not "
            "'99999999999999999999999'");
  EXPECT_EQ(error_of("BACKUP SECTION SIZE 10X '/d';"),
            "1:21: SECTION SIZE takes a size: bytes, or a number with K, M or G (e.g. 200M), "
            "not '10X'");
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK RATE M; }")
                .find("1:48: RATE takes a size"),
            std::string::npos);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK RATE 99999999999G; }")
                .find("RATE takes a size"),
            std::string::npos);
  EXPECT_NE(error_of("RUN { ALLOCATE CHANNEL a DEVICE TYPE DISK RATE '200M'; }")
                .find("not the string '200M'"),
            std::string::npos);
  EXPECT_EQ(error_of("BACKUP DATAFILE 3;"),
            "1:17: datafile numbers are the database's: name the file by its path in single "
            "quotes");
}

TEST(RmanTranslate, DurationIsHoursAndMinutes) {
  for (const char* bad : {"90", "1:75", "01:5", "123:00", "00:00", "1h", "a:bc"})
    EXPECT_EQ(error_of(std::string("BACKUP DURATION ") + bad + " '/d';"),
              std::string("1:17: DURATION takes hours and minutes, hh:mm (e.g. 01:30, minutes "
                          "below 60, above 00:00), not '") + bad + "'")
        << bad;
  EXPECT_EQ(error_of("BACKUP DURATION 1:00 MINIMIZE SPEED '/d';"),
            "1:31: MINIMIZE is LOAD or TIME, not 'SPEED'");
}

TEST(RmanTranslate, LevelsAndCumulative) {
  EXPECT_EQ(error_of("BACKUP INCREMENTAL LEVEL 2 '/d';"),
            "1:26: INCREMENTAL LEVEL is 0 or 1 in Stripeback, not '2'");
  EXPECT_EQ(error_of("BACKUP INCREMENTAL LEVEL 0 CUMULATIVE '/d';"),
            "1:28: CUMULATIVE goes with INCREMENTAL LEVEL 1");
  EXPECT_EQ(error_of("BACKUP INCREMENTAL '/d';"),
            "1:20: expected LEVEL after INCREMENTAL, found the string '/d'");
}

TEST(RmanTranslate, IncompleteAndOverlongStatements) {
  EXPECT_EQ(error_of("BACKUP TAG x;"),
            "1:13: BACKUP names no file: add DATAFILE 'path' (files or directories)");
  EXPECT_EQ(error_of("LIST BACKUP '/d';"), "1:13: the string '/d' is not expected in LIST BACKUP");
  EXPECT_EQ(error_of("CROSSCHECK;"), "1:11: expected BACKUP after CROSSCHECK, found the end of "
                                     "the statement");
  EXPECT_EQ(error_of("DELETE NOPROMPT;"),
            "1:16: DELETE (DELETE OBSOLETE or DELETE EXPIRED BACKUP) is not complete: the "
            "statement ends here");
  EXPECT_EQ(error_of("BACKUP '/d' , ;"), "1:15: BACKUP takes a string in single quotes, found "
                                          "the end of the statement");
  EXPECT_EQ(error_of("BACKUP '';"), "1:8: BACKUP may not be empty");
  EXPECT_EQ(error_of("( LIST BACKUP );"), "1:1: a statement starts with a keyword, not '('");
}

}  // namespace
}  // namespace stripeback::cli::rman
