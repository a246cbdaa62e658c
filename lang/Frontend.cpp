//===- Frontend.cpp - from .whl text to a checked Program -----------------===//

#include "lang/Frontend.h"

#include "lang/Parser.h"
#include "lang/Sema.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace whale::lang {

std::optional<std::string> readFile(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Frontend::parseFile(const std::string &path) {
  std::optional<std::string> text = readFile(path);
  if (!text) {
    diags.error(Loc{}, "cannot read '" + path + "': " +
                           (errno ? std::strerror(errno) : "not a file"));
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

std::optional<Program> Frontend::analyze() {
  if (!main || diags.hasErrors())
    return std::nullopt;
  return runSema(*this);
}

} // namespace whale::lang
