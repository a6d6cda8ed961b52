// crash_point(): a test hook that ends the process at a named durability boundary, so the
// reliability harness can check what a crash exactly there leaves behind (the points and
// where they are: docs/reliability.md).
//
// It exists only in a build with STRIPEBACK_TEST_HOOKS=ON. Without it crash_point() is an
// empty inline function and nothing can arm it.
//
// Armed with test_hooks::set_crash_at("<point>[:<n>]"), the n-th call (counted from 1,
// default 1) of crash_point("<point>") in this process sends the process SIGKILL, as a
// `kill -9` at that moment would: no destructor, no atexit handler, no buffered output.
// Unarmed, or for any other name, a call does nothing.
//
// Any thread may call crash_point(); the count is shared by all threads of the process.
#pragma once

#if STRIPEBACK_TEST_HOOKS
#include <string_view>

#include "stripeback/result.h"
#endif

namespace stripeback::util {

#if STRIPEBACK_TEST_HOOKS
void crash_point(const char* name);
#else
inline void crash_point(const char* /*name*/) {}
#endif

}  // namespace stripeback::util

#if STRIPEBACK_TEST_HOOKS
namespace stripeback::util::test_hooks {

// Arms the crash point `spec` names, "<point>[:<n>]", restarting its count; an empty spec
// disarms. A spec that does not parse (no point name, a count that is not a whole number
// from 1) fails with invalid_argument saying why, and leaves the arming as it was. Call it
// before the threads that may reach crash_point() start (a program's start-up).
Result<void> set_crash_at(std::string_view spec);

}  // namespace stripeback::util::test_hooks
#endif
