//===- PrecompiledHeaders.cpp - the unit that WhaleMlirPch's PCH needs ----===//
//
// CMake builds a target's precompiled header beside its sources; this target
// has no code of its own, only the header the MLIR parts of Whale reuse
// (dialects/Whale/IR/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//
