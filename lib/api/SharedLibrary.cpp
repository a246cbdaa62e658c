//===- SharedLibrary.cpp - libwhale.so
//-------------------------------------===//
//
// libwhale.so is libwhale.a linked whole (lib/CMakeLists.txt); a shared
// library needs a source of its own, and this is it.
//
//===----------------------------------------------------------------------===//
