// Rewrites any dump the reader reads (a Go runtime's included) as a libdump
// dump of the same records, so that bench/godump/run.sh compares the Go
// dialect against libdump's format on exactly the same content: the same
// objects, payload bytes, types, roots, goroutines and frames.
//
//   go_to_libdump IN OUT.dump
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

using namespace libdump::format;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: go_to_libdump IN OUT.dump\n");
    return 2;
  }
  try {
    auto reader = Reader::Open(argv[1]);
    const int fd = ::open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return std::perror(argv[2]), 1;
    FdSink sink(fd);
    Writer w(sink);
    w.Header();
    Record r;
    while (reader->Next(r)) {
      if (r.kind == Kind::kEof) break;
      w.Write(r, r.kind == Kind::kObject ? reader->Payload().data() : nullptr);
    }
    w.Eof();
    w.Flush();
    ::close(fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
