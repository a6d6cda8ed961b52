// Live progress seen from another process (docs/monitoring.md): `stripeback status --json`
// lists a running job with its fields and channel states, tells a stopped job (stalled)
// and a killed one (dead, with what it had done) from a running one, and calls a job whose
// reads hang stalled after --hang-after; --progress-json writes one line per second; the
// status file goes with the job.
#include <signal.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/integration/it_util.h"

namespace stripeback::it {
namespace {

constexpr uint64_t kMiB = 1 << 20;
using namespace std::chrono_literals;

// Sends `text` to the Unix socket at `path` and returns what comes back.
std::string raw_request(const std::string& path, const std::string& text) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  std::string out;
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size())) {
    char buf[512];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  if (fd >= 0) ::close(fd);
  return out;
}

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

// A killed backup's status file goes when a resume carries the backup on: status lists no
// dead job once the resume has completed the backup.
TEST_F(Status, AKilledBackupIsNoLongerListedOnceItsResumeCompletes) {
  auto child = start({"--rate", "4M", "--channels", "2"});
  Json job;
  ASSERT_TRUE(wait_state("running", 30s, &job));
  std::this_thread::sleep_for(1500ms);
  child->kill(SIGKILL);
  child->wait();
  ASSERT_TRUE(wait_state("dead", 15s, &job));
  RunResult resumed = sb({"backup", t_ / "src", "--to", t_ / "p", "--catalog", t_ / "cat",
                          "--tag", "nightly", "--resume", "last"});
  SB_ASSERT_EXIT(resumed, 0);
  EXPECT_EQ(status()["jobs"].size(), 0u) << "the dead job is not listed";
  RunResult text = sb({"status", "--catalog", t_ / "cat"});
  EXPECT_FALSE(contains(text.out, "dead")) << text.out;
  EXPECT_TRUE(files_under(t_ / "cat/jobs").empty()) << "its status file is gone";
}

// A dead job's status file that outlived its backup (the backup has ended in the catalog
// since) is removed by the next status, which says so in --json.
TEST_F(Status, StatusRemovesADeadJobWhoseBackupHasEnded) {
  auto child = start({"--rate", "4M", "--channels", "2"});
  Json job;
  ASSERT_TRUE(wait_state("running", 30s, &job));
  const std::string id = job["id"].as_string();
  const std::string file = t_ / "cat/jobs" + "/" + id + ".status";
  std::this_thread::sleep_for(1s);
  child->kill(SIGKILL);
  child->wait();
  ASSERT_TRUE(wait_state("dead", 15s, &job));
  const uint64_t backup = *job["backup_id"].as_u64();
  const std::string kept = testing::read_file(file);
  SB_ASSERT_EXIT(sb({"backup", t_ / "src", "--to", t_ / "p", "--catalog", t_ / "cat",
                     "--resume", std::to_string(backup)}),
                 0);
  write_text(file, kept);  // as if the resume had not seen it
  Json s = status();
  EXPECT_EQ(s["jobs"].size(), 0u);
  ASSERT_EQ(s["removed"].size(), 1u);
  EXPECT_EQ(s["removed"][0]["id"].as_string(), id);
  EXPECT_TRUE(contains(s["removed"][0]["why"].as_string(),
                       "backup " + std::to_string(backup) + " has ended (complete)"));
  EXPECT_FALSE(exists(file));
}

// --prune removes the files of dead jobs (saying which) and leaves a running job's.
TEST_F(Status, PruneRemovesDeadJobsAndSaysWhichButLeavesARunningOne) {
  const std::string jobs = t_ / "cat/jobs";
  ASSERT_EQ(::mkdir((t_ / "cat").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(jobs.c_str(), 0700), 0);
  const std::string here = host_name();
  const std::string dead1 = here + "." + std::to_string(unused_pid(1));
  const std::string dead2 = here + "." + std::to_string(unused_pid(2));
  write_text(jobs + "/" + dead1 + ".status", status_file_text(unused_pid(1), here));
  write_text(jobs + "/" + dead2 + ".status", status_file_text(unused_pid(2), here));
  auto child = start({"--rate", "2M", "--channels", "1"});
  auto end = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < end && status()["jobs"].size() < 3)
    std::this_thread::sleep_for(100ms);
  ASSERT_EQ(status()["jobs"].size(), 3u) << "two dead jobs and a running one";

  RunResult text = sb({"status", "--catalog", t_ / "cat", "--prune"});
  SB_ASSERT_EXIT(text, 0);
  EXPECT_TRUE(contains(text.out, "removed " + dead1 + ": dead: process")) << text.out;
  EXPECT_TRUE(contains(text.out, "removed " + dead2 + ": dead: process")) << text.out;
  Json s = status();
  ASSERT_EQ(s["jobs"].size(), 1u);
  EXPECT_EQ(s["jobs"][0]["state"].as_string(), "running") << "the running job stays";

  write_text(jobs + "/" + dead1 + ".status", status_file_text(unused_pid(1), here));
  RunResult j = sb({"status", "--catalog", t_ / "cat", "--prune", "--json"});
  SB_ASSERT_EXIT(j, 0);
  Json doc = parse_json(j);
  ASSERT_EQ(doc["removed"].size(), 1u) << j.out;
  EXPECT_EQ(doc["removed"][0]["id"].as_string(), dead1);
  EXPECT_TRUE(contains(doc["removed"][0]["why"].as_string(), "is gone"));
  ASSERT_EQ(doc["jobs"].size(), 1u);
  EXPECT_EQ(doc["jobs"][0]["state"].as_string(), "running");
  child->kill(SIGKILL);
}

TEST_F(Status, AJobWhoseReadsHangIsStalledAfterHangAfter) {
  SB_REQUIRE_TEST_HOOK("STRIPEBACK_FAULTS");
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
  // The first screens may be from before the channels started ("backup: 0 B / 0 B").
  const std::string& mid = screens[screens.size() / 2];
  EXPECT_TRUE(contains(mid, "backup 1: ")) << mid;
  EXPECT_TRUE(contains(mid, "channel 2: ")) << mid;
  EXPECT_NE(screens.front(), screens.back()) << "the progress moved";
  EXPECT_FALSE(contains(screen, "ETA")) << "cleared before the summary:\n" << screen;
  EXPECT_TRUE(contains(screen, "backup 1 complete")) << screen;
}

// The status endpoint: curl fetches /status and /metrics from a running job, over a Unix
// socket and over TCP on 127.0.0.1; promtool accepts the metrics; bad requests get 400,
// 404 and 405 and the job goes on; the endpoint is gone when the job ends.
TEST_F(Status, TheEndpointServesStatusAndMetricsWhileTheJobRuns) {
  if (testing::run({"/usr/bin/env", "curl", "--version"}).exit_code != 0)
    GTEST_SKIP() << "curl is not installed (apt-get install curl)";
  const std::string sock = t_ / "status.sock";
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  auto child = start({"--rate", "4M", "--channels", "2", "--status-listen", sock});
  auto curl = [&](std::vector<std::string> args) {
    std::vector<std::string> a{"/usr/bin/env", "curl", "-s", "-S", "--max-time", "5",
                               "--unix-socket", sock};
    a.insert(a.end(), args.begin(), args.end());
    return testing::run(a);
  };
  Json job;
  ASSERT_TRUE(wait_state("running", 30s, &job));
  std::this_thread::sleep_for(1s);
  RunResult st = curl({"http://localhost/status"});
  ASSERT_EQ(st.exit_code, 0) << st.describe();
  std::string error;
  auto j = Json::parse(st.out, &error);
  ASSERT_TRUE(j) << error << ": " << st.out;
  ASSERT_EQ((*j)["jobs"].size(), 1u);
  EXPECT_EQ((*j)["jobs"][0]["state"].as_string(), "running");
  EXPECT_EQ((*j)["jobs"][0]["tag"].as_string(), "nightly");
  EXPECT_GT(*(*j)["jobs"][0]["bytes_done"].as_u64(), 0u);
  EXPECT_EQ((*j)["jobs"][0]["channels"].size(), 2u);

  RunResult m = curl({"http://localhost/metrics"});
  ASSERT_EQ(m.exit_code, 0) << m.describe();
  EXPECT_TRUE(contains(m.out, "stripeback_job_done_bytes_total{operation=\"backup\",tag=\"nightly\"} "))
      << m.out;
  EXPECT_TRUE(contains(m.out, "stripeback_channel_state{operation=\"backup\",tag=\"nightly\",channel=\"2\""))
      << m.out;
  if (testing::run({"/usr/bin/env", "promtool", "--version"}).exit_code == 0) {
    const std::string file = t_ / "metrics.txt";
    write_text(file, m.out);
    RunResult check = testing::run({"/bin/sh", "-c", "promtool check metrics < '" + file + "'"});
    EXPECT_EQ(check.exit_code, 0) << check.describe();
  } else {
    ADD_FAILURE() << "promtool is not installed (apt-get install prometheus): metrics unchecked";
  }
  for (const auto& [args, code] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"-o", "/dev/null", "-w", "%{http_code}", "http://localhost/nothing"}, "404"},
           {{"-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "http://localhost/status"}, "405"},
       }) {
    RunResult r = curl(args);
    EXPECT_EQ(r.out, code) << r.describe();
  }
  // A request line that is not HTTP gets 400, and the job goes on.
  EXPECT_EQ(raw_request(sock, "garbage\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_TRUE(child->running());
  RunResult done = child->wait();
  SB_ASSERT_EXIT(done, 0);
  EXPECT_FALSE(exists(sock)) << "the endpoint goes with the job";

  // Over TCP on loopback; a bad address is refused before the job starts.
  auto tcp = start({"--rate", "8M", "--status-listen", "127.0.0.1:" + port});
  ASSERT_TRUE(wait_state("running", 30s, &job));
  RunResult over = testing::run({"/usr/bin/env", "curl", "-s", "--max-time", "5",
                                 "http://127.0.0.1:" + port + "/status"});
  EXPECT_EQ(over.exit_code, 0) << over.describe();
  EXPECT_TRUE(contains(over.out, "\"operation\":\"backup\"")) << over.out;
  SB_ASSERT_EXIT(tcp->wait(), 0);
  RunResult bad = sb({"backup", t_ / "src", "--to", t_ / "p2", "--catalog", t_ / "cat",
                      "--status-listen", "nowhere:x"});
  SB_EXPECT_EXIT(bad, 2);
  EXPECT_TRUE(contains(bad.err, "--status-listen 'nowhere:x'")) << bad.err;
}

}  // namespace
}  // namespace stripeback::it
