//===- GradientOpInterface.h - how an op differentiates ----------*- C++
//-*-===//

#ifndef WHALE_DIALECTS_WHALE_INTERFACES_GRADIENTOPINTERFACE_H
#define WHALE_DIALECTS_WHALE_INTERFACES_GRADIENTOPINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/Whale/Interfaces/GradientOpInterface.h.inc"

#endif
