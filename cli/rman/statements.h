// The translators of each statement of a command file (translate.h), given its cursor after
// the first keyword and the channels its RUN block allocated so far. Each returns the
// command line after "stripeback", or an error in script_error's form.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/rman/channels.h"
#include "cli/rman/cursor.h"

namespace stripeback::cli::rman {

using Args = std::vector<std::string>;

// BACKUP, VALIDATE and RESTORE: the statements that move data (data_statements.cc).
Result<Args> translate_backup(Cursor& c, const std::vector<Channel>& channels, Location at);
Result<Args> translate_validate(Cursor& c, const std::vector<Channel>& channels, Location at);
Result<Args> translate_restore(Cursor& c, const std::vector<Channel>& channels, Location at);

// The catalog's statements (catalog_statements.cc): CROSSCHECK, DELETE, LIST, REPORT,
// CONFIGURE, SHOW.
Result<Args> translate_crosscheck(Cursor& c);
Result<Args> translate_delete(Cursor& c);
Result<Args> translate_list(Cursor& c);
Result<Args> translate_report(Cursor& c);
Result<Args> translate_configure(Cursor& c);
Result<Args> translate_show(Cursor& c);

// The error for a statement or object Stripeback does not take, when the next token is one
// it knows another way for ("BACKUP DATABASE: use ..."); `context` is what came before
// ("BACKUP"). Null when it knows none.
std::optional<Error> not_supported(const Cursor& c, std::string_view context);

}  // namespace stripeback::cli::rman
