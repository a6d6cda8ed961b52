#include "backends/nfs/nfs_engine.h"
#include "util/log.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "backends/nfs/nfs_fs.h"
#include "backends/nfs/options.h"
#include "backends/nfs/raw.h"

namespace stripeback::nfs {
namespace {

struct Op {
  io::IoOp io;
  Target target;
  uint32_t chunks_left = 0;
  uint32_t bytes = 0;       // confirmed bytes (reads: up to the first short request)
  uint32_t short_at = UINT32_MAX;  // op-relative offset of the first short read
  std::optional<Error> error;
  // Writes: some request was answered UNSTABLE, with verifier `verf` (or with several).
  bool unstable = false, verf_mixed = false, verf_set = false;
  Verifier verf{};
  // COMMITs: `internal` when the engine sent it (no caller waits), and the writes it settles.
  bool internal = false;
  std::vector<Op*> batch;
};

struct Request;
class NfsEngine;

// What a libnfs callback points at; lives until the callback ran or its context is gone.
struct Ticket {
  Request* req = nullptr;
  uint64_t generation = 0;
  bool cancelled = false;
  Connection* conn = nullptr;
  NfsEngine* engine = nullptr;
};

struct Request {
  Op* op = nullptr;
  uint32_t pos = 0, len = 0;  // within the op
  Clock::time_point sent{};
  Ticket* ticket = nullptr;   // while on the wire
};

struct ConnState {
  std::deque<Request*> queue;  // waiting to be sent
  uint32_t on_wire = 0;
  std::optional<Clock::time_point> failing_since;
  bool broken = false;  // a request failed in transport: replace the context
  bool warned = false;  // the current outage was logged
  Clock::time_point next_attempt{};
  std::string last_error;
};

// Per file (connection and NFS file id). Writes the server answered UNSTABLE wait here, their
// buffers still unreleased to the caller, until a COMMIT returns the verifier they were
// written under; with another verifier (the server restarted) they are written again.
struct FileState {
  std::vector<Op*> waiting;
  uint64_t waiting_bytes = 0;
  uint32_t writes_active = 0;  // write ops queued or on the wire, not answered in full
  bool commit_out = false;     // a COMMIT is queued or on the wire
  std::deque<Op*> syncs;       // fsync ops, sent once the writes before them are answered
};

// Unstable data a file may hold before the engine commits it (the caller's buffers are
// pinned until then); it also commits whenever the file has no write in progress.
constexpr uint64_t kCommitEvery = 8u << 20;

#if STRIPEBACK_TEST_HOOKS
// test_hooks::fake_verifier_change() arms it; the next COMMIT reply takes it.
std::atomic<bool> g_fake_verifier_change{false};

bool take_fake_verifier_change() {
  return g_fake_verifier_change.load(std::memory_order_relaxed) &&
         g_fake_verifier_change.exchange(false);
}
#endif

class NfsEngine final : public io::IoEngine {
 public:
  ~NfsEngine() override {
    // Contexts outlive the engine (they belong to the thread): a context with a request of
    // ours still on the wire is dropped, so no callback can reach a freed engine.
    for (auto& t : tickets_)
      if (!t.cancelled) t.conn->drop();
  }

  const char* name() const override { return "libnfs"; }

  Result<void> submit(std::span<const io::IoOp> ops) override {
    for (const io::IoOp& io : ops) {
      auto op = std::make_unique<Op>();
      op->io = io;
      auto t = target_of_id(io.fd);
      if (!t) {
        op->error = t.error();
        done_.push_back(std::move(op));
        continue;
      }
      op->target = *t;
      Connection& c = *t->conn;
      if (io.kind == io::OpKind::fsync || io.kind == io::OpKind::fdatasync) {
        // Sent as a COMMIT once every write before it was answered.
        op->chunks_left = 1;
        file(*op).syncs.push_back(op.get());
      } else {
        if (io.kind == io::OpKind::write) ++file(*op).writes_active;
        queue_requests(states_[&c], op.get(), /*front=*/false);
      }
      live_.push_back(std::move(op));
      ++callers_live_;
    }
    schedule_commits();
    recover();
    pump();
    return ok();
  }

  size_t reap(std::span<io::IoCompletion> out, size_t min_complete,
              io::Clock::time_point until) override {
    min_complete = std::min({min_complete, out.size(), in_flight()});
    size_t n = 0;
    for (;;) {
      n += take_done(out.subspan(n));
      if (n >= min_complete || n == out.size()) return n;
      if (Clock::now() >= until) return n;
      if (wait_once(until)) return n;  // the other engine has completions
      schedule_commits();
      recover();
      pump();
    }
  }

  size_t in_flight() const override { return callers_live_ + done_.size(); }
  void wake_on(int fd) override { wake_fd_ = fd; }

 private:
  static uint32_t request_size(Connection& c, io::OpKind kind) {
    uint32_t cap = options().max_request;
    uint32_t m = kind == io::OpKind::read ? c.read_max() : c.write_max();
    if (m == 0) m = cap;  // not connected yet: the first connect sets it; requests split again
    return std::max<uint32_t>(4096, std::min(cap, m));
  }

  static bool is_commit(const Op& op) {
    return op.io.kind == io::OpKind::fsync || op.io.kind == io::OpKind::fdatasync;
  }

  FileState& file(const Op& op) { return files_[{op.target.conn, op.io.fd}]; }

  Request* new_request(Op* op, uint32_t pos, uint32_t len) {
    requests_.push_back(std::make_unique<Request>(Request{op, pos, len}));
    return requests_.back().get();
  }

  // Cuts a read or write op into requests (again, for a write sent anew).
  void queue_requests(ConnState& st, Op* op, bool front) {
    uint32_t step = request_size(*op->target.conn, op->io.kind);
    uint32_t n = op->io.len == 0 ? 1 : (op->io.len + step - 1) / step;
    op->chunks_left = n;
    std::vector<Request*> rs;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t pos = i * step;
      rs.push_back(new_request(op, pos, std::min(step, op->io.len - pos)));
    }
    if (front) st.queue.insert(st.queue.begin(), rs.begin(), rs.end());
    else st.queue.insert(st.queue.end(), rs.begin(), rs.end());
  }

  static void on_read(int status, nfs_context* /*nfs*/, void* data, void* priv) {
    RawReply r;
    r.status = status;
    if (status < 0 && data != nullptr) r.error = static_cast<const char*>(data);
    deliver(priv, r, status >= 0 ? data : nullptr);
  }
  static void on_write(rpc_context* /*rpc*/, int status, void* data, void* priv) {
    deliver(priv, decode_write(status, data), nullptr);
  }
  static void on_commit(rpc_context* /*rpc*/, int status, void* data, void* priv) {
    deliver(priv, decode_commit(status, data), nullptr);
  }
  static void deliver(void* priv, const RawReply& reply, void* data) {
    auto* t = static_cast<Ticket*>(priv);
    if (t->cancelled) return;
    t->cancelled = true;  // answered; the engine frees it
    Request* r = t->req;
    t->req = nullptr;
    r->ticket = nullptr;
    t->engine->reply(*t->conn, *r, reply, data);
  }

  void reply(Connection& c, Request& r, const RawReply& rep, void* data) {
    auto& st = states_[&c];
    --st.on_wire;
    Op* op = r.op;
    const int status = rep.status;
    if (status < 0 && is_transport_error(status)) {
      // Not dropped here: we are inside this context's nfs_service. recover() replaces it.
      ++c.stats.retries;
      st.last_error = rep.error.empty() ? "request failed" : rep.error;
      st.broken = true;
      if (!st.failing_since) st.failing_since = Clock::now();
      st.queue.push_front(&r);
      return;
    }
    c.stats.add_latency(Clock::now() - r.sent);
    if (st.warned) util::log_info("NFS server " + c.server() + " answers again");
    st.failing_since.reset();
    st.warned = false;
    if (status < 0) {
      if (!op->error) {
        const char* what = op->io.kind == io::OpKind::read    ? "read"
                           : op->io.kind == io::OpKind::write ? "write"
                                                              : "commit";
        op->error = Error{Errc::io, -status,
                          std::string("NFS ") + what + " of '" + op->target.name +
                              "' at offset " + std::to_string(op->io.offset + r.pos) +
                              " failed: " + (rep.error.empty() ? "error" : rep.error)};
        if (is_commit(*op)) op->error->what = "NFS commit of '" + op->target.name + "' failed: " + rep.error;
        if (-status == ENOSPC || -status == EDQUOT) op->error->code = Errc::no_space;
      }
    } else if (op->io.kind == io::OpKind::read) {
      auto got = std::min<uint32_t>(static_cast<uint32_t>(status), r.len);
      if (got > 0) std::memcpy(op->io.buf + r.pos, data, got);
      c.stats.bytes_read += got;
      if (got < r.len) op->short_at = std::min(op->short_at, r.pos + got);
      op->bytes += got;
    } else if (op->io.kind == io::OpKind::write) {
      auto put = std::min<uint32_t>(static_cast<uint32_t>(status), r.len);
      c.stats.bytes_written += put;
      if (put > 0 && !rep.stable) {
        if (op->verf_set && op->verf != rep.verf) op->verf_mixed = true;
        op->unstable = true;
        op->verf_set = true;
        op->verf = rep.verf;
      }
      op->bytes += put;
      if (put < r.len) {
        // A short write: send the rest again.
        r.pos += put;
        r.len -= put;
        if (put == 0 && !op->error)
          op->error = Error{Errc::io, 0, "NFS write of '" + op->target.name + "' wrote nothing"};
        else {
          st.queue.push_front(&r);
          return;
        }
      }
    } else {
      settle(c, *op, rep.verf);
    }
    finish_request(r);
  }

  // A COMMIT came back with `verf`: the writes it covers are durable if they were written
  // under that verifier; the others are sent again (and the fsync op, if any, waits again).
  void settle(Connection& c, Op& commit, const Verifier& verf) {
    Verifier v = verf;
#if STRIPEBACK_TEST_HOOKS
    if (take_fake_verifier_change()) v[0] = static_cast<char>(v[0] ^ 1);
#endif
    FileState& fs = file(commit);
    fs.commit_out = false;
    ++c.stats.commits;
    uint64_t again = 0;
    for (Op* w : std::exchange(commit.batch, {})) {
      if (!w->verf_mixed && w->verf == v) {
        complete(w);
        continue;
      }
      again += w->io.len;
      w->unstable = w->verf_mixed = w->verf_set = false;
      w->bytes = 0;
      ++fs.writes_active;
      queue_requests(states_[&c], w, /*front=*/true);
    }
    if (again == 0) return;
    c.stats.rewritten += again;
    util::log_warn("NFS server " + c.server() + " answered a COMMIT of '" + commit.target.name +
                   "' with a new write verifier (it restarted): writing its " +
                   std::to_string(again) + " unstable bytes again");
    if (!commit.internal) {
      // The caller's fsync waits for the rewritten data: it goes back in line.
      ++commit.chunks_left;
      fs.syncs.push_front(&commit);
    }
  }

  void finish_request(Request& r) {
    Op* op = r.op;
    if (--op->chunks_left > 0) return;
    std::erase_if(requests_, [op](const std::unique_ptr<Request>& q) { return q->op == op; });
    if (op->io.kind == io::OpKind::write) {
      FileState& fs = file(*op);
      --fs.writes_active;
      if (!op->error && op->unstable) {
        fs.waiting.push_back(op);
        fs.waiting_bytes += op->io.len;
        return;
      }
    }
    if (is_commit(*op) && op->error) {
      // Neither the writes it covered nor those waiting for the next COMMIT can be called
      // durable.
      FileState& fs = file(*op);
      fs.commit_out = false;
      auto failed = std::exchange(op->batch, {});
      failed.insert(failed.end(), fs.waiting.begin(), fs.waiting.end());
      fs.waiting.clear();
      fs.waiting_bytes = 0;
      for (Op* w : failed) {
        w->error = op->error;
        complete(w);
      }
    }
    complete(op);
  }

  void complete(Op* op) {
    auto it = std::find_if(live_.begin(), live_.end(),
                           [op](const std::unique_ptr<Op>& p) { return p.get() == op; });
    if (!op->internal) {
      --callers_live_;
      done_.push_back(std::move(*it));
    }
    live_.erase(it);
  }

  // Sends the COMMITs that are due: fsync ops whose file has no write in progress, and
  // the engine's own for files holding enough unstable data or no write in progress.
  void schedule_commits() {
    for (auto& [key, fs] : files_) {
      if (fs.commit_out) continue;
      Op* c = nullptr;
      if (!fs.syncs.empty() && fs.writes_active == 0) {
        c = fs.syncs.front();
        fs.syncs.pop_front();
      } else if (!fs.waiting.empty() && (fs.waiting_bytes >= kCommitEvery || fs.writes_active == 0)) {
        auto op = std::make_unique<Op>();
        op->io = io::IoOp{io::OpKind::fdatasync, key.second, 0, nullptr, 0, 0};
        op->target = fs.waiting.front()->target;
        op->internal = true;
        op->chunks_left = 1;
        c = op.get();
        live_.push_back(std::move(op));
      }
      if (c == nullptr) continue;
      fs.commit_out = true;
      states_[key.first].queue.push_back(new_request(c, 0, 0));
    }
  }

  size_t take_done(std::span<io::IoCompletion> out) {
    size_t n = 0;
    while (n < out.size() && !done_.empty()) {
      Op& op = *done_.front();
      io::IoCompletion c;
      c.tag = op.io.tag;
      c.kind = op.io.kind;
      if (op.error) c.result = *op.error;
      else if (op.io.kind == io::OpKind::read)
        c.result = std::min(op.bytes, op.short_at);
      else if (op.io.kind == io::OpKind::write)
        c.result = op.bytes;
      else
        c.result = uint32_t{0};
      out[n++] = std::move(c);
      done_.pop_front();
    }
    return n;
  }

  // Sends queued requests on live connections, up to the in-flight limit (a COMMIT does
  // not count against it: it carries no data).
  void pump() {
    const unsigned limit = std::max(1u, options().inflight);
    const bool stable = options().stable_writes;
    for (auto& [conn, st] : states_) {
      Connection& c = *conn;
      while (!st.queue.empty() && (st.on_wire < limit || is_commit(*st.queue.front()->op))) {
        if (!c.alive()) break;
        Request* r = st.queue.front();
        Op* op = r->op;
        auto fh = handle_on(c, op->io.fd);
        if (!c.alive() || !fh) {
          if (!fh && !is_retryable(fh.error())) {
            st.queue.pop_front();
            if (!op->error) op->error = fh.error();
            finish_request(*r);
          }
          break;
        }
        // Requests were cut before the server's limits were known: cut them again.
        uint32_t step = request_size(c, op->io.kind);
        if (!is_commit(*op) && r->len > step) {
          auto* rest = new_request(op, r->pos + step, r->len - step);
          r->len = step;
          ++op->chunks_left;
          st.queue.insert(st.queue.begin() + 1, rest);
        }
        tickets_.push_back(Ticket{r, c.generation(), false, &c, this});
        Ticket* t = &tickets_.back();
        r->ticket = t;
        r->sent = Clock::now();
        int rc = 0;
        switch (op->io.kind) {
          case io::OpKind::read:
            rc = nfs_pread_async(c.ctx(), *fh, op->io.offset + r->pos, r->len, on_read, t);
            break;
          case io::OpKind::write:
            rc = send_write(c.ctx(), *fh, op->io.offset + r->pos, r->len, op->io.buf + r->pos,
                            stable, on_write, t);
            break;
          case io::OpKind::fsync:
          case io::OpKind::fdatasync: {
            // Covers every write answered so far (sent again after a reconnect, it covers
            // those answered since as well).
            FileState& fs = file(*op);
            op->batch.insert(op->batch.end(), fs.waiting.begin(), fs.waiting.end());
            fs.waiting.clear();
            fs.waiting_bytes = 0;
            rc = send_commit(c.ctx(), *fh, on_commit, t);
            break;
          }
        }
        st.queue.pop_front();
        ++st.on_wire;
        ++c.stats.rpcs;
        if (rc != 0) {
          // Queueing failed: the context is broken. Put it back; recover() reconnects.
          t->cancelled = true;
          t->req = nullptr;
          r->ticket = nullptr;
          --st.on_wire;
          st.queue.push_front(r);
          c.drop();
          break;
        }
      }
    }
    std::erase_if(tickets_, [](const Ticket& t) { return t.cancelled && t.req == nullptr; });
  }
  static bool is_retryable(const Error& e) { return e.code == Errc::timed_out; }

  // Waits for any connection's socket (at most 100 ms) and services what is ready.
  // Returns true when woken by wake_fd_ rather than by NFS traffic or the clock.
  bool wait_once(io::Clock::time_point until) {
    std::vector<pollfd> fds;
    std::vector<Connection*> conns;
    for (auto& [conn, st] : states_) {
      if (!conn->alive() || st.on_wire == 0) continue;
      fds.push_back({conn->poll_fd(), conn->poll_events(), 0});
      conns.push_back(conn);
    }
    auto wait = std::clamp<Clock::duration>(until - Clock::now(), Clock::duration::zero(),
                                            kServiceEvery);
    if (fds.empty() && wake_fd_ < 0) {
      // Nothing on the wire: only reconnects are pending; sleep rather than spin.
      std::this_thread::sleep_for(std::min<Clock::duration>(wait, kBackoff));
      return false;
    }
    if (wake_fd_ >= 0) fds.push_back({wake_fd_, POLLIN, 0});
    // Round up: a 0 ms poll for a deadline less than 1 ms away would spin.
    int ms = static_cast<int>(
        std::chrono::ceil<std::chrono::milliseconds>(wait).count());
    int rc = ::poll(fds.data(), fds.size(), ms);
    const bool woken = wake_fd_ >= 0 && rc > 0 && fds.back().revents != 0;
    for (size_t i = 0; i < conns.size(); ++i) conns[i]->service(rc > 0 ? fds[i].revents : short{0});
    // Requests past deadline plus slack whose callback never came mean a lost context.
    auto now = Clock::now();
    for (auto& t : tickets_) {
      if (t.cancelled || t.req == nullptr) continue;
      if (now - t.req->sent > options().timeout + kSlack) {
        util::log_debug("NFS request to " + t.conn->server() + " got no answer by its deadline");
        t.conn->drop();
      }
    }
    return woken;
  }

  // Requeues the requests of dead contexts (and of contexts replaced by a reconnect),
  // reconnects (at most every kBackoff) and fails the ops once the retry window has passed.
  void recover() {
    auto now = Clock::now();
    for (auto& [conn, st] : states_) {
      Connection& c = *conn;
      if ((st.broken || !c.alive()) && c.ctx() != nullptr) {
        if (!c.alive()) st.last_error = c.last_error;
        c.drop();  // requests still queued in it are answered with -EINTR from here
      }
      st.broken = false;
      for (auto& t : tickets_) {
        if (t.cancelled || t.conn != &c) continue;
        if (c.alive() && t.generation == c.generation()) continue;
        t.cancelled = true;
        if (t.req != nullptr) {
          t.req->ticket = nullptr;
          st.queue.push_front(t.req);
          ++c.stats.retries;
          --st.on_wire;
          t.req = nullptr;
        }
      }
      if (c.alive() || st.queue.empty()) continue;
      if (!st.failing_since) st.failing_since = now;
      if (!st.warned && c.generation() > 0) {  // a first connect is no outage
        st.warned = true;
        util::log_warn("NFS server " + c.server() + " stopped answering (" +
                       (st.last_error.empty() ? std::string("request deadline passed") : st.last_error) +
                       "); reconnecting");
      }
      if (cancelled(options())) {
        fail_all(c, st, Error{Errc::cancelled, ECANCELED,
                              "cancelled while NFS server " + c.server() + " did not answer"});
        continue;
      }
      if (now - *st.failing_since > options().retry) {
        fail_all(c, st);
        continue;
      }
      if (now < st.next_attempt) continue;
      if (c.generation() > 0) ++c.stats.reconnects;
      auto r = c.connect();
      util::log_debug("NFS reconnect to " + c.server() + ": " + (r ? std::string("ok") : r.error().what));
      if (!r) {
        st.last_error = r.error().what;
        st.next_attempt = Clock::now() + kBackoff;
        // A server that answers "no such export" or "permission denied" will not change
        // its mind: fail now instead of at the end of the window.
        if (r.error().code != Errc::timed_out && r.error().code != Errc::io) fail_all(c, st, r.error());
      }
    }
    // Every ticket cancelled here belongs to a destroyed context: no callback can come.
    std::erase_if(tickets_, [](const Ticket& t) { return t.cancelled && t.req == nullptr; });
  }

  void fail_all(Connection& c, ConnState& st, std::optional<Error> why = std::nullopt) {
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(options().retry).count();
    while (!st.queue.empty()) {
      Request* r = st.queue.front();
      st.queue.pop_front();
      Op* op = r->op;
      if (!op->error && why) op->error = why->wrap("unable to reach '" + op->target.name + "'");
      if (!op->error)
        op->error = Error{Errc::timed_out, ETIMEDOUT,
                          "NFS server " + c.server() + " did not answer for " +
                              std::to_string(secs) + " s (" + st.last_error + ")"};
      finish_request(*r);
    }
    st.failing_since.reset();
    st.warned = false;
  }

  std::map<Connection*, ConnState> states_;
  std::list<std::unique_ptr<Op>> live_;
  std::deque<std::unique_ptr<Op>> done_;
  std::vector<std::unique_ptr<Request>> requests_;
  std::list<Ticket> tickets_;
  std::map<std::pair<Connection*, int>, FileState> files_;
  size_t callers_live_ = 0;  // ops in live_ a caller submitted (not the engine's COMMITs)
  int wake_fd_ = -1;
};

}  // namespace

std::unique_ptr<io::IoEngine> make_nfs_engine() { return std::make_unique<NfsEngine>(); }

#if STRIPEBACK_TEST_HOOKS
void test_hooks::fake_verifier_change() {
  g_fake_verifier_change.store(true, std::memory_order_relaxed);
}
#endif

}  // namespace stripeback::nfs
