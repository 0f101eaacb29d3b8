// Writes testdata/go-1.3.heapdump and testdata/go-1.4.heapdump: the dialects
// no installable Go writes, built by libdump's own encoder to the layouts of
// docs/GODUMP.md. One small heap of known content (testdata/README.md walks
// through it byte by byte); the expected outputs beside them are checked by
// hand, never regenerated. usage: make_go_fixtures DIR
#include <cstdio>
#include <fstream>
#include <string>

#include "go_dump.h"
#include "testing/go_dump_encoder_testutil.h"

namespace {

using libdump::format::Dialect;
using libdump::format::testing::GoEncoder;
namespace f = libdump::format;

std::string Heap(Dialect d) {
  const bool go13 = d == Dialect::kGo13;
  GoEncoder e(d);
  e.Params(0x10000, 0x20000);
  e.Type(0x400100, 24, "main.node", true, {{f::kFieldPtr, 0}, {f::kFieldPtr, 16}});
  e.Itab(0x400300, 0x400100, true);
  // node {next 0x10020, val 7, prev nil}; a box {9}; a 16-byte object
  // holding the node (go1.3: scanned conservatively; go1.4: pointer at 0).
  e.Object(0x10000, GoEncoder::Words({0x10020, 7, 0}), {{f::kFieldPtr, 0}, {f::kFieldPtr, 16}}, 0x400100, 0);
  e.Object(0x10020, GoEncoder::Words({9}), {});
  e.Object(0x10040, GoEncoder::Words({0x10000, 3}), {{f::kFieldPtr, 0}}, 0, go13 ? 127 : 0);
  // A goroutine blocked in main.blocker: park's frame holds the node,
  // blocker's a pointer into park's frame (its own stack).
  e.Goroutine(0x30000, 0x18000, 5, f::kStatusWaiting, "chan receive");
  e.Frame(0x18000, 0, 0, GoEncoder::Words({0, 0x10000}), 0x402000, "runtime.park", {{f::kFieldPtr, 8}});
  e.Frame(0x18010, 1, 0x18000, GoEncoder::Words({0x18008, 0}), 0x403000, "main.blocker", {{f::kFieldPtr, 0}});
  e.Defer();
  e.Panic();
  e.OSThread();
  e.Segment(f::kGoData, 0x500000, GoEncoder::Words({0, 0x10020}), {{f::kFieldPtr, 8}});
  e.Segment(f::kGoBss, 0x501000, GoEncoder::Words({0x10040}), {{f::kFieldPtr, 0}});
  e.Finalizer(f::kGoFinalizer, 0x10000, 0x400100, 0x400100);
  e.Finalizer(f::kGoQueuedFinalizer, 0x10020, 0x400100, 0x400100);
  e.OtherRoot("finq", 0x10000);
  e.MemStats();
  e.MemProf();
  e.AllocSample(0x10000);
  e.Eof();
  return e.bytes();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_go_fixtures DIR\n");
    return 2;
  }
  for (const auto& [name, d] : {std::pair{"go-1.3.heapdump", Dialect::kGo13}, std::pair{"go-1.4.heapdump", Dialect::kGo14}}) {
    std::ofstream out(std::string(argv[1]) + "/" + name, std::ios::binary);
    out << Heap(d);
    if (!out) return 1;
  }
  return 0;
}
