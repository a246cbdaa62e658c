//===- Frontend.cpp - from .whl text to a checked Program -----------------===//

#include "lang/Frontend.h"

#include "lang/Parser.h"
#include "lang/Sema.h"
#include "support/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace whale::lang {

std::optional<std::string> readFile(const std::string &path,
                                    std::string *error) {
  std::string text;
  std::string why =
      rt::readRegularFile(path, "the script", rt::kMaxTextInput, text);
  if (!why.empty()) {
    if (error)
      *error = why;
    return std::nullopt;
  }
  return text;
}

bool Frontend::parseFile(const std::string &path) {
  std::string error;
  std::optional<std::string> text = readFile(path, &error);
  if (!text) {
    diags.error(Loc{}, error);
    return false;
  }
  return parseString(*text, path);
}

bool Frontend::parseString(const std::string &source, const std::string &name) {
  size_t before = diags.errorCount();
  uint32_t id = srcs.add(name, source);
  files.push_back(lang::parseFile(srcs.text(id), id, name, diags));
  main = files.back().get();
  modulesByPath[name] = main;
  return diags.errorCount() == before;
}

const FileAST *Frontend::loadModule(const std::string &path, std::string text) {
  auto it = modulesByPath.find(path);
  if (it != modulesByPath.end())
    return it->second;
  uint32_t id = srcs.add(path, std::move(text));
  files.push_back(lang::parseFile(srcs.text(id), id, path, diags));
  modulesByPath[path] = files.back().get();
  return files.back().get();
}

std::vector<std::string> Frontend::filesRead() const {
  std::vector<std::string> paths;
  for (const std::unique_ptr<FileAST> &f : files)
    paths.push_back(f->path);
  return paths;
}

std::optional<Program> Frontend::analyze() {
  if (!main || diags.hasErrors())
    return std::nullopt;
  return runSema(*this);
}

} // namespace whale::lang
