// tape_raw: the baseline for tape throughput. A bare libiscsi loop on one drive: MODE
// SELECT the block size, REWIND, then WRITE(6) fixed-block commands of --per-command bytes
// until --size is written, a filemark, and the rate. No framing, no checksums, no helper
// thread: what the drive and the iSCSI path can take.
//
//   tape_raw iscsi://127.0.0.1:PORT/IQN/LUN BLOCK_SIZE SIZE_MIB [PER_COMMAND_BYTES]
// Prints one line: block_size bytes seconds MB/s.
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool command(iscsi_context* ctx, int lun, std::vector<unsigned char> cdb, int dir,
             unsigned char* data, size_t len) {
  scsi_task* t = scsi_create_task(static_cast<int>(cdb.size()), cdb.data(), dir, static_cast<int>(len));
  iscsi_data d{len, data};
  scsi_task* r = iscsi_scsi_command_sync(ctx, lun, t, dir == SCSI_XFER_WRITE ? &d : nullptr);
  // tgt reports end of medium as NO SENSE + EOM with the data written: not a failure here.
  bool ok = r && (t->status == SCSI_STATUS_GOOD ||
                  (t->status == SCSI_STATUS_CHECK_CONDITION && t->sense.key == SCSI_SENSE_NO_SENSE));
  if (!ok) std::fprintf(stderr, "tape_raw: command 0x%02x failed: %s\n", cdb[0], iscsi_get_error(ctx));
  scsi_free_scsi_task(t);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: tape_raw ISCSI_URL BLOCK_SIZE SIZE_MIB [PER_COMMAND_BYTES]\n");
    return 2;
  }
  const std::string url = argv[1];
  const auto bs = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  const uint64_t total = std::strtoull(argv[3], nullptr, 10) << 20;
  size_t per = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : (2u << 20);
  per = std::max<size_t>(bs, per / bs * bs);
  iscsi_context* ctx = iscsi_create_context("iqn.2026-11.org.stripeback:raw");
  iscsi_url* u = iscsi_parse_full_url(ctx, url.c_str());
  if (!u) {
    std::fprintf(stderr, "tape_raw: bad URL %s: %s\n", url.c_str(), iscsi_get_error(ctx));
    return 2;
  }
  iscsi_set_targetname(ctx, u->target);
  iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
  iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE);
  iscsi_set_initial_r2t(ctx, ISCSI_INITIAL_R2T_NO);
  iscsi_set_immediate_data(ctx, ISCSI_IMMEDIATE_DATA_YES);
  if (iscsi_full_connect_sync(ctx, u->portal, u->lun) != 0) {
    std::fprintf(stderr, "tape_raw: login failed: %s\n", iscsi_get_error(ctx));
    return 1;
  }
  const int lun = u->lun;
  unsigned char mode[12] = {0, 0, 0x10, 8, 0, 0, 0, 0, 0, static_cast<unsigned char>(bs >> 16),
                            static_cast<unsigned char>(bs >> 8), static_cast<unsigned char>(bs)};
  if (!command(ctx, lun, {0x15, 0x10, 0, 0, 12, 0}, SCSI_XFER_WRITE, mode, sizeof mode) ||
      !command(ctx, lun, {0x01, 0, 0, 0, 0, 0}, SCSI_XFER_NONE, nullptr, 0))
    return 1;
  std::vector<unsigned char> buf(per);
  for (size_t i = 0; i < per; ++i) buf[i] = static_cast<unsigned char>(i * 131 + 7);
  auto t0 = std::chrono::steady_clock::now();
  uint64_t done = 0;
  while (done < total) {
    const auto blocks = static_cast<uint32_t>(per / bs);
    if (!command(ctx, lun,
                 {0x0a, 1, static_cast<unsigned char>(blocks >> 16),
                  static_cast<unsigned char>(blocks >> 8), static_cast<unsigned char>(blocks), 0},
                 SCSI_XFER_WRITE, buf.data(), per))
      return 1;
    done += per;
  }
  if (!command(ctx, lun, {0x10, 0, 0, 0, 1, 0}, SCSI_XFER_NONE, nullptr, 0)) return 1;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%u %llu %.3f %.1f\n", bs, static_cast<unsigned long long>(done), s,
              static_cast<double>(done) / s / 1e6);
  iscsi_destroy_url(u);
  iscsi_logout_sync(ctx);
  iscsi_destroy_context(ctx);
  return 0;
}
