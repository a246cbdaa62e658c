//===- Sema.h - checks and elaborates a parsed program -----------*- C++
//-*-===//

#ifndef WHALE_LANG_SEMA_H
#define WHALE_LANG_SEMA_H

#include "lang/Program.h"

#include <optional>

namespace whale::lang {

class Frontend;

/// Loads the main file's imports, checks names, arity, types, shapes,
/// TaskGraph rules, config and train blocks, and elaborates every model.
/// Errors go to the frontend's diagnostics; a Program only when none.
std::optional<Program> runSema(Frontend &frontend);

} // namespace whale::lang

#endif
