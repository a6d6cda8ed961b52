// Live progress seen from another process (docs/monitoring.md): `stripeback status --json`
// lists a running job with its fields and channel states, tells a stopped job (stalled)
// and a killed one (dead, with what it had done) from a running one, and calls a job whose
// reads hang stalled after --hang-after; --progress-json writes one line per second; the
// status file goes with the job.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;
using namespace std::chrono_literals;

class Status : public ::testing::Test {
 protected:
  void SetUp() override {
    make_file(t_ / "src/a.dbf", 24 * kMiB, 21);
    make_file(t_ / "src/b.dbf", 16 * kMiB, 22);
  }
  Json status() {
    RunResult r = sb({"status", "--catalog", t_ / "cat", "--json"});
    EXPECT_TRUE(r.exited(0)) << r.describe();
    return parse_json(r);
  }
  // Polls status until a job is in `state` (true) or `limit` passes.
  bool wait_state(const std::string& state, std::chrono::seconds limit, Json* job) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      Json s = status();
      if (s["jobs"].size() == 1 && s["jobs"][0]["state"].as_string() == state) {
        *job = s["jobs"][0];
        return true;
      }
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }
  std::unique_ptr<testing::Subprocess> start(std::vector<std::string> extra, const Env& env = {}) {
    std::vector<std::string> a{"backup", t_ / "src", "--to", t_ / "p", "--catalog", t_ / "cat",
                               "--tag", "nightly"};
    a.insert(a.end(), extra.begin(), extra.end());
    return sb_start(a, env);
  }
  TempDir t_{"sbit-status"};
};

TEST_F(Status, ARunningJobIsListedWithItsProgressAndChannels) {
  auto child = start({"--rate", "4M", "--channels", "2"});
  Json job;
  ASSERT_TRUE(wait_state("running", 30s, &job));
  std::this_thread::sleep_for(1500ms);
  ASSERT_TRUE(wait_state("running", 10s, &job));
  EXPECT_TRUE(contains(job["id"].as_string(), std::to_string(child->pid())));
  EXPECT_EQ(job["tag"].as_string(), "nightly");
  EXPECT_EQ(job["operation"].as_string(), "backup");
  EXPECT_EQ(*job["pid"].as_u64(), static_cast<uint64_t>(child->pid()));
  EXPECT_FALSE(job["host"].as_string().empty());
  EXPECT_FALSE(job["started"].as_string().empty());
  EXPECT_FALSE(job["last_update"].as_string().empty());
  EXPECT_EQ(*job["bytes_total"].as_u64(), 40 * kMiB);
  EXPECT_GT(*job["bytes_done"].as_u64(), 0u);
  EXPECT_LT(*job["bytes_done"].as_u64(), 40 * kMiB);
  EXPECT_GT(job["rate"].as_double(), 1e6);
  EXPECT_LT(job["rate"].as_double(), 20e6) << "two channels at 4 MB/s";
  EXPECT_GT(job["eta_s"].as_double(), 0.0);
  ASSERT_EQ(job["channels"].size(), 2u);
  for (const auto& c : job["channels"].items()) {
    EXPECT_TRUE(c["state"].as_string() == "throttled" || c["state"].as_string() == "reading" ||
                c["state"].as_string() == "writing" || c["state"].as_string() == "working")
        << c["state"].as_string();
    EXPECT_GE(c["state_s"].as_double(), 0.0);
  }
  RunResult text = sb({"status", "--catalog", t_ / "cat"});
  EXPECT_TRUE(contains(text.out, "running")) << text.out;
  EXPECT_TRUE(contains(text.out, "channel 2:")) << text.out;
  RunResult done = child->wait();
  SB_ASSERT_EXIT(done, 0);
  EXPECT_EQ(status()["jobs"].size(), 0u) << "the status file goes with the job";
}

TEST_F(Status, AStoppedJobIsStalledAndAKilledOneDead) {
  auto child = start({"--rate", "2M", "--hang-after", "3", "--channels", "2"});
  Json job;
  ASSERT_TRUE(wait_state("running", 30s, &job));
  std::this_thread::sleep_for(1s);
  child->kill(SIGSTOP);
  ASSERT_TRUE(wait_state("stalled", 15s, &job)) << status()["jobs"].size();
  EXPECT_TRUE(contains(job["why"].as_string(), "is stopped")) << job["why"].as_string();
  child->kill(SIGCONT);
  ASSERT_TRUE(wait_state("running", 15s, &job));
  child->kill(SIGKILL);
  child->wait();
  ASSERT_TRUE(wait_state("dead", 15s, &job));
  EXPECT_TRUE(contains(job["why"].as_string(), "is gone")) << job["why"].as_string();
  EXPECT_GT(*job["bytes_done"].as_u64(), 0u) << "what it had done";
}

TEST_F(Status, AJobWhoseReadsHangIsStalledAfterHangAfter) {
  // The 8th read of a source file takes 8 s: no progress meanwhile.
  auto child = start({"--hang-after", "2", "--channels", "1"},
                     {{"STRIPEBACK_FAULTS", "read:8:delay=8000:a.dbf"}});
  Json job;
  ASSERT_TRUE(wait_state("stalled", 30s, &job));
  EXPECT_TRUE(contains(job["why"].as_string(), "no progress for")) << job["why"].as_string();
  ASSERT_EQ(job["channels"].size(), 1u);
  EXPECT_GE(job["channels"][0]["state_s"].as_double(), 1.0)
      << "the channel has been in its wait state since the read began: "
      << job["channels"][0]["state"].as_string();
  RunResult done = child->wait();
  SB_ASSERT_EXIT(done, 0);
}

TEST_F(Status, ProgressJsonWritesALineASecondAndTheLastOneFinished) {
  RunResult r = sb({"backup", t_ / "src", "--to", t_ / "p", "--catalog", t_ / "cat",
                    "--rate", "8M", "--channels", "1", "--progress-json=" + t_ / "progress.log"});
  SB_ASSERT_EXIT(r, 0);
  std::ifstream in(t_ / "progress.log");
  std::string line;
  std::vector<Json> lines;
  while (std::getline(in, line)) {
    std::string error;
    auto j = Json::parse(line, &error);
    ASSERT_TRUE(j) << error << ": " << line;
    lines.push_back(*j);
  }
  ASSERT_GE(lines.size(), 3u) << "about 5 s at 8 MB/s";
  uint64_t last = 0;
  for (const auto& j : lines) {
    EXPECT_GE(*j["bytes_done"].as_u64(), last);
    last = *j["bytes_done"].as_u64();
  }
  EXPECT_TRUE(lines.back()["finished"].as_bool());
  EXPECT_EQ(*lines.back()["bytes_done"].as_u64(), 40 * kMiB);
  EXPECT_EQ(lines.back()["bound_by"].as_string(), "rate limit");
  EXPECT_EQ(r.err.find("\x1b["), std::string::npos) << "no terminal drawing without a terminal";
}

// On a terminal (a tmux pane, read with capture-pane) the progress lines are drawn, move as
// the job runs, and are gone before the summary.
TEST_F(Status, TheTerminalProgressMovesAndIsClearedAtTheEnd) {
  if (testing::run({"/usr/bin/env", "tmux", "-V"}).exit_code != 0)
    GTEST_SKIP() << "tmux is not installed (apt-get install tmux)";
  const std::string sock = "sbit-" + std::to_string(::getpid());
  const std::string cmd = std::string(binary()) + " backup " + t_ / "src" + " --to " + t_ / "p" +
                          " --catalog " + t_ / "cat" + " --rate 4M --channels 2; echo JOB-ENDED; sleep 60";
  auto tmux = [&](std::vector<std::string> args) {
    std::vector<std::string> a{"/usr/bin/env", "tmux", "-L", sock};
    a.insert(a.end(), args.begin(), args.end());
    return testing::run(a);
  };
  ASSERT_EQ(tmux({"new-session", "-d", "-s", "sb", "-x", "160", "-y", "40", cmd}).exit_code, 0);
  std::vector<std::string> screens;
  std::string screen;
  auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end) {
    screen = tmux({"capture-pane", "-p", "-t", "sb"}).out;
    if (contains(screen, "JOB-ENDED")) break;
    if (contains(screen, "ETA")) screens.push_back(screen);
    std::this_thread::sleep_for(300ms);
  }
  tmux({"kill-server"});
  ASSERT_TRUE(contains(screen, "JOB-ENDED")) << screen;
  ASSERT_GE(screens.size(), 3u) << "the progress lines were seen while the job ran";
  EXPECT_TRUE(contains(screens.front(), "backup 1: ")) << screens.front();
  EXPECT_TRUE(contains(screens.front(), "channel 2: ")) << screens.front();
  EXPECT_NE(screens.front(), screens.back()) << "the progress moved";
  EXPECT_FALSE(contains(screen, "ETA")) << "cleared before the summary:\n" << screen;
  EXPECT_TRUE(contains(screen, "backup 1 complete")) << screen;
}

}  // namespace
}  // namespace stripeback::it
