// An unlinked-on-destruction temporary file holding given bytes, its
// descriptor open at offset 0: the input of reader tests that read from a
// file rather than a stream.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace libdump::format {

class TempFile {
 public:
  explicit TempFile(const std::string& bytes) {
    fd_ = mkstemp(path_);
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    EXPECT_EQ(lseek(fd_, 0, SEEK_SET), 0);
  }
  ~TempFile() {
    close(fd_);
    unlink(path_);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  int fd() const { return fd_; }

 private:
  char path_[32] = "/tmp/libdump_test_XXXXXX";
  int fd_ = -1;
};

}  // namespace libdump::format
