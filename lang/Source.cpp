//===- Source.cpp - source files and locations in them --------------------===//

#include "lang/Source.h"

namespace whale::lang {

uint32_t SourceManager::add(std::string path, std::string text) {
  File f{std::move(path), std::move(text), {0}};
  for (size_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n')
      f.lineStarts.push_back(i + 1);
  files.push_back(std::move(f));
  return static_cast<uint32_t>(files.size() - 1);
}

std::string_view SourceManager::lineText(uint32_t file, uint32_t line) const {
  if (file >= files.size())
    return {};
  const File &f = files[file];
  if (line == 0 || line > f.lineStarts.size())
    return {};
  size_t begin = f.lineStarts[line - 1];
  size_t end = f.text.find('\n', begin);
  if (end == std::string::npos)
    end = f.text.size();
  std::string_view text(f.text);
  std::string_view out = text.substr(begin, end - begin);
  if (!out.empty() && out.back() == '\r')
    out.remove_suffix(1);
  return out;
}

} // namespace whale::lang
