#include "backends/tape/iscsi_transport.h"

#include "backends/tape/scsi.h"

// clang-format off
#include <cstdint>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
// clang-format on

#include <memory>

namespace stripeback::tape {
namespace {

constexpr const char* kInitiator = "iqn.2026-11.org.stripeback:initiator";

struct TaskFree {
  void operator()(scsi_task* t) const { scsi_free_scsi_task(t); }
};
using TaskPtr = std::unique_ptr<scsi_task, TaskFree>;

struct UrlFree {
  void operator()(iscsi_url* u) const { iscsi_destroy_url(u); }
};

}  // namespace

Result<std::unique_ptr<IscsiTransport>> IscsiTransport::connect(const std::string& url) {
  std::unique_ptr<IscsiTransport> t(new IscsiTransport);
  t->url_ = url;
  t->ctx_ = iscsi_create_context(kInitiator);
  if (!t->ctx_) return fail(Errc::io, "tape '" + url + "': unable to create an iSCSI context");
  std::unique_ptr<iscsi_url, UrlFree> u(iscsi_parse_full_url(t->ctx_, url.c_str()));
  if (!u)
    return fail(Errc::invalid_argument, "tape '" + url + "': not an iSCSI URL (" +
                                            iscsi_get_error(t->ctx_) +
                                            "); expected iscsi://HOST:PORT/IQN/LUN");
  t->lun_ = u->lun;
  iscsi_set_targetname(t->ctx_, u->target);
  iscsi_set_session_type(t->ctx_, ISCSI_SESSION_NORMAL);
  iscsi_set_header_digest(t->ctx_, ISCSI_HEADER_DIGEST_NONE);
  iscsi_set_initial_r2t(t->ctx_, ISCSI_INITIAL_R2T_NO);
  iscsi_set_immediate_data(t->ctx_, ISCSI_IMMEDIATE_DATA_YES);
  iscsi_set_timeout(t->ctx_, 30);
  if (iscsi_full_connect_sync(t->ctx_, u->portal, u->lun) != 0)
    return fail(Errc::io, "tape '" + url + "': unable to log in: " + iscsi_get_error(t->ctx_));
  return t;
}

IscsiTransport::~IscsiTransport() {
  if (!ctx_) return;
  if (iscsi_is_logged_in(ctx_)) iscsi_logout_sync(ctx_);
  iscsi_destroy_context(ctx_);
}

Result<ScsiReply> IscsiTransport::execute(const ScsiCommand& cmd) {
  int dir = SCSI_XFER_NONE;
  if (cmd.dir == DataDir::read) dir = SCSI_XFER_READ;
  if (cmd.dir == DataDir::write) dir = SCSI_XFER_WRITE;
  TaskPtr task(scsi_create_task(static_cast<int>(cmd.cdb.size()),
                                const_cast<unsigned char*>(cmd.cdb.data()), dir,
                                static_cast<int>(cmd.data.size())));
  if (!task) return fail(Errc::io, "tape '" + url_ + "': out of memory for a SCSI task");
  if (cmd.dir == DataDir::read && !cmd.data.empty()) {
    // Read straight into the caller's buffer.
    if (scsi_task_add_data_in_buffer(task.get(), static_cast<int>(cmd.data.size()),
                                     cmd.data.data()) != 0)
      return fail(Errc::io, "tape '" + url_ + "': unable to attach a read buffer");
  }
  iscsi_data out{};
  iscsi_data* outp = nullptr;
  if (cmd.dir == DataDir::write) {
    out.size = cmd.data.size();
    out.data = cmd.data.data();
    outp = &out;
  }
  iscsi_set_timeout(ctx_, static_cast<int>(cmd.timeout.count()));
  if (!iscsi_scsi_command_sync(ctx_, lun_, task.get(), outp))
    return fail(Errc::io, "tape '" + url_ + "': command " + opcode_name(cmd.cdb[0]) +
                              " failed: " + iscsi_get_error(ctx_));
  ScsiReply r;
  if (task->status == SCSI_STATUS_CANCELLED || task->status == SCSI_STATUS_ERROR)
    return fail(Errc::io, "tape '" + url_ + "': command failed: " + iscsi_get_error(ctx_));
  r.status = static_cast<uint8_t>(task->status);
  if (r.status == kStatusCheckCondition) {
    // The response's data segment is a 2-byte sense length followed by the sense bytes.
    if (task->datain.data && task->datain.size > 2) {
      const size_t len = (size_t{task->datain.data[0]} << 8) | task->datain.data[1];
      const size_t have = static_cast<size_t>(task->datain.size) - 2;
      r.sense.assign(task->datain.data + 2, task->datain.data + 2 + std::min(len, have));
    } else {
      // Only libiscsi's parsed summary is left: rebuild a minimal fixed-format sense.
      r.sense = {0x70, 0, static_cast<uint8_t>(task->sense.key), 0, 0, 0, 0, 10,
                 0,    0, 0, 0, static_cast<uint8_t>(task->sense.ascq >> 8),
                 static_cast<uint8_t>(task->sense.ascq)};
    }
  }
  r.transferred = cmd.data.size();
  if (task->residual_status == SCSI_RESIDUAL_UNDERFLOW && task->residual <= cmd.data.size())
    r.transferred -= task->residual;
  return r;
}

}  // namespace stripeback::tape
