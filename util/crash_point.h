// crash_point(): a test-only hook that ends the process at a named durability boundary, so
// the reliability harness can check what a crash exactly there leaves behind (the points
// and where they are: docs/reliability.md).
//
// With STRIPEBACK_CRASH_AT=<point>[:<n>] in the environment, the n-th call (counted from 1,
// default 1) of crash_point("<point>") in this process sends the process SIGKILL, as a
// `kill -9` at that moment would: no destructor, no atexit handler, no buffered output.
// Without the variable, or for any other name, a call does nothing. A value that does not
// parse is reported once on stderr and arms nothing.
//
// Any thread may call it; the count is shared by all threads of the process.
#pragma once

namespace stripeback::util {

void crash_point(const char* name);

}  // namespace stripeback::util
