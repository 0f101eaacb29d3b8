// Writes the small dumps of testdata/ with libdump::format's Writer. Every
// number in testdata/*.expected follows from the records written here; see
// testdata/README.md for the arithmetic. Run through make_testdata.sh.
//
// usage: make_testdata OUTDIR
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <string>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

namespace {

using namespace libdump::format;

// Object payloads as 8-byte little-endian words (params say little-endian, 8).
std::string Words(std::initializer_list<uint64_t> words) {
  std::string out;
  for (uint64_t w : words) {
    for (int i = 0; i < 8; ++i) out += static_cast<char>((w >> (8 * i)) & 0xff);
  }
  return out;
}

void Obj(Writer& w, uint64_t addr, uint64_t type, uint64_t kind, const std::string& payload) {
  w.Object({addr, type, kind, payload.size()}, payload.data());
}

constexpr uint64_t kHeapStart = 0x10000, kHeapEnd = 0x20000;
constexpr uint64_t kNode = 0x5000, kLeaf = 0x5100, kWidget = 0x5200;
constexpr uint64_t kVtable = 0x6000;

// A well-formed dump touching every record kind, in WriteHeapDump's order
// (docs/FORMAT.md): the polymorphic type Widget comes after its object. In
// seed-only mode the writer drops the extension records (kinds 13..18).
void WriteGood(Writer& w) {
  w.Header();
  w.Params({0, 8, 0, kHeapStart, kHeapEnd});
  w.MemStats({{{"heap_inuse", 112}, {"mallocs", 5}}});
  w.Module({0x400000, 0x402000, 0, "/usr/bin/example", "0badc0de"});
  w.Type({kNode, 24, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 16}}});
  w.TypeFields({kNode, {{0, kFieldPtr, 8, "next"}, {8, kFieldInt, 8, "value"}, {16, kFieldPtr, 8, "peer"}}});
  w.Type({kLeaf, 8, "Leaf", false, {}});
  w.TypeInfo({kLeaf, kTypeConservative, 0, 0, 0});
  // O1 Node: next -> O2 (its start), peer -> 0x10038 (inside O3).
  Obj(w, 0x10000, kNode, kObjRegular, Words({0x10018, 42, 0x10038}));
  // O2 Leaf: a scalar.
  Obj(w, 0x10018, kLeaf, kObjRegular, Words({7}));
  // O3 array of two Nodes: [0] next -> O1, peer null; [1] next null, peer
  // 0x90000 (above the heap: not checked).
  Obj(w, 0x10030, kNode, kObjArray, Words({0x10000, 1, 0, 0, 2, 0x90000}));
  // O4 untyped: 0x10100 is in the heap but in no object; untyped payloads
  // carry no layout and are not checked.
  Obj(w, 0x10060, 0, kObjRegular, Words({0x10100, 0}));
  // O5 Widget: vtable word, then a pointer -> O4.
  Obj(w, 0x10070, kWidget, kObjRegular, Words({kVtable, 0x10060}));
  w.AllocStack({0x10000, 24, {0x401010, 0x401180}});
  w.Type({kWidget, 16, "Widget", false, {{kFieldPtr, 8}}});
  w.TypeInfo({kWidget, kTypePolymorphic, kVtable, 0, 0});
  w.Itab({kVtable, 1});
  w.Goroutine({0x7000, 0x7f00, 101, 0x401000, kStatusRunning, false, false, 0, ""});
  w.ThreadInfo({0x7000, 101, "main"});
  w.Frame({0x7f00, 0x7f40, 0x401000, 0x401010, "leaf()"});
  w.Frame({0x7f40, 0, 0x401100, 0x401180, "main"});
  w.StackRoot({0x7f08, 0x10000, 0x7f00});
  w.StackRoot({0x7f48, 0x10038, 0x7f40});  // interior pointer into O3
  w.Goroutine({0x7100, 0x8f00, 102, 0x401200, kStatusWaiting, false, true, 5, "futex"});
  w.ThreadInfo({0x7100, 102, "worker-1"});
  w.Frame({0x8f00, 0, 0x401200, 0x401234, "worker_loop(void*)"});
  w.StackRoot({0x8f10, 0, 0x8f00});  // null
  w.DataRoot({0x600000, 0x10070});
  w.DataRoot({0x600008, 0x401234});  // below the heap: not checked
  w.OtherRoot("tls: \"x\"\n\xff", 0x10018);  // bytes that need escaping
  w.OtherRoot("registered: config", 0x10000);
  w.Finalizer({0x10070, 0x1, 0x401300, 0, kWidget});
  w.Eof();
}

// Structurally valid, semantically wrong: each numbered mistake is one
// expected --validate problem (testdata/problems.validate.expected).
void WriteProblems(Writer& w) {
  w.Header();
  w.Params({0, 8, 0, kHeapStart, kHeapEnd});
  w.Type({kNode, 24, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 16}}});
  // (1) next = 0x10100: in the heap, in no object. peer -> O2 is fine.
  Obj(w, 0x10000, kNode, kObjRegular, Words({0x10100, 0, 0x10018}));
  // (2) type 0x5999 is never defined.
  Obj(w, 0x10018, 0x5999, kObjRegular, Words({0}));
  Obj(w, 0x10020, 0, kObjRegular, Words({0, 0}));
  // (3) starts inside the previous object [0x10020, 0x10030).
  Obj(w, 0x10028, 0, kObjRegular, Words({0}));
  // (4) Node defined a second time.
  w.Type({kNode, 24, "Node again", false, {}});
  w.Goroutine({0x7000, 0x7f00, 1, 0x401000, kStatusRunning, false, false, 0, ""});
  // (5) the parent frame 0x7f40 is not in the dump: the chain is broken.
  w.Frame({0x7f00, 0x7f40, 0x401000, 0x401010, "leaf()"});
  // (6) frame 0x7e00 does not exist.
  w.StackRoot({0x7f08, 0x10000, 0x7e00});
  // (7) top frame 0x8f00 is not in the dump.
  w.Goroutine({0x7100, 0x8f00, 2, 0x401000, kStatusIdle, false, false, 0, ""});
  // (8) no thread's chain reaches this frame.
  w.Frame({0x9f00, 0, 0x401000, 0x401050, "orphan()"});
  // (9) threadinfo for a thread that was not dumped.
  w.ThreadInfo({0x7200, 3, "ghost"});
  // (10) rootptr 0x10200: in the heap, in no object.
  w.DataRoot({0x600000, 0x10200});
  // (11) 0x10008 is inside O1, not the start of an object.
  w.Finalizer({0x10008, 0x1, 0x401300, 0, kNode});
  w.Eof();
}

bool WriteFile(const std::string& path, bool seed_only, bool zstd, void (*body)(Writer&)) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  OstreamSink file(out);
  if (zstd) {
    ZstdSink z(file, 19);
    Writer w(z, {.seed_only = seed_only});
    body(w);
    z.Finish();
    if (z.error() != 0) return false;
  } else {
    Writer w(file, {.seed_only = seed_only});
    body(w);
    if (w.error() != 0) return false;
  }
  out.close();
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_testdata OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = WriteFile(dir + "/seed.dump", true, false, WriteGood) &&
                  WriteFile(dir + "/full.dump", false, false, WriteGood) &&
                  WriteFile(dir + "/full.dump.zst", false, true, WriteGood) &&
                  WriteFile(dir + "/problems.dump", false, false, WriteProblems);
  if (!ok) {
    std::fprintf(stderr, "make_testdata: cannot write to %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
