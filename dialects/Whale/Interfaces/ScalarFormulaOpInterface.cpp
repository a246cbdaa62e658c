//===- ScalarFormulaOpInterface.cpp - an op's value per element -----------===//

#include "dialects/Whale/Interfaces/ScalarFormulaOpInterface.h"

#include "dialects/Whale/Interfaces/ScalarFormulaOpInterface.cpp.inc"

namespace whale {

ScalarBuilder::~ScalarBuilder() = default;

} // namespace whale
