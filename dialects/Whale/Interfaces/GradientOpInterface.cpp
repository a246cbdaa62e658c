//===- GradientOpInterface.cpp - how an op differentiates ----------------===//

#include "dialects/Whale/Interfaces/GradientOpInterface.h"

#include "dialects/Whale/Interfaces/GradientOpInterface.cpp.inc"
