//===- Source.h - source files and locations in them -------------*- C++
//-*-===//

#ifndef WHALE_LANG_SOURCE_H
#define WHALE_LANG_SOURCE_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace whale::lang {

/// A range of source text: file index, 1-based line and column of its first
/// character, and its length in characters (for the caret line).
struct Loc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t len = 1;
  bool valid() const { return line != 0; }
};

/// Owns the text of every file the front end reads, so locations stay valid
/// for as long as diagnostics refer to them.
class SourceManager {
public:
  /// Adds a file's text; returns its index.
  uint32_t add(std::string path, std::string text);
  const std::string &path(uint32_t file) const { return files[file].path; }
  std::string_view text(uint32_t file) const { return files[file].text; }
  /// The text of line `line` (1-based) of `file`, without its newline.
  std::string_view lineText(uint32_t file, uint32_t line) const;
  size_t size() const { return files.size(); }

private:
  struct File {
    std::string path;
    std::string text;
    std::vector<size_t> lineStarts;
  };
  std::vector<File> files;
};

} // namespace whale::lang

#endif
