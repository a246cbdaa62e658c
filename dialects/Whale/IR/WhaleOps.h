//===- WhaleOps.h - ops of the whale dialect ---------------------*- C++
//-*-===//

#ifndef WHALE_DIALECTS_WHALE_IR_WHALEOPS_H
#define WHALE_DIALECTS_WHALE_IR_WHALEOPS_H

#include "dialects/Whale/IR/WhaleDialect.h"
#include "dialects/Whale/Interfaces/CostOpInterface.h"
#include "dialects/Whale/Interfaces/GradientOpInterface.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/Whale/IR/WhaleOps.h.inc"

#endif
