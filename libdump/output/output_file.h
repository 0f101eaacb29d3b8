// Files that the process writes by itself (heap dumps on a signal or out of
// memory, the preload's profiles at exit) appear whole or not at all: they
// are written as PATH.partial and renamed to PATH when complete, so a reader
// waiting for PATH never sees half a file and a failed write leaves nothing.
#pragma once

#include <string>

namespace libdump::output {

// "%p" -> pid, "%t" -> seconds since the epoch, "%%" -> "%". *names_pid
// says whether the pattern had a %p (so the path is the process's own).
std::string ExpandPath(const char* pattern, bool* names_pid = nullptr);

class PartialFile {
 public:
  // Creates PATH.partial (truncating a stale one); fd() < 0 and error() set
  // if it cannot.
  PartialFile(std::string path, int mode);
  // Removes PATH.partial unless Commit succeeded.
  ~PartialFile();
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  int fd() const { return fd_; }
  int error() const { return error_; }
  const std::string& path() const { return path_; }
  std::string partial_path() const { return path_ + ".partial"; }

  // Closes and renames to PATH. Returns 0 or the errno of what failed, after
  // which PATH.partial is gone and PATH is as it was.
  int Commit();
  // Closes and removes PATH.partial (the writer failed).
  void Abandon();

 private:
  std::string path_;
  int fd_ = -1;
  int error_ = 0;
  bool committed_ = false;
};

}  // namespace libdump::output
