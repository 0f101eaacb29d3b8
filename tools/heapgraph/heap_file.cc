#include "heap_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace libdump::heapgraph {

InputFile::InputFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) throw LoadError(std::string("cannot open: ") + std::strerror(errno));
}

InputFile::~InputFile() { ::close(fd_); }

size_t InputFile::ReadHead(uint8_t* buf, size_t n) const {
  const ssize_t got = ::pread(fd_, buf, n, 0);
  if (got < 0) throw LoadError(std::string("cannot read: ") + std::strerror(errno));
  return static_cast<size_t>(got);
}

}  // namespace libdump::heapgraph
