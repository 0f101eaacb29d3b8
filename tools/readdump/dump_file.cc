#include "dump_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace libdump::readdump {
namespace {

struct OpenFile {
  int fd = -1;
  std::unique_ptr<format::Reader> reader;
  OpenFile() = default;
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  ~OpenFile() {
    reader.reset();
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<format::Reader> OpenDump(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw OpenError(std::string("cannot open: ") + std::strerror(errno));
  return OpenDumpFd(fd);
}

std::shared_ptr<format::Reader> OpenDumpFd(int fd) {
  auto f = std::make_shared<OpenFile>();
  f->fd = fd;
  f->reader = std::make_unique<format::Reader>(f->fd);
  return std::shared_ptr<format::Reader>(f, f->reader.get());
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace libdump::readdump
