//===- Parser.h - recursive-descent parser for .whl --------------*- C++
//-*-===//

#ifndef WHALE_LANG_PARSER_H
#define WHALE_LANG_PARSER_H

#include "lang/AST.h"
#include "lang/Diagnostics.h"

#include <memory>
#include <string_view>

namespace whale::lang {

/// Parses one file. Always returns a tree: after an error the parser skips to
/// the end of the statement (or declaration) and goes on, so one run reports
/// several errors. The tree is complete only when `diags` has no new errors.
std::unique_ptr<FileAST> parseFile(std::string_view text, uint32_t file,
                                   std::string path, DiagnosticEngine &diags);

} // namespace whale::lang

#endif
