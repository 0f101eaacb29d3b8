// Files that the process writes by itself (heap dumps on a signal or out of
// memory, the preload's profiles at exit) appear whole or not at all: they
// are written as PATH.partial and renamed to PATH when complete, so a reader
// waiting for PATH never sees half a file and a failed write leaves nothing.
//
// The process often writes into a directory others can write to (the
// default patterns are relative to the working directory), so PATH.partial
// is created, never opened: O_CREAT|O_EXCL|O_NOFOLLOW with the caller's mode.
// A file or symbolic link already at that name (planted, or left by a
// process that died while writing) is refused and left alone, so the output
// can neither be redirected into another file nor take an existing file's
// owner and mode.
#pragma once

#include <cstdint>
#include <string>

namespace libdump::output {

// "%p" -> pid, "%t" -> seconds since the epoch, "%n" -> `sequence`,
// "%%" -> "%". *names_pid says whether the pattern had a %p (so the path is
// the process's own).
std::string ExpandPath(const char* pattern, bool* names_pid = nullptr, uint64_t sequence = 1);

class PartialFile {
 public:
  // What Commit does when PATH already exists.
  enum class Existing {
    kReplace,  // replaces it (rename: a symbolic link there is replaced, not followed)
    kKeep,     // keeps it and takes the first free PATH.1, PATH.2, ... PATH.999
  };

  // Creates PATH.partial exclusively (see above); fd() < 0 and error() set
  // (EEXIST if something is already there) if it cannot.
  PartialFile(std::string path, int mode, Existing existing = Existing::kReplace);
  // Removes PATH.partial unless Commit succeeded.
  ~PartialFile();
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  int fd() const { return fd_; }
  int error() const { return error_; }
  // The name the file has once committed (kKeep may have moved it to PATH.N).
  const std::string& path() const { return path_; }
  std::string partial_path() const { return partial_; }

  // Closes and renames to path(). Returns 0 or the errno of what failed,
  // after which PATH.partial is gone and PATH is as it was.
  int Commit();
  // Closes and removes PATH.partial (the writer failed).
  void Abandon();

 private:
  int CommitKeeping();

  std::string path_;
  std::string partial_;
  Existing existing_;
  int fd_ = -1;
  int error_ = 0;
  bool committed_ = false;
};

}  // namespace libdump::output
