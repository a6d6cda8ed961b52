// Micro benchmarks of the per-block work in the backup and restore paths, on 1 MiB
// buffers (the default channel buffer size). Throughputs are bytes of block data per
// second; for encode_frame_header, which runs once per 1 MiB frame, the "bytes" are the
// 1 MiB the header stands for, so the figure compares directly with the others.
#include <benchmark/benchmark.h>
#include <xxhash.h>
#include <xxh_x86dispatch.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "engine/format/piece_format.h"
#include "util/crc32c.h"
#include "util/digest.h"

namespace {

using stripeback::engine::kBlock;

constexpr size_t kMiB = size_t{1} << 20;

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte, FreeDeleter>;

// A kBlock-aligned buffer, like the channels' I/O buffers.
AlignedBuffer make_buffer(size_t size) {
  void* p = std::aligned_alloc(kBlock, size);
  if (p == nullptr) std::abort();
  return AlignedBuffer(static_cast<std::byte*>(p));
}

// Incompressible bytes (splitmix64), so no shortcut applies.
AlignedBuffer random_buffer(size_t size, uint64_t seed) {
  AlignedBuffer b = make_buffer(size);
  uint64_t s = seed;
  for (size_t i = 0; i < size; i += 8) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::memcpy(b.get() + i, &z, 8);
  }
  return b;
}

AlignedBuffer zero_buffer(size_t size) {
  AlignedBuffer b = make_buffer(size);
  std::memset(b.get(), 0, size);
  return b;
}

void set_bytes(benchmark::State& state, size_t per_iteration) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(per_iteration));
}

void BM_crc32c(benchmark::State& state) {
  AlignedBuffer buf = random_buffer(kMiB, 1);
  for (auto _ : state) {
    uint32_t crc = stripeback::util::crc32c(buf.get(), kMiB);
    benchmark::DoNotOptimize(crc);
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_crc32c);

void BM_digest_xxh3_128(benchmark::State& state) {
  AlignedBuffer buf = random_buffer(kMiB, 2);
  for (auto _ : state) {
    stripeback::util::Digest d = stripeback::util::digest(buf.get(), kMiB);
    benchmark::DoNotOptimize(d);
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_digest_xxh3_128);

// Worst case: an all-zero block has to be scanned to the end.
void BM_all_zero_zero_block(benchmark::State& state) {
  AlignedBuffer buf = zero_buffer(kMiB);
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.get());
    bool z = stripeback::engine::all_zero(buf.get(), kMiB);
    benchmark::DoNotOptimize(z);
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_all_zero_zero_block);

// A zero block with one non-zero byte at the very end: a full scan that answers false.
void BM_all_zero_last_byte_set(benchmark::State& state) {
  AlignedBuffer buf = zero_buffer(kMiB);
  buf.get()[kMiB - 1] = std::byte{1};
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.get());
    bool z = stripeback::engine::all_zero(buf.get(), kMiB);
    benchmark::DoNotOptimize(z);
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_all_zero_last_byte_set);

// The common case: a data block, rejected at its first word.
void BM_all_zero_data_block(benchmark::State& state) {
  AlignedBuffer buf = random_buffer(kMiB, 3);
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.get());
    bool z = stripeback::engine::all_zero(buf.get(), kMiB);
    benchmark::DoNotOptimize(z);
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_all_zero_data_block);

stripeback::engine::FrameHeader sample_header() {
  stripeback::engine::FrameHeader h;
  h.type = stripeback::engine::FrameType::data;
  h.file_id = 7;
  h.sequence = 1234;
  h.offset = uint64_t{5} << 30;
  h.raw_len = static_cast<uint32_t>(kMiB);
  h.stored_len = static_cast<uint32_t>(kMiB);
  h.stored_crc = 0x12345678u;
  for (size_t i = 0; i < h.raw_digest.size(); ++i) h.raw_digest[i] = static_cast<uint8_t>(i * 37);
  return h;
}

// One frame header (a zero-filled kBlock block) per 1 MiB frame.
void BM_encode_frame_header(benchmark::State& state) {
  AlignedBuffer block = make_buffer(kBlock);
  stripeback::engine::FrameHeader h = sample_header();
  for (auto _ : state) {
    h.sequence++;
    stripeback::engine::encode_frame_header(h, std::span<std::byte, kBlock>(block.get(), kBlock));
    benchmark::DoNotOptimize(block.get());
    benchmark::ClobberMemory();
  }
  set_bytes(state, kMiB);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_encode_frame_header);

// Everything the backup channel computes for one 1 MiB data frame, as in
// backup_channel.cc and piece_writer.cc: the zero test, CRC32C and XXH3-128 of the data,
// the encoded header and the piece checksum over it.
void BM_backup_frame_cpu(benchmark::State& state) {
  AlignedBuffer frame = make_buffer(kBlock + kMiB);
  AlignedBuffer data = random_buffer(kMiB, 4);
  std::memcpy(frame.get() + kBlock, data.get(), kMiB);
  const std::byte* payload = frame.get() + kBlock;
  stripeback::engine::FrameHeader h = sample_header();
  stripeback::engine::PieceChecksum sum;
  for (auto _ : state) {
    bool z = stripeback::engine::all_zero(payload, kMiB);
    benchmark::DoNotOptimize(z);
    h.sequence++;
    h.stored_crc = stripeback::util::crc32c(payload, kMiB);
    h.raw_digest = stripeback::util::digest(payload, kMiB);
    std::span<std::byte, kBlock> header(frame.get(), kBlock);
    stripeback::engine::encode_frame_header(h, header);
    sum.add_frame_header(header);
    benchmark::DoNotOptimize(sum.value());
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_backup_frame_cpu);

// Everything the restore path computes to check one 1 MiB frame (piece_reader.cc): decode
// the header, CRC32C of the stored bytes and XXH3-128 of the raw bytes.
void BM_restore_frame_verify_cpu(benchmark::State& state) {
  AlignedBuffer frame = make_buffer(kBlock + kMiB);
  AlignedBuffer data = random_buffer(kMiB, 5);
  std::memcpy(frame.get() + kBlock, data.get(), kMiB);
  const std::byte* payload = frame.get() + kBlock;
  stripeback::engine::FrameHeader h = sample_header();
  h.stored_crc = stripeback::util::crc32c(payload, kMiB);
  h.raw_digest = stripeback::util::digest(payload, kMiB);
  stripeback::engine::encode_frame_header(h, std::span<std::byte, kBlock>(frame.get(), kBlock));
  for (auto _ : state) {
    auto decoded = stripeback::engine::decode_frame_header({frame.get(), kBlock});
    if (!decoded) {
      state.SkipWithError("decode_frame_header failed");
      break;
    }
    bool good = stripeback::util::crc32c(payload, decoded->stored_len) == decoded->stored_crc &&
                stripeback::util::digest(payload, decoded->raw_len) == decoded->raw_digest;
    if (!good) {
      state.SkipWithError("frame did not verify");
      break;
    }
    benchmark::DoNotOptimize(good);
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_restore_frame_verify_cpu);

// Reference point, not used by stripeback: the same XXH3-128 through libxxhash's runtime
// CPU dispatch (AVX2 / AVX-512 where available). util::digest calls XXH3_128bits, which in
// Debian's libxxhash is the baseline SSE2 build.
void BM_reference_xxh3_128_dispatch(benchmark::State& state) {
  AlignedBuffer buf = random_buffer(kMiB, 2);
  for (auto _ : state) {
    XXH128_hash_t h = XXH3_128bits_dispatch(buf.get(), kMiB);
    benchmark::DoNotOptimize(h);
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_reference_xxh3_128_dispatch);

// Reference point: copying 1 MiB (what any buffered copy such as cp costs per byte at
// least once, user to kernel).
void BM_memcpy_reference(benchmark::State& state) {
  AlignedBuffer src = random_buffer(kMiB, 6);
  AlignedBuffer dst = make_buffer(kMiB);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), kMiB);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_bytes(state, kMiB);
}
BENCHMARK(BM_memcpy_reference);

}  // namespace

BENCHMARK_MAIN();
