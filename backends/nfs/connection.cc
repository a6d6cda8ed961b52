#include "backends/nfs/connection.h"
#include "util/log.h"

#include <malloc.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <set>
#include <thread>

#include "backends/nfs/options.h"

namespace stripeback::nfs {
namespace {

struct SyncCall {
  bool done = false;
  int status = 0;
  std::string error;
  const Connection::Done* on_done = nullptr;
};

void sync_cb(int status, nfs_context* /*nfs*/, void* data, void* priv) {
  auto* c = static_cast<SyncCall*>(priv);
  c->done = true;
  c->status = status;
  if (status < 0 && data != nullptr) c->error = static_cast<const char*>(data);
  if (status >= 0 && c->on_done != nullptr) (*c->on_done)(status, data);
}

void log_caps_once(const std::string& server, uint32_t rmax, uint32_t wmax, uint32_t want) {
  static std::mutex m;
  static std::set<std::string> seen;
  if (rmax >= want && wmax >= want) return;
  std::lock_guard lock(m);
  if (!seen.insert(server).second) return;
  util::log_info("NFS server " + server + " caps requests at " + std::to_string(rmax) +
                 " bytes read, " + std::to_string(wmax) + " bytes write (asked " +
                 std::to_string(want) + ")");
}

// nfs_get_error() returns null when libnfs has no message.
std::string error_of(nfs_context* ctx, const char* otherwise) {
  const char* e = ctx != nullptr ? nfs_get_error(ctx) : nullptr;
  return e != nullptr && *e != '\0' ? std::string(e) : std::string(otherwise);
}

}  // namespace

void ConnStats::add_latency(Clock::duration d) {
  double s = std::chrono::duration<double>(d).count();
  latency_sum_s += s;
  latency_max_s = std::max(latency_max_s, s);
}

void ConnStats::add(const ConnStats& o) {
  rpcs += o.rpcs;
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  retries += o.retries;
  reconnects += o.reconnects;
  commits += o.commits;
  rewritten += o.rewritten;
  latency_sum_s += o.latency_sum_s;
  latency_max_s = std::max(latency_max_s, o.latency_max_s);
}

bool is_transport_error(int status) {
  switch (-status) {
    case EINTR:  // the request's deadline passed ("Command was cancelled")
    case EFAULT:  // libnfs reports failed reconnects this way
    case ETIMEDOUT:
    case ECONNRESET:
    case ECONNREFUSED:
    case ECONNABORTED:
    case ENOTCONN:
    case EPIPE:
    case EHOSTUNREACH:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

Connection::Connection(NfsUrl url, std::string server, std::string mount)
    : url_(std::move(url)), server_(std::move(server)), mount_(std::move(mount)) {}

Connection::~Connection() { drop(); }

void Connection::drop() {
  // libnfs does not free the handles with the context: close them first (NFSv3 has no
  // CLOSE on the wire; this only frees them).
  if (ctx_ != nullptr)
    for (auto& [id, fh] : fhs_) nfs_close_async(ctx_, fh, [](int, nfs_context*, void*, void*) {}, nullptr);
  fhs_.clear();
  if (ctx_ == nullptr) return;
  // No umount: against a stopped server it blocks, and the server keeps no state for v3.
  nfs_context* c = ctx_;
  ctx_ = nullptr;
  nfs_destroy_context(c);
}

// libnfs allocates a buffer of the whole PDU for every READ reply and WRITE request (1 MiB
// here). Above glibc's mmap threshold each is a fresh mapping, faulted in page by page and
// unmapped when freed; served from the heap they are reused. Set once, for the process,
// when the first NFS connection is made, if the program asked (NfsOptions::tune_malloc).
void keep_large_buffers_on_heap() {
  if (!options().tune_malloc) return;
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
  });
}

Result<void> Connection::connect() {
  keep_large_buffers_on_heap();
  drop();
  dead_ = false;
  const auto& o = options();
  ctx_ = nfs_init_context();
  if (ctx_ == nullptr) return fail(Errc::no_space, "unable to create an NFS context");
  std::string lurl = url_.libnfs_url(server_, mount_);
  nfs_url* parsed = nfs_parse_url_dir(ctx_, lurl.c_str());
  if (parsed == nullptr) {
    std::string why = error_of(ctx_, "unparsable");
    drop();
    return fail(Errc::invalid_argument, "invalid NFS URL '" + lurl + "': " + why);
  }
  nfs_destroy_url(parsed);
  nfs_set_autoreconnect(ctx_, 0);
  nfs_set_timeout(ctx_, static_cast<int>(o.timeout.count()));
  SyncCall c;
  const std::string what = "mount of nfs://" + server_ + mount_;
  if (nfs_mount_async(ctx_, server_.c_str(), mount_.c_str(), sync_cb, &c) != 0) {
    std::string why = error_of(ctx_, "unable to queue the request");
    drop();
    return Error{Errc::io, EIO, what + " failed: " + why};
  }
  const auto deadline = Clock::now() + o.timeout + kSlack;
  while (!c.done && alive() && Clock::now() < deadline) drive(deadline);
  if (!c.done || c.status < 0) {
    int err = c.done ? -c.status : ETIMEDOUT;
    std::string why = c.done ? c.error : "no answer within " + std::to_string(o.timeout.count()) + " ms";
    if (!c.done && !alive()) why = last_error;
    drop();
    Errc code = is_transport_error(-err) || !c.done ? Errc::timed_out
                : err == ENOENT                     ? Errc::not_found
                                                    : Errc::io;
    return Error{code, err, what + " failed: " + why};
  }
  read_max_ = static_cast<uint32_t>(std::min<uint64_t>(nfs_get_readmax(ctx_), o.max_request));
  write_max_ = static_cast<uint32_t>(std::min<uint64_t>(nfs_get_writemax(ctx_), o.max_request));
  if (read_max_ == 0) read_max_ = 64 * 1024;
  if (write_max_ == 0) write_max_ = 64 * 1024;
  log_caps_once(server_, read_max_, write_max_, o.max_request);
  ++generation_;
  return ok();
}

int Connection::poll_fd() const { return ctx_ ? nfs_get_fd(ctx_) : -1; }
short Connection::poll_events() const {
  return ctx_ ? static_cast<short>(nfs_which_events(ctx_)) : short{0};
}

void Connection::service(short revents) {
  if (!alive()) return;
  if (nfs_service(ctx_, revents) < 0) {
    dead_ = true;
    last_error = error_of(ctx_, "connection lost");
  }
}

void Connection::drive(Clock::time_point until) {
  if (!alive()) return;
  auto now = Clock::now();
  auto wait = std::clamp<Clock::duration>(until - now, Clock::duration::zero(), kServiceEvery);
  pollfd p{poll_fd(), poll_events(), 0};
  int ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
  int rc = ::poll(&p, 1, ms);
  service(rc > 0 ? p.revents : short{0});
}

Result<void> Connection::call(const std::string& what, const Start& start, const Done& done) {
  const auto& o = options();
  std::optional<Clock::time_point> failing_since;
  std::string last = "no answer";
  for (;;) {
    if (failing_since && cancelled(o))
      return Error{Errc::cancelled, ECANCELED, what + " failed: cancelled while NFS server " +
                                                   server_ + " did not answer (" + last + ")"};
    if (failing_since && Clock::now() - *failing_since > o.retry) {
      return Error{Errc::timed_out, ETIMEDOUT,
                   what + " failed: NFS server " + server_ + " did not answer for " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(o.retry).count()) +
                       " s (" + last + ")"};
    }
    if (!alive()) {
      if (ctx_ != nullptr || generation_ > 0) ++stats.reconnects;
      auto r = connect();
      if (!r) {
        if (r.error().code != Errc::timed_out && r.error().code != Errc::io)
          return r.error().wrap(what + " failed");
        last = r.error().what;
        if (!failing_since) failing_since = Clock::now();
        std::this_thread::sleep_for(kBackoff);
        continue;
      }
    }
    SyncCall c;
    c.on_done = &done;
    auto t0 = Clock::now();
    ++stats.rpcs;
    if (start(ctx_, sync_cb, &c) != 0) {
      last = ctx_ != nullptr ? error_of(ctx_, "unable to queue the request") : last_error;
      dead_ = true;
    } else {
      const auto deadline = t0 + o.timeout + kSlack;
      while (!c.done && alive() && Clock::now() < deadline) drive(deadline);
    }
    if (c.done && !is_transport_error(c.status)) {
      stats.add_latency(Clock::now() - t0);
      if (c.status < 0) {
        Error e = sys_error(-c.status, what + " failed");
        e.what = what + " failed: " + c.error;
        return e;
      }
      return ok();
    }
    last = c.done ? c.error : !alive() ? last_error : "no answer within deadline";
    if (!failing_since) failing_since = Clock::now();
    ++stats.retries;
    dead_ = true;
    drop();  // c stays alive: a cancelled callback may still run in here
  }
}

}  // namespace stripeback::nfs
