// The memory a job's I/O buffers take, known from its flags before it starts, and the most
// a job may take. Checked before the catalog hears of the job, so that a job that could
// never get its buffers is refused as bad usage instead of failing once started.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "stripeback/result.h"

namespace stripeback::engine {

// The bounds of the overrides of the buffer rule (--buffers, --buffer-size): one check for
// the CLI, the C API and the engine. A buffer is a whole number of 4 KiB blocks (O_DIRECT).
inline constexpr size_t kMinBuffers = 2, kMaxBuffers = 4096;
inline constexpr size_t kMinBufferSize = 4096, kMaxBufferSize = size_t{64} << 20;
Result<void> check_buffer_overrides(std::optional<size_t> buffers,
                                    std::optional<size_t> buffer_size);

// The most buffer memory any job may take, whatever the machine.
inline constexpr uint64_t kMaxBufferMemory = uint64_t{64} << 30;

// Bytes of buffers one backup channel allocates with these overrides of the buffer rule: the
// most over every multiplexing level (the plan that picks the level is not made yet). With
// compression each buffer has a compressed twin; a validation has twice the buffers.
uint64_t backup_channel_buffer_bytes(std::optional<size_t> buffers,
                                     std::optional<size_t> buffer_size, bool compressing,
                                     bool validating = false);
// Bytes of buffers one restore or validate channel allocates: its read buffers and as many
// scratch buffers for decoding.
uint64_t restore_channel_buffer_bytes(size_t buffers, size_t buffer_size);

// The most buffer memory a job may take on this machine: half of its physical memory, and
// never above kMaxBufferMemory. `physical` receives the physical memory (0 if unknown, when
// only kMaxBufferMemory applies).
uint64_t buffer_memory_limit(uint64_t* physical = nullptr);

}  // namespace stripeback::engine
