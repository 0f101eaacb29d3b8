// Writes a dump exercising every mapping of docs/HPROF.md, with made-up
// addresses so every expected count is known:
//
//   typed objects with field names of every scalar kind, a polymorphic
//   conservative class defined after its objects, untyped objects with and
//   without pointers, arrays of pointers, of scalars and of structs, a
//   pointer-free type, interior pointers, two threads with frames in a
//   module, stack/data/other roots (some pointing nowhere), a finalizer,
//   allocation stacks (3 objects), memstats (mallocs = 42).
//
//   make_hprof_test_dump OUT.dump [--nodes N] [--secret TEXT]
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

using namespace libdump::format;

namespace {

constexpr uint64_t kNode = 0x1000, kShape = 0x2000, kNodePtr = 0x3000, kInts = 0x4000, kPair = 0x5000,
                   kBlob = 0x6000;
constexpr uint64_t kHeap = 0x10000000;
constexpr uint64_t kCode = 0x400000;

struct Payload {
  std::vector<uint8_t> bytes;
  explicit Payload(size_t n) : bytes(n, 0) {}
  void Put(size_t off, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) bytes[off + i] = static_cast<uint8_t>(v >> (8 * i));
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_hprof_test_dump OUT.dump [--nodes N] [--secret TEXT]\n");
    return 2;
  }
  size_t nodes = 100;
  std::string secret = "correct horse battery staple";
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--nodes") == 0) nodes = std::stoul(argv[i + 1]);
    else if (std::strcmp(argv[i], "--secret") == 0) secret = argv[i + 1];
    else return std::fprintf(stderr, "unknown argument %s\n", argv[i]), 2;
  }
  if (nodes < 10) nodes = 10;
  const int fd = ::open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return std::perror(argv[1]), 1;
  FdSink sink(fd);
  Writer w(sink);
  w.Header();
  // Addresses: nodes, then one object of each other kind.
  const auto node = [](size_t i) { return kHeap + 32 * i; };
  uint64_t next = node(nodes) + 64;
  const auto place = [&](uint64_t size) { const uint64_t a = next; next += (size + 15) & ~uint64_t{15}; return a; };
  const uint64_t shape1 = place(24), shape2 = place(24), ptrs = place(80), ints = place(40), pairs = place(48),
                 blob = place(64), untyped_ptr = place(32), untyped_str = place(secret.size() + 1),
                 empty = place(0);
  w.Params({0, 8, 0, kHeap, next});
  w.Module({kCode, kCode + 0x10000, 0, "/opt/app/bin/server", "c0ffee"});
  w.Type({kNode, 32, "app::Node", false, {{kFieldPtr, 0}}});
  w.TypeFields({kNode,
                {{0, kFieldPtr, 8, "next"},
                 {8, kFieldInt, 8, "value"},
                 {16, kFieldFloat, 4, "weight"},
                 {20, kFieldBool, 1, "live"},
                 {21, kFieldChar, 1, "tag"},
                 {22, kFieldUint, 2, "code"},
                 {24, kFieldBytes, 8, "name"}}});
  w.Type({kNodePtr, 8, "app::Node*", false, {{kFieldPtr, 0}}});
  w.Type({kInts, 40, "int32_t", false, {}});
  w.TypeInfo({kInts, kTypeArray, 0, 0, 4});
  w.Type({kPair, 16, "app::Pair", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  w.Type({kBlob, 64, "Blob", false, {}});

  for (size_t i = 0; i < nodes; ++i) {
    Payload p(32);
    // Node 1 points into the middle of node 2: an interior pointer.
    p.Put(0, i + 1 < nodes ? node(i + 1) + (i == 1 ? 8 : 0) : 0, 8);
    p.Put(8, i * 1000, 8);
    float f = 0.5f * i;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    p.Put(16, bits, 4);
    p.Put(20, i & 1, 1);
    p.Put(21, 'a' + i % 26, 1);
    p.Put(22, 0xBEEF, 2);
    std::memcpy(p.bytes.data() + 24, "nodename", 8);
    w.Object({node(i), kNode, kObjRegular, 32}, p.bytes.data());
  }
  // Polymorphic: first word a vtable in the module, then a node pointer.
  for (uint64_t a : {shape1, shape2}) {
    Payload p(24);
    p.Put(0, kCode + 0x2000, 8);
    p.Put(8, node(3), 8);
    p.Put(16, 42, 8);
    w.Object({a, kShape, kObjRegular, 24}, p.bytes.data());
  }
  {
    Payload p(80);
    for (size_t i = 0; i < 10; ++i) p.Put(8 * i, i % 3 == 2 ? 0 : node(i), 8);
    w.Object({ptrs, kNodePtr, kObjArray, 80}, p.bytes.data());
  }
  {
    Payload p(40);
    for (size_t i = 0; i < 10; ++i) p.Put(4 * i, 100 + i, 4);
    w.Object({ints, kInts, kObjArray, 40}, p.bytes.data());
  }
  {
    Payload p(48);
    for (size_t i = 0; i < 6; ++i) p.Put(8 * i, node(5 + i), 8);
    w.Object({pairs, kPair, kObjArray, 48}, p.bytes.data());
  }
  {
    Payload p(64);
    for (size_t i = 0; i < 64; ++i) p.bytes[i] = static_cast<uint8_t>(i);
    w.Object({blob, kBlob, kObjRegular, 64}, p.bytes.data());
  }
  {
    Payload p(32);
    p.Put(0, 12345, 8);
    p.Put(8, node(7) + 4, 8);  // interior
    p.Put(16, ptrs, 8);
    w.Object({untyped_ptr, 0, kObjRegular, 32}, p.bytes.data());
  }
  w.Object({untyped_str, 0, kObjRegular, secret.size() + 1}, secret.c_str());
  w.Object({empty, 0, kObjRegular, 0}, "");  // not null: the writer memcpys it

  // Defined after its objects, as WriteHeapDump does for RTTI-named classes.
  w.Type({kShape, 24, "app::Circle", false, {}});
  w.TypeInfo({kShape, kTypePolymorphic | kTypeConservative, kCode + 0x2000, 0, 0});
  w.Itab({kCode + 0x2000, 1});

  const uint64_t stack1 = 0x7fff0000, stack2 = 0x7ffe0000;
  w.Goroutine({0xA000, stack1, 101, kCode + 0x100, kStatusRunning, false, false, 0, ""});
  w.ThreadInfo({0xA000, 101, "main"});
  w.Frame({stack1, stack1 + 0x100, kCode + 0x300, kCode + 0x310, "app::Server::Poll()"});
  w.Frame({stack1 + 0x100, stack1 + 0x200, kCode + 0x200, kCode + 0x250, "app::Server::Run(int)"});
  w.Frame({stack1 + 0x200, 0, kCode + 0x100, kCode + 0x120, "main"});
  w.StackRoot({stack1 + 8, node(0), stack1});
  w.StackRoot({stack1 + 0x108, shape1 + 8, stack1 + 0x100});  // interior
  w.StackRoot({stack1 + 0x110, 0xdead0000, stack1 + 0x100});  // to no object: dropped
  w.Goroutine({0xB000, stack2, 102, kCode + 0x400, kStatusWaiting, false, true, 0, "futex"});
  w.ThreadInfo({0xB000, 102, "worker-1"});
  w.Frame({stack2, stack2 + 0x80, kCode + 0x500, kCode + 0x520, "app::Worker::Wait()"});
  w.Frame({stack2 + 0x80, 0, 0x7f0000001000, 0x7f0000001010, ""});  // outside every module
  w.StackRoot({stack2 + 16, untyped_ptr, stack2});
  w.StackRoot({0x12345, node(9), 0x99999});  // frame unknown: ROOT UNKNOWN
  w.DataRoot({0x600000, pairs});
  w.DataRoot({0x600008, ints});
  w.DataRoot({0x600010, 7});  // to no object
  w.OtherRoot("registered: config", blob);
  w.OtherRoot("tls: thread 101", untyped_str);
  w.OtherRoot("registered: empty", empty);
  w.Finalizer({node(4), 1, kCode + 0x600, 0, kNode});
  // Allocation stacks of 3 objects (two share one), with a named pc (a frame's),
  // a pc in the module only and one outside every module; one to no object.
  const std::vector<uint64_t> site = {kCode + 0x310, kCode + 0x7000, 0x7f0000009000};
  w.AllocStack(node(0), 32, site);
  w.AllocStack(blob, 64, site);
  w.AllocStack(ints, 40, std::vector<uint64_t>{kCode + 0x250});
  w.AllocStack(0x7, 8, site);
  w.MemStats({{{"heap_inuse", 123456}, {"mallocs", 42}}});
  w.Eof();
  ::close(fd);
  if (w.error() != 0) return std::perror("write"), 1;
  return 0;
}
