// A dump where one object has many referrers, for the page-time benchmark
// (pages.sh): N 32-byte nodes in one list from a global root, the first K of
// them also pointing at the hub, node 0.
//
//   make_fanin_dump OUT.dump N K
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

using namespace libdump::format;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_fanin_dump OUT.dump N K\n");
    return 2;
  }
  const uint64_t n = std::stoull(argv[2]), k = std::stoull(argv[3]);
  const int fd = ::open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return std::perror(argv[1]), 1;
  FdSink sink(fd);
  Writer w(sink, {.buffer_size = 4 << 20});
  constexpr uint64_t kNode = 0x100, kBase = 0x7f0000000000;
  auto addr = [&](uint64_t i) { return kBase + 32 * i; };
  w.Header();
  w.Params({0, 8, 0, kBase, addr(n)});
  w.Type({kNode, 32, "fanin::Node", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  w.TypeFields({kNode, {{0, kFieldPtr, 8, "next"}, {8, kFieldPtr, 8, "hub"}, {16, kFieldInt, 8, "key"}}});
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t node[4] = {i + 1 < n ? addr(i + 1) : 0, i >= 1 && i <= k ? addr(0) : 0, i, 0};
    w.Object({addr(i), kNode, kObjRegular, 32}, node);
  }
  w.DataRoot({0x600000, addr(0)});
  w.Eof();
  ::close(fd);
  if (w.error()) return std::perror("write"), 1;
  return 0;
}
