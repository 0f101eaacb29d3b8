// Where a tool reads a dump from: a path, or `-` for standard input (a pipe
// works: `zstd -dc x.zst | readdump -`). A tool that reads its input twice
// gets a rereadable copy of anything that is not a regular file, spooled to
// an unnamed temporary file that vanishes with the process.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace libdump::tools {

// The input cannot be read; what() is the reason without the name
// ("cannot open: No such file or directory", "is a directory").
class InputError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class InputFile {
 public:
  // Opens `arg` ("-": standard input). Throws InputError for a missing or
  // unreadable file and for a directory (exit 1 in every tool).
  explicit InputFile(const std::string& arg);
  // A pass that reads a file it was given by path (a loader, a page that
  // rereads an object) opens just that path: no `-`, and a directory fails on
  // the first read. Throws InputError "cannot open: REASON".
  struct PathOnly {};
  InputFile(const std::string& path, PathOnly);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // For messages: the path as given, "<stdin>" for `-`.
  const std::string& name() const { return name_; }
  // The input's stat as opened (standard input's, not the spooled copy's).
  const struct stat& stat() const { return st_; }
  // For a tool that reads the input more than once: copies anything but a
  // regular file (standard input, a pipe, a device) to an unnamed temporary
  // file. Throws InputError.
  void MakeRereadable();
  // After MakeRereadable: a path that each pass opens anew.
  const std::string& path() const { return path_; }
  // Without MakeRereadable: the open descriptor, handed over once.
  int TakeFd();
  // The open descriptor, still owned (closed with the InputFile).
  int fd() const { return fd_; }
  // Up to n bytes from offset 0 (what tells the formats apart); throws
  // InputError "cannot read: REASON".
  size_t ReadHead(uint8_t* buf, size_t n) const;

 private:
  void Spool();

  bool is_stdin_ = false;
  std::string name_;
  std::string path_;
  struct stat st_ {};
  int fd_ = -1;
};

}  // namespace libdump::tools
