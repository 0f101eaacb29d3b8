// A large dump for the conversion benchmark: N objects of ~100 bytes on
// average, in the mix a C++ heap has — typed structs with named fields,
// char buffers, untyped blocks holding pointers — plus a thread, roots.
//
//   make_bench_dump OUT.dump --objects N
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

using namespace libdump::format;

int main(int argc, char** argv) {
  if (argc != 4 || std::strcmp(argv[2], "--objects") != 0) {
    std::fprintf(stderr, "usage: make_bench_dump OUT.dump --objects N\n");
    return 2;
  }
  const uint64_t n = std::stoull(argv[3]);
  const int fd = ::open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return std::perror(argv[1]), 1;
  FdSink sink(fd);
  WriterOptions wo;
  wo.buffer_size = 4 << 20;
  Writer w(sink, wo);
  constexpr uint64_t kNode = 0x100, kChars = 0x200, kBase = 0x7f0000000000;
  // Group of four: two 48-byte nodes, a 200-byte buffer, a 104-byte untyped block.
  constexpr uint64_t kSizes[4] = {48, 48, 200, 104};
  constexpr uint64_t kGroup = 48 + 48 + 208 + 112;  // 16-byte aligned slots
  const auto addr = [&](uint64_t i) {
    static constexpr uint64_t kOffsets[4] = {0, 48, 96, 304};
    return kBase + (i / 4) * kGroup + kOffsets[i % 4];
  };
  w.Header();
  w.Params({0, 8, 0, kBase, addr(n) + kGroup});
  w.Type({kNode, 48, "bench::Node", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  w.TypeFields({kNode,
                {{0, kFieldPtr, 8, "next"},
                 {8, kFieldPtr, 8, "data"},
                 {16, kFieldInt, 8, "key"},
                 {24, kFieldFloat, 8, "score"},
                 {32, kFieldInt, 4, "a"},
                 {36, kFieldInt, 4, "b"},
                 {40, kFieldUint, 8, "flags"}}});
  w.Type({kChars, 200, "char", false, {}});
  w.TypeInfo({kChars, kTypeArray, 0, 0, 1});
  std::vector<uint64_t> buf(26);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t a = addr(i);
    const uint64_t kind = i % 4;
    if (kind < 2) {
      buf[0] = i + 4 < n ? addr(i + 4) : 0;
      buf[1] = addr(i - kind + 2);
      buf[2] = i;
      buf[3] = 0x3ff0000000000000;
      buf[4] = i * 7;
      buf[5] = 0xFFFF;
      w.Object({a, kNode, kObjRegular, 48}, buf.data());
    } else if (kind == 2) {
      std::memset(buf.data(), 'a' + i % 26, 200);
      w.Object({a, kChars, kObjArray, 200}, buf.data());
    } else {
      for (int k = 0; k < 13; ++k) buf[k] = k % 3 == 0 ? addr(i - 3) + 8 * k % 48 : i * 1000 + k;
      w.Object({a, 0, kObjRegular, kSizes[3]}, buf.data());
    }
  }
  w.Goroutine({0x1000, 0x7ffd0000, 1, 0, kStatusRunning, false, false, 0, ""});
  w.ThreadInfo({0x1000, 1, "main"});
  w.Frame({0x7ffd0000, 0, 0x400000, 0x400010, "main"});
  w.StackRoot({0x7ffd0008, addr(0), 0x7ffd0000});
  w.DataRoot({0x600000, addr(1)});
  w.OtherRoot("bench: head", addr(0));
  w.Eof();
  ::close(fd);
  if (w.error()) return std::perror("write"), 1;
  return 0;
}
