//===- WhaleDialect.h - the whale dialect ------------------------*- C++
//-*-===//

#ifndef WHALE_DIALECTS_WHALE_IR_WHALEDIALECT_H
#define WHALE_DIALECTS_WHALE_IR_WHALEDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Whale/IR/ScheduleStep.h"

#include "dialects/Whale/IR/WhaleDialect.h.inc"
#include "dialects/Whale/IR/WhaleEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Whale/IR/WhaleAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Whale/IR/WhaleTypes.h.inc"

#endif
