// The one reader of /proc/self/maps. It reads with raw system calls through
// a buffer on the stack and hands out each line parsed: no allocation and no
// lock, so it runs before malloc is ready (the runtime's first allocation),
// while other threads are stopped (a heap dump) and in the profilers alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace libdump::proc {

// One line: "start-end perms offset dev inode   path".
struct MapsLine {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  // What follows the inode, trailing blanks removed: a file's path (with the
  // kernel's " (deleted)" if so), a tag such as "[stack]" or "[heap]", or
  // empty for an anonymous mapping. Points into the reader's buffer: valid
  // during the visit only.
  std::string_view path;
};

// Parses one line (without its newline); false if it is not a maps line.
bool ParseMapsLine(std::string_view line, MapsLine* out);

// The longest line the reader takes: a path of PATH_MAX bytes and the rest.
constexpr size_t kMapsLineMax = 8192;

// Calls visit(line, arg) on each line of the maps file in its order (by
// address); lines that do not parse are skipped. Returns false if the file
// cannot be read, a line is longer than kMapsLineMax, or visit returned false
// (which stops the reading).
using MapsVisitor = bool (*)(const MapsLine& line, void* arg);
bool ReadMaps(MapsVisitor visit, void* arg, const char* path = "/proc/self/maps");

// The same with any callable `bool(const MapsLine&)`.
template <class F>
bool ForEachMapsLine(F&& visit, const char* path = "/proc/self/maps") {
  using Fn = std::remove_reference_t<F>;
  return ReadMaps([](const MapsLine& line, void* f) -> bool { return (*static_cast<Fn*>(f))(line); },
                  const_cast<void*>(static_cast<const void*>(&visit)), path);
}

}  // namespace libdump::proc
