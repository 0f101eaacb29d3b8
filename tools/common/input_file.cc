#include "input_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace libdump::tools {
namespace {

[[noreturn]] void FailErrno(const std::string& what) { throw InputError(what + ": " + std::strerror(errno)); }

std::string TempDir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

// An unnamed file in TMPDIR: O_TMPFILE, else a named one unlinked at once.
int OpenSpool() {
  const std::string dir = TempDir();
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string name = dir + "/libdump-input-XXXXXX";
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) FailErrno("cannot create a temporary copy in " + dir);
  ::unlink(name.c_str());
  return fd;
}

}  // namespace

InputFile::InputFile(const std::string& arg) {
  if (arg == "-") {
    is_stdin_ = true;
    name_ = "<stdin>";
    fd_ = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd_ < 0) FailErrno("cannot read standard input");
  } else {
    name_ = arg;
    fd_ = ::open(arg.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) FailErrno("cannot open");
  }
  if (::fstat(fd_, &st_) != 0) FailErrno("cannot open");
  if (S_ISDIR(st_.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw InputError("is a directory");
  }
}

InputFile::InputFile(const std::string& path, PathOnly) : name_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) FailErrno("cannot open");
}

size_t InputFile::ReadHead(uint8_t* buf, size_t n) const {
  const ssize_t got = ::pread(fd_, buf, n, 0);
  if (got < 0) FailErrno("cannot read");
  return static_cast<size_t>(got);
}

void InputFile::MakeRereadable() {
  if (!path_.empty()) return;
  if (S_ISREG(st_.st_mode) && !is_stdin_) {
    path_ = name_;
  } else {
    Spool();
  }
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

int InputFile::TakeFd() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

// Copies the stream to an unnamed file and reads that instead. Each pass opens
// it through /proc/self/fd, which gives it an offset of its own.
void InputFile::Spool() {
  const int spool = OpenSpool();
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(spool);
      errno = e;
      FailErrno("cannot read");
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(spool, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int e = w < 0 ? errno : ENOSPC;
        ::close(spool);
        errno = e;
        FailErrno("cannot copy to a temporary file");
      }
      done += w;
    }
  }
  ::close(fd_);
  fd_ = spool;
  if (::lseek(fd_, 0, SEEK_SET) != 0) FailErrno("cannot read the temporary copy");
  path_ = "/proc/self/fd/" + std::to_string(fd_);
}

}  // namespace libdump::tools
