//===- WhaleDialect.cpp - the whale dialect -------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace whale;

#include "dialects/Whale/IR/WhaleDialect.cpp.inc"
#include "dialects/Whale/IR/WhaleEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Whale/IR/WhaleAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/Whale/IR/WhaleTypes.cpp.inc"

void WhaleDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Whale/IR/WhaleOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/Whale/IR/WhaleAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/Whale/IR/WhaleTypes.cpp.inc"
      >();
}
