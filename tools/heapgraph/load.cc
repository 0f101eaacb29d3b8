#include "load.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "analyze.h"
#include "libdump/format/hprof_reader.h"

namespace libdump::heapgraph {

void Load(const std::string& path, HeapGraph& g, const Progress& progress) {
  uint8_t head[32];
  ssize_t n;
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw LoadError(std::string("cannot open: ") + std::strerror(errno));
    n = ::pread(fd, head, sizeof head, 0);
    ::close(fd);
    if (n < 0) throw LoadError(std::string("cannot read: ") + std::strerror(errno));
  }
  if (format::hprof::LooksLikeHprof({head, static_cast<size_t>(n)})) {
    LoadHprof(path, g, progress);
  } else {
    LoadDump(path, g, progress);
  }
}

void Open(const std::string& path, HeapGraph& g, const Progress& progress) {
  Load(path, g, progress);
  Analyze(g, [&](const std::string& step) {
    if (progress) progress(step.c_str(), 0);
  });
}

}  // namespace libdump::heapgraph
