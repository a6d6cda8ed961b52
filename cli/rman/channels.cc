#include "cli/rman/channels.h"

#include "util/units.h"

namespace stripeback::cli::rman {
namespace {

bool same_size(const std::string& a, const std::string& b) {
  auto x = util::parse_size(a);
  auto y = util::parse_size(b);
  return x.has_value() && y.has_value() && *x == *y;
}

// The one value a setting has on every channel (empty when on none), or an error naming
// two channels that differ. Sizes are equal when they are the same number of bytes (1K and
// 1024); other values when they are the same text.
Result<std::string> same_on_all(const std::vector<Channel>& channels, std::string Channel::*field,
                                const char* keyword, const char* why, Location at) {
  const Channel& first = channels.front();
  for (const Channel& ch : channels) {
    const std::string& a = first.*field;
    const std::string& b = ch.*field;
    const bool same = a == b || (field != &Channel::place && same_size(a, b));
    if (!same)
      return script_error(
          at, std::string(keyword) + " differs between channel " + first.name + " (" +
                  (a.empty() ? "none" : a) + ") and channel " + ch.name + " (" +
                  (b.empty() ? "none" : b) + "): " + why);
  }
  return first.*field;
}

Result<void> read_option(Cursor& c, Channel& ch) {
  const Token& t = c.peek();
  if (c.accept("FORMAT")) {
    const Location at = c.peek().at;
    SB_ASSIGN(std::string format, c.quoted("FORMAT"));
    if (ch.device == Device::sbt) {
      if (!format.starts_with("tape:"))
        return script_error(at, "an SBT channel's FORMAT names its tape drive: "
                                "'tape:iscsi://HOST:PORT/IQN/LUN' or 'tape:/dev/sgN' (piece "
                                "names are Stripeback's own)");
      ch.place = format;
    } else {
      SB_ASSIGN(ch.place, format_directory(format, at));
    }
  } else if (c.accept("RATE")) {
    SB_ASSIGN(ch.rate, c.size("RATE"));
  } else if (c.accept("MAXPIECESIZE")) {
    SB_ASSIGN(ch.max_piece_size, c.size("MAXPIECESIZE"));
  } else if (c.accept("MAXOPENFILES")) {
    SB_ASSIGN(ch.max_open_files, c.number("MAXOPENFILES", 256));
  } else if (t.is("PARMS") || t.is("SEND") || t.is("CONNECT")) {
    return script_error(t.at, t.text + " is not supported: Stripeback has no media manager "
                              "library; an SBT channel names its drive with FORMAT "
                              "'tape:iscsi://...' or 'tape:/dev/sgN' (docs/tape.md)");
  } else {
    return c.unexpected("ALLOCATE CHANNEL");
  }
  return ok();
}

}  // namespace

Result<std::string> format_directory(const std::string& format, Location at) {
  const size_t slash = format.rfind('/');
  if (slash == std::string::npos)
    return script_error(at, "FORMAT '" + format + "' names no directory: give the directory "
                            "the pieces go to, e.g. '/backup/%U' (piece names are "
                            "Stripeback's own)");
  std::string dir = slash == 0 ? "/" : format.substr(0, slash);
  if (dir.find('%') != std::string::npos)
    return script_error(at, "FORMAT '" + format + "' has a substitution variable in its "
                            "directory: only the file name may have them (Stripeback names "
                            "pieces itself), the directory must be fixed");
  return dir;
}

Result<Channel> read_allocate(Cursor& c) {
  SB_TRY(c.expect("CHANNEL", "after ALLOCATE"));
  Channel ch;
  ch.at = c.peek().at;
  if (c.peek().kind != TokenKind::word)
    return script_error(c.peek().at, "ALLOCATE CHANNEL takes a channel name, found " +
                                         describe(c.peek()));
  ch.name = c.take().text;
  SB_TRY(c.expect("DEVICE", "after the channel name"));
  SB_TRY(c.expect("TYPE", "after DEVICE"));
  if (c.accept("SBT") || c.accept("SBT_TAPE")) {
    ch.device = Device::sbt;
  } else if (!c.accept("DISK")) {
    return script_error(c.peek().at, "DEVICE TYPE is DISK or SBT, not " + describe(c.peek()));
  }
  while (!c.at_end()) SB_TRY(read_option(c, ch));
  if (ch.device == Device::sbt && ch.place.empty())
    return script_error(ch.at, "SBT channel " + ch.name + " names no tape drive: add FORMAT "
                               "'tape:iscsi://HOST:PORT/IQN/LUN' or 'tape:/dev/sgN' "
                               "(Stripeback runs one channel per drive)");
  return ch;
}

Result<std::vector<std::string>> channel_flags(const std::vector<Channel>& channels,
                                               ChannelUse use, Location at,
                                               bool own_destination) {
  std::vector<std::string> out;
  if (channels.empty()) return out;
  for (const Channel& ch : channels)
    if (ch.device != channels.front().device)
      return script_error(at, "channel " + channels.front().name + " is " +
                                  (channels.front().device == Device::sbt ? "SBT" : "DISK") +
                                  " and channel " + ch.name + " is not: a Stripeback job "
                                  "writes to directories or to tape drives, not both");
  const bool tape = channels.front().device == Device::sbt;
  const char* alike = "Stripeback's channels share one setting (allocate them alike, or run "
                      "the backups in separate RUN blocks)";
  if (use == ChannelUse::restore || use == ChannelUse::validate) {
    if (auto rate = same_on_all(channels, &Channel::rate, "RATE", alike, at); !rate)
      return rate.error();
    else if (!rate->empty())
      return script_error(at, "RATE of channel " + channels.front().name + " applies to "
                              "backups only: Stripeback's restore and validate have no rate "
                              "limit");
    if (use == ChannelUse::restore && tape) {
      for (const Channel& ch : channels) {
        out.push_back("--tape-drive");
        out.push_back(ch.place);
      }
      return out;
    }
    out.push_back("--channels");
    out.push_back(std::to_string(channels.size()));
    return out;
  }
  if (!tape || use == ChannelUse::source_validation) {
    out.push_back("--channels");
    out.push_back(std::to_string(channels.size()));
  }
  if (use == ChannelUse::backup) {
    if (tape) {
      if (own_destination)
        return script_error(at, "FORMAT of BACKUP names a directory, and the channels are "
                                "SBT: their FORMAT names the tape drives");
      for (size_t i = 0; i < channels.size(); ++i) {
        for (size_t j = 0; j < i; ++j)
          if (channels[j].place == channels[i].place)
            return script_error(at, "channels " + channels[j].name + " and " +
                                        channels[i].name + " name the same tape drive (" +
                                        channels[i].place + "): Stripeback runs one channel "
                                        "per drive");
        out.push_back("--to");
        out.push_back(channels[i].place);
      }
    } else if (!own_destination) {
      SB_ASSIGN(std::string dir, same_on_all(channels, &Channel::place, "FORMAT's directory",
                                             "Stripeback's channels write into one "
                                             "destination directory",
                                             at));
      if (!dir.empty()) {
        out.push_back("--to");
        out.push_back(dir);
      }
    }
    SB_ASSIGN(std::string piece, same_on_all(channels, &Channel::max_piece_size,
                                             "MAXPIECESIZE", alike, at));
    if (!piece.empty()) {
      out.push_back("--max-piece-size");
      out.push_back(piece);
    }
  }
  SB_ASSIGN(std::string rate, same_on_all(channels, &Channel::rate, "RATE", alike, at));
  if (!rate.empty()) {
    out.push_back("--rate");
    out.push_back(rate);
  }
  SB_ASSIGN(std::string open, same_on_all(channels, &Channel::max_open_files, "MAXOPENFILES",
                                          alike, at));
  if (!open.empty()) {
    out.push_back("--max-open-files");
    out.push_back(open);
  }
  return out;
}

}  // namespace stripeback::cli::rman
