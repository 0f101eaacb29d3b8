#include "dump_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <system_error>

namespace libdump::readdump {

std::shared_ptr<format::Reader> OpenDump(const std::string& path) {
  try {
    return format::Reader::Open(path);
  } catch (const std::system_error& e) {
    throw OpenError("cannot open: " + e.code().message());
  }
}

std::shared_ptr<format::Reader> OpenDumpFd(int fd) {
  // The reader does not own a descriptor it is given: the holder closes it
  // after the reader is gone.
  struct OpenFile {
    int fd = -1;
    std::unique_ptr<format::Reader> reader;
    ~OpenFile() {
      reader.reset();
      if (fd >= 0) ::close(fd);
    }
  };
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
