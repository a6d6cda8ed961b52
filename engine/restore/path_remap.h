// restore --remap OLD=NEW: files whose original path is OLD or below it are restored at NEW
// (and below it) under the target instead of at OLD. Paths are the places a restore would
// use without remaps: the original absolute path, or for a file backed up from a server
// "/host/path" (target_paths.h). Pure functions: the restore phases check the remaps and the
// places they give before anything is written.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::engine {

struct PathRemap {
  std::string from;  // OLD: absolute, normal ("/" or components that pass safe_component)
  std::string to;    // NEW: the same rules
  // How messages name it: "'/data=/srv/data'".
  std::string shown() const { return "'" + from + "=" + to + "'"; }
};

// Parses "OLD=NEW" (split at the first '='). Errors (invalid_argument, naming the option
// key "remap" and the text): no '=', OLD or NEW relative, with an empty, "." or ".."
// component, or a NUL byte. A trailing '/' is dropped ("/data/" is "/data").
Result<PathRemap> parse_remap(std::string_view text);

// Checks remaps given together: the same OLD twice, or two OLDs onto one NEW, is refused
// naming both.
Result<void> check_remaps(const std::vector<PathRemap>& remaps);

// The remap whose OLD is the longest prefix of `place` in whole components ("/data/a" is a
// prefix of "/data/a/f", not of "/data/ab"), or null.
const PathRemap* remap_for(const std::vector<PathRemap>& remaps, const std::string& place);

// Where `place` goes with the remaps: NEW followed by what follows OLD; unchanged when no
// remap matches.
std::string remap_place(const std::vector<PathRemap>& remaps, const std::string& place);

// The components below the target of the file backed up as `original`, remapped: as
// safe_components() gives them, and refused as it refuses an unsafe path. A place remapped
// onto the target itself (NEW "/") has no components: an empty vector.
Result<std::vector<std::string>> target_components(const std::string& original,
                                                   const std::vector<PathRemap>& remaps);

// One file of a restore as the collision check sees it.
struct Landing {
  std::string original;
  bool directory = false;
};

// Refuses (invalid_argument) remaps under which two of `files` land on one place, a file
// lands where another needs a directory, or a file lands on the target itself; the message
// names the remap(s) and both files. Directories may share a place.
Result<void> check_landings(const std::vector<Landing>& files,
                            const std::vector<PathRemap>& remaps);

}  // namespace stripeback::engine
