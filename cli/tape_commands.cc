#include "cli/tape_commands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#if STRIPEBACK_WITH_TAPE
#include "backends/tape/drive.h"
#include "backends/tape/exercise.h"
#include "backends/tape/label.h"
#endif
#include "util/escape.h"
#include "util/json.h"
#include "util/units.h"

namespace stripeback::cli {
namespace {

#if STRIPEBACK_WITH_TAPE
using namespace stripeback::tape;
#endif

int report_tape(const Error& e) {
  print_error(e.what);
  return e.code == Errc::invalid_argument ? kExitUsage : kExitFailed;
}

#if STRIPEBACK_WITH_TAPE
// Drive URLs, inquiry strings and label fields in text output, escaped.
std::string esc(const std::string& text) { return util::escape_text(text); }

Result<std::unique_ptr<TapeDrive>> open_ready(const std::string& url) {
  SB_ASSIGN(auto d, TapeDrive::open(url));
  SB_TRY(d->wait_ready(std::chrono::seconds(10), [](const std::string& msg) {
    print_error(msg);
  }));
  return d;
}

int cmd_status(const TapeFlags& f) {
  auto d = TapeDrive::open(f.urls[0]);
  if (!d) return report_tape(d.error());
  TapeDrive& drive = **d;
  util::JsonWriter j;
  j.begin_object();
  j.kv("url", f.urls[0]);
  std::ostringstream text;
  text << "drive:       " << esc(f.urls[0]) << "\n";
  auto ready = drive.test_unit_ready();
  j.kv("ready", static_cast<bool>(ready));
  if (!ready) {
    j.kv("not_ready", ready.error().what);
    text << "ready:       no (" << esc(ready.error().what) << ")\n";
  } else {
    text << "ready:       yes\n";
  }
  if (auto inq = drive.inquiry()) {
    j.kv("vendor", inq->vendor).kv("product", inq->product).kv("revision", inq->revision);
    j.kv("device_type", static_cast<unsigned>(inq->device_type));
    text << "inquiry:     " << esc(inq->vendor) << " " << esc(inq->product) << " "
         << esc(inq->revision)
         << (inq->device_type == 1 ? " (tape)" : " (not a tape drive)") << "\n";
  } else {
    return report_tape(inq.error());
  }
  if (auto lim = drive.read_block_limits()) {
    j.begin_object("block_limits").kv("min", lim->min).kv("max", lim->max).kv("granularity", lim->granule()).end_object();
    text << "block limits: min " << lim->min << ", max " << lim->max << ", granularity "
         << lim->granule() << "\n";
  }
  if (auto bs = drive.block_size()) {
    j.kv("mode_block_size", *bs);
    text << "mode block size: " << (*bs == 0 ? std::string("variable") : std::to_string(*bs)) << "\n";
  }
  if (auto pos = drive.read_position()) {
    j.begin_object("position").kv("known", !pos->unknown).kv("bop", pos->bop).kv("eop", pos->eop).kv("block", pos->block).end_object();
    text << "position:    "
         << (pos->unknown ? std::string("unknown (the drive does not report it)")
                          : "block " + std::to_string(pos->block) + (pos->bop ? " (beginning)" : ""))
         << "\n";
  }
  if (ready) {
    auto lr = read_label(drive);
    if (!lr) return report_tape(lr.error());
    if (lr->label) {
      j.begin_object("label").kv("volume", lr->label->volume_id).kv("block_size", lr->label->block_size).kv("version", static_cast<unsigned>(lr->label->version)).end_object();
      text << "label:       volume " << esc(lr->label->volume_id) << ", block size "
           << lr->label->block_size << ", format version " << lr->label->version << "\n";
      (void)drive.set_block_size(lr->label->block_size);
    } else {
      j.kv("label", lr->why_none);
      text << "label:       none: " << esc(lr->why_none) << "\n";
    }
    (void)drive.rewind();
  }
  j.end_object();
  std::fputs(f.json ? (j.str() + "\n").c_str() : text.str().c_str(), stdout);
  return ready ? kExitOk : kExitFailed;
}

int cmd_label(const TapeFlags& f) {
  if (auto v = validate_volume_id(f.volume); !v) return report_tape(v.error());
  auto bs = engine::parse_media_block_size(f.block_size);
  if (!bs) return report_tape(bs.error());
  auto d = open_ready(f.urls[0]);
  if (!d) return report_tape(d.error());
  auto lim = (*d)->read_block_limits();
  if (!lim) return report_tape(lim.error());
  if (auto c = check_block_size(*bs, *lim, f.urls[0]); !c) return report_tape(c.error());
  auto lr = read_label(**d);
  if (!lr) return report_tape(lr.error());
  if (lr->label && !f.force)
    return report_tape(Error{Errc::invalid_argument, 0,
                        "tape '" + f.urls[0] + "' is already labelled as volume " +
                            lr->label->volume_id +
                            "; relabelling loses everything on it: add --force"});
  VolumeLabel l{f.volume, *bs, 1,
                std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count()};
  if (auto w = write_label(**d, l); !w) return report_tape(w.error());
  (void)(*d)->rewind();
  std::printf("labelled %s as volume %s (block size %u)\n", esc(f.urls[0]).c_str(),
              esc(f.volume).c_str(), *bs);
  return kExitOk;
}

int cmd_rewind(const TapeFlags& f, bool eject) {
  auto d = open_ready(f.urls[0]);
  if (!d) return report_tape(d.error());
  if (auto r = (*d)->rewind(); !r) return report_tape(r.error());
  if (eject) {
    if (auto r = (*d)->unload(); !r) return report_tape(r.error());
  }
  std::printf("%s %s\n", eject ? "ejected" : "rewound", esc(f.urls[0]).c_str());
  return kExitOk;
}

int cmd_test(const TapeFlags& f, const std::atomic<bool>& cancel) {
  auto size = util::parse_size(f.size);
  if (!size) return report_tape(Error{Errc::invalid_argument, 0, "--size '" + f.size + "': " + size.error().what});
  std::vector<uint32_t> sizes;
  std::stringstream in(f.block_sizes);
  for (std::string item; std::getline(in, item, ',');) {
    auto bs = engine::parse_media_block_size(item);
    if (!bs) return report_tape(bs.error());
    sizes.push_back(*bs);
  }
  auto d = open_ready(f.urls[0]);
  if (!d) return report_tape(d.error());
  auto lim = (*d)->read_block_limits();
  if (!lim) return report_tape(lim.error());
  for (uint32_t bs : sizes)
    if (auto c = check_block_size(bs, *lim, f.urls[0]); !c) return report_tape(c.error());
  util::JsonWriter j;
  j.begin_object().begin_array("block_sizes");
  for (uint32_t bs : sizes) {
    auto r = speed_test(**d, bs, *size, cancel);
    if (!r) return report_tape(r.error());
    const double w = util::mb_per_s(r->bytes, r->write_s), rd = util::mb_per_s(r->bytes, r->read_s);
    j.begin_object().kv("block_size", bs).kv("bytes", r->bytes).kv("write_mb_s", w).kv("read_mb_s", rd).kv("end_of_medium", r->end_of_medium).end_object();
    if (!f.json)
      std::printf("block size %7u: wrote and read back %s: write %.1f MB/s, read %.1f MB/s%s\n", bs,
                  util::format_bytes(r->bytes).c_str(), w, rd,
                  r->end_of_medium ? " (end of medium reached first)" : "");
    std::fflush(stdout);
  }
  j.end_array();
  d->reset();
  if (f.urls.size() >= 2) {
    auto bs = engine::parse_media_block_size(f.block_size);
    if (!bs) return report_tape(bs.error());
    auto s = span_test(f.urls[0], f.urls[1], *bs, 8u << 20, cancel);
    if (!s) return report_tape(s.error());
    j.begin_object("span").begin_array("segments");
    std::string segs;
    for (const Span& sp : s->location.spans) {
      j.begin_object().kv("volume", sp.volume_id).kv("file", sp.file).kv("first_block", sp.first_seq).kv("blocks", sp.blocks).end_object();
      segs += " volume " + esc(sp.volume_id) + ": blocks " + std::to_string(sp.first_seq) + ".." +
              std::to_string(sp.first_seq + sp.blocks - 1) + ";";
    }
    j.end_array().kv("bytes", s->location.bytes).end_object();
    if (!f.json)
      std::printf("end of medium: filled %s, continued on %s, read back %s across both, every "
                  "block in sequence:%s\n",
                  esc(f.urls[0]).c_str(), esc(f.urls[1]).c_str(),
                  util::format_bytes(s->location.bytes).c_str(), segs.c_str());
  }
  j.end_object();
  if (f.json) std::printf("%s\n", j.str().c_str());
  return kExitOk;
}

#endif

}  // namespace

void add_tape_commands(CLI::App* tape, TapeFlags& f) {
  tape->require_subcommand(1);
  auto url_help = "drive URL: tape:iscsi://HOST:PORT/IQN/LUN or tape:/dev/sgN";
  auto* status = tape->add_subcommand(
      "status", "show inquiry data, block limits, mode block size, position and label");
  status->add_option("URL", f.urls, url_help)->required()->expected(1);
  status->add_flag("--json", f.json, "print one JSON document");
  auto* label = tape->add_subcommand(
      "label", "write a volume label at the start of the tape (erases the tape)");
  label->add_option("URL", f.urls, url_help)->required()->expected(1);
  label->add_option("--volume", f.volume, "volume id: 1-32 of [A-Za-z0-9._-]")->required();
  label->add_option("--tape-block-size", f.block_size,
                    "data block size recorded in the label; checked against the drive's "
                    "READ BLOCK LIMITS")
      ->default_val("256K");
  label->add_flag("--force", f.force, "relabel a tape that already has a Stripeback label");
  auto* rewind = tape->add_subcommand("rewind", "rewind the tape");
  rewind->add_option("URL", f.urls, url_help)->required()->expected(1);
  auto* eject = tape->add_subcommand("eject", "rewind and unload the tape");
  eject->add_option("URL", f.urls, url_help)->required()->expected(1);
  auto* test = tape->add_subcommand(
      "test",
      "exercise drives (overwrites their tapes): write and read back --size at each of "
      "--block-sizes and print MB/s; with a second URL, fill the first tape to its end, "
      "continue on the second and read both back");
  test->add_option("URL", f.urls, "one or two drive URLs")->required()->expected(1, 2);
  test->add_option("--size", f.size, "bytes to write and read per block size")->default_val("256M");
  test->add_option("--block-sizes", f.block_sizes, "comma-separated block sizes")
      ->default_val("64K,256K,1M");
  test->add_option("--tape-block-size", f.block_size, "block size of the end-of-medium test")
      ->default_val("256K");
  test->add_flag("--json", f.json, "print one JSON document");
}

int run_tape_cmd(const CLI::App& tape, const TapeFlags& f, const std::atomic<bool>& cancel) {
  const auto subs = tape.get_subcommands();
  if (subs.empty()) return kExitUsage;
  const std::string name = subs.front()->get_name();
#if !STRIPEBACK_WITH_TAPE
  (void)cancel;
  return report_tape(engine::left_out("tape", "STRIPEBACK_WITH_TAPE",
                                 f.urls.empty() ? "tape " + name : f.urls.front()));
#else
  if (name == "status") return cmd_status(f);
  if (name == "label") return cmd_label(f);
  if (name == "rewind") return cmd_rewind(f, false);
  if (name == "eject") return cmd_rewind(f, true);
  if (name == "test") return cmd_test(f, cancel);
  return kExitUsage;
#endif
}

}  // namespace stripeback::cli
