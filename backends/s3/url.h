// S3 locations: s3://BUCKET[/PREFIX...]. The bucket is the location's authority, the key
// prefix its path; the objects of a backup are keys below that prefix ("PREFIX/NAME"). The
// endpoint, region and credentials are not part of a location: they come from the
// configuration (config.h), so a location names only where data lives.
#pragma once

#include <string>
#include <string_view>

#include "storage/location.h"
#include "stripeback/result.h"

namespace stripeback::s3 {

// The grammar: a bucket name as S3 allows one (3 to 63 characters of lower-case letters,
// digits, '.' and '-', starting and ending with a letter or digit, no "..", not an IPv4
// address), then an optional path whose components are not "." or ".." and hold no
// control character; no query and no fragment. Errors (invalid_argument) name the text
// and what is wrong.
Result<storage::Location> parse_location(std::string_view text);

// The bucket of a location the grammar read, and its object key: the path without its
// leading '/' ("" for the bucket itself).
std::string bucket_of(const storage::Location& at);
std::string key_of(const storage::Location& at);

}  // namespace stripeback::s3
