// Telling a running job from one that is gone: a process's start time and state from /proc,
// and process_alive() for this host and others.
#include "util/process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace stripeback::util {
namespace {

TEST(ProcessStart, ThisProcessRunsAndHasAStartTime) {
  char state = 0;
  const uint64_t ticks = process_start_ticks(::getpid(), &state);
  EXPECT_GT(ticks, 0u);
  EXPECT_EQ(state, 'R');  // reading its own /proc/PID/stat, it runs
  EXPECT_EQ(process_start_ticks(::getpid()), ticks);
}

TEST(ProcessStart, AnExitedChildIsAZombieUntilReapedThenGone) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  char state = 0;
  uint64_t ticks = 0;
  for (int i = 0; i < 500 && state != 'Z'; ++i) {
    ticks = process_start_ticks(child, &state);
    if (state != 'Z') std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(state, 'Z');
  EXPECT_GE(ticks, process_start_ticks(::getpid()));  // started after its parent
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  state = 0;
  EXPECT_EQ(process_start_ticks(child, &state), 0u);
  EXPECT_EQ(state, '?');
  EXPECT_FALSE(process_alive(hostname(), child, 0));
}

TEST(ProcessAlive, SameStartTimeOnlyAndOtherHostsCountAsAlive) {
  const uint64_t ticks = process_start_ticks(::getpid());
  EXPECT_TRUE(process_alive(hostname(), ::getpid(), ticks));
  EXPECT_TRUE(process_alive(hostname(), ::getpid(), 0));  // no start time: the pid decides
  EXPECT_FALSE(process_alive(hostname(), ::getpid(), ticks + 1));  // a reused pid
  EXPECT_FALSE(process_alive(hostname(), 0, 0));
  EXPECT_TRUE(process_alive(hostname() + ".elsewhere", 1, 12345));
}

}  // namespace
}  // namespace stripeback::util
