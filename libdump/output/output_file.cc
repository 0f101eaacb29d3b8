#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <utility>

namespace libdump::output {

std::string ExpandPath(const char* pattern, bool* names_pid) {
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
    else out += *p;
  }
  return out;
}

PartialFile::PartialFile(std::string path, int mode) : path_(std::move(path)) {
  fd_ = open(partial_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd_ < 0) error_ = errno;
}

PartialFile::~PartialFile() {
  if (!committed_) Abandon();
}

int PartialFile::Commit() {
  if (fd_ < 0) return error_;
  int err = close(fd_) == 0 ? 0 : errno;
  fd_ = -1;
  if (err == 0 && rename(partial_path().c_str(), path_.c_str()) != 0) err = errno;
  if (err != 0) unlink(partial_path().c_str());
  committed_ = true;
  error_ = err;
  return err;
}

void PartialFile::Abandon() {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  unlink(partial_path().c_str());
}

}  // namespace libdump::output
