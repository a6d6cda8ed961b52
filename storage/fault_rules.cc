// Fault rules: their builders, names and the text form parse_fault_rules() reads
// (storage/fault_storage.h).
#include "storage/fault_storage.h"

#include <charconv>
#include <string>

namespace stripeback::storage {

const char* fault_op_name(FaultOp op) {
  switch (op) {
    case FaultOp::open:
      return "open";
    case FaultOp::write:
      return "write";
    case FaultOp::sync:
      return "sync";
    case FaultOp::rename:
      return "rename";
    case FaultOp::remove:
      return "remove";
    case FaultOp::read:
      return "read";
    case FaultOp::set_attrs:
      return "set_attrs";
    case FaultOp::truncate:
      return "truncate";
    case FaultOp::list:
      return "list";
    case FaultOp::stat:
      return "stat";
    case FaultOp::preallocate:
      return "preallocate";
    case FaultOp::make_dirs:
      return "make_dirs";
    case FaultOp::close:
      return "close";
  }
  return "?";
}

FaultRule FaultRule::fail(FaultOp op, int err, uint64_t nth) {
  FaultRule r;
  r.op = op;
  r.nth = nth;
  r.effect = Effect::fail;
  r.err = err;
  return r;
}

FaultRule FaultRule::short_write(uint32_t bytes, uint64_t nth) {
  FaultRule r;
  r.op = FaultOp::write;
  r.nth = nth;
  r.effect = Effect::short_io;
  r.short_len = bytes;
  return r;
}

FaultRule FaultRule::short_read(uint32_t bytes, uint64_t nth) {
  FaultRule r = short_write(bytes, nth);
  r.op = FaultOp::read;
  return r;
}

FaultRule FaultRule::delayed(FaultOp op, std::chrono::milliseconds d, uint64_t nth) {
  FaultRule r;
  r.op = op;
  r.nth = nth;
  r.effect = Effect::delay;
  r.delay = d;
  return r;
}

FaultRule FaultRule::onward() const {
  FaultRule r = *this;
  r.from_nth_on = true;
  return r;
}

FaultRule FaultRule::only(std::string substring) const {
  FaultRule r = *this;
  r.match = std::move(substring);
  return r;
}

Result<std::vector<FaultRule>> parse_fault_rules(std::string_view spec) {
  std::vector<FaultRule> out;
  auto bad = [&](std::string_view rule, const std::string& why) {
    return fail(Errc::invalid_argument,
                "fault rule '" + std::string(rule) + "': " + why +
                    " (expected OP:N[+]:EFFECT[:MATCH], e.g. write:3:ENOSPC:.sbp)");
  };
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find(';', pos);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view rule = spec.substr(pos, end - pos);
    pos = end + 1;
    if (rule.empty()) continue;
    std::vector<std::string> f;
    size_t p = 0;
    for (int i = 0; i < 3; ++i) {
      size_t c = rule.find(':', p);
      if (c == std::string_view::npos) {
        f.emplace_back(rule.substr(p));
        p = rule.size() + 1;
        break;
      }
      f.emplace_back(rule.substr(p, c - p));
      p = c + 1;
    }
    if (p <= rule.size()) f.emplace_back(rule.substr(p));  // the match may hold ':'
    if (f.size() < 3) return bad(rule, "too few fields");
    FaultRule r;
    bool known = false;
    for (size_t k = 0; k < kFaultOpCount; ++k)
      if (f[0] == fault_op_name(static_cast<FaultOp>(k))) {
        r.op = static_cast<FaultOp>(k);
        known = true;
      }
    if (!known) return bad(rule, "unknown operation '" + f[0] + "'");
    std::string n = f[1];
    if (!n.empty() && n.back() == '+') {
      r.from_nth_on = true;
      n.pop_back();
    }
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || std::stoull(n) == 0)
      return bad(rule, "occurrence '" + f[1] + "' is not a number from 1");
    r.nth = std::stoull(n);
    const std::string& e = f[2];
    static const std::pair<const char*, int> kErrnos[] = {{"EIO", EIO},       {"ENOSPC", ENOSPC},
                                                          {"EDQUOT", EDQUOT}, {"EROFS", EROFS},
                                                          {"EACCES", EACCES}, {"EPERM", EPERM}};
    bool effect = false;
    for (const auto& [name, err] : kErrnos)
      if (e == name) {
        r.effect = FaultRule::Effect::fail;
        r.err = err;
        effect = true;
      }
    auto number_after = [&](const char* prefix) -> std::optional<uint64_t> {
      std::string pre = prefix;
      if (e.rfind(pre, 0) != 0) return std::nullopt;
      std::string v = e.substr(pre.size());
      if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
      return std::stoull(v);
    };
    if (auto b = number_after("short="); b && (r.op == FaultOp::write || r.op == FaultOp::read)) {
      r.effect = FaultRule::Effect::short_io;
      r.short_len = static_cast<uint32_t>(*b);
      effect = true;
    } else if (auto ms = number_after("delay=")) {
      r.effect = FaultRule::Effect::delay;
      r.delay = std::chrono::milliseconds(*ms);
      effect = true;
    }
    if (!effect) return bad(rule, "unknown effect '" + e + "'");
    if (f.size() > 3) r.match = f[3];
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace stripeback::storage
