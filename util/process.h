// Facts about processes, for telling a running job from one that is gone: the host name,
// a process's start time (which a reused pid does not share) and random hex for names.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

namespace stripeback::util {

std::string hostname();  // empty when unknown
// Start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat), 0 when the
// process does not exist or /proc cannot tell. `state`, when given, gets the process's state
// letter (field 3: 'R', 'S', 'Z' for a zombie...), '?' when unknown.
uint64_t process_start_ticks(pid_t pid, char* state = nullptr);
// True when a process with this pid runs on this host and (when start_ticks is not 0) it
// is the same process: started at that time. A process of another host counts as alive,
// since nothing here can tell.
bool process_alive(const std::string& host, pid_t pid, uint64_t start_ticks);
// `n` random bytes from the kernel as 2n lower-case hex digits.
std::string random_hex(size_t n);

}  // namespace stripeback::util
