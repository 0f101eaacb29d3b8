#include "platform/output/output_file.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <ctime>
#include <utility>

#include "platform/output/exclusive_file.h"

namespace libdump::output {

std::string ExpandPath(const char* pattern, bool* names_pid, uint64_t sequence) {
  std::string out;
  if (names_pid != nullptr) *names_pid = false;
  for (const char* p = pattern; *p; ++p) {
    if (*p != '%' || p[1] == '\0') {
      out += *p;
      continue;
    }
    ++p;
    if (*p == 'p') {
      out += std::to_string(getpid());
      if (names_pid != nullptr) *names_pid = true;
    }
    else if (*p == 't') out += std::to_string(static_cast<long long>(std::time(nullptr)));
    else if (*p == 'n') out += std::to_string(sequence);
    else out += *p;
  }
  return out;
}

PartialFile::PartialFile(std::string path, int mode, Existing existing)
    : path_(std::move(path)), partial_(path_ + ".partial"), existing_(existing) {
  // Never an existing file (whose owner and mode would stay, and which may
  // be another's), never through a link.
  fd_ = CreateExclusive(partial_.c_str(), mode);
  if (fd_ < 0) error_ = errno;
}

PartialFile::~PartialFile() {
  if (!committed_) Abandon();
}

int PartialFile::CommitKeeping() {
  const std::string base = path_;
  for (int k = 0; k < 1000; ++k) {
    const std::string name = k == 0 ? base : base + "." + std::to_string(k);
    const int err = RenameNoReplace(partial_.c_str(), name.c_str());
    if (err == 0) {
      path_ = name;
      return 0;
    }
    if (err != EEXIST) return err;
  }
  return EEXIST;
}

int PartialFile::Commit() {
  if (fd_ < 0) return error_;
  int err = close(fd_) == 0 ? 0 : errno;
  fd_ = -1;
  if (err == 0) {
    if (existing_ == Existing::kKeep) err = CommitKeeping();
    else if (rename(partial_.c_str(), path_.c_str()) != 0) err = errno;
  }
  if (err != 0) unlink(partial_.c_str());
  committed_ = true;
  error_ = err;
  return err;
}

void PartialFile::Abandon() {
  // Only a file this object created is removed: fd_ < 0 means it never did.
  if (fd_ < 0) return;
  CloseAndRemove(fd_, partial_.c_str());
  fd_ = -1;
}

}  // namespace libdump::output
