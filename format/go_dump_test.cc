// Go runtimes' "go1.7 heap dump" files through Reader: a dump built byte by
// byte to runtime/heapdump.go's layout (docs/GODUMP.md), its mapping onto the
// record model, and clean errors for every truncation, huge lengths, unknown
// kinds and bad fields.
#include "go_dump.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "testing/go_dump_encoder_testutil.h"
#include "libdump/format/reader.h"
#include "libdump/format/uvarint.h"

namespace libdump::format {
namespace {

std::string V(uint64_t v) {
  uint8_t b[kMaxUvarintLen];
  return std::string(reinterpret_cast<const char*>(b), PutUvarint(b, v));
}
std::string S(const std::string& s) { return V(s.size()) + s; }
std::string Word(uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); }

const std::string kGoHeader = "go1.7 heap dump\n";

// Go 1.19's params: little-endian, 8-byte words, the arena, GOARCH,
// buildVersion, ncpu.
std::string Params() { return V(6) + V(0) + V(8) + V(0x1000) + V(0x9000) + S("amd64") + S("go1.19.8") + V(2); }

// One dump with every kind Go writes.
std::string SampleDump() {
  std::string d = kGoHeader + Params();
  d += V(3) + V(0x500) + V(16) + S("main.node") + V(1);           // type
  d += V(8) + V(0x600) + V(0x500);                                 // itab
  // object 0x1000: 24 bytes, pointers at 0 and 16 (-> 0x1020, 0)
  d += V(1) + V(0x1000) + V(24) + Word(0x1020) + Word(7) + Word(0) + V(1) + V(0) + V(1) + V(16) + V(0);
  d += V(1) + V(0x1020) + V(8) + Word(9) + V(0);                   // object without pointers
  // goroutine 0x2000, sp 0x8000, goid 5, waiting on a channel
  d += V(4) + V(0x2000) + V(0x8000) + V(5) + V(0x401000) + V(4) + V(0) + V(0) + V(0) + S("chan receive") +
       V(0) + V(0x3000) + V(0) + V(0);
  // frame 0x8000 (depth 0, no child), 16 bytes, pointer at 8 -> 0x1000
  d += V(5) + V(0x8000) + V(0) + V(0) + V(16) + Word(0) + Word(0x1000) + V(0x402000) + V(0x402010) +
       V(0x402010) + S("runtime.gopark") + V(1) + V(8) + V(0);
  // its caller 0x8010 (depth 1, child 0x8000), 8 bytes, no pointers
  d += V(5) + V(0x8010) + V(1) + V(0x8000) + V(8) + Word(0) + V(0x403000) + V(0x403020) + V(0x403020) +
       S("main.blocker") + V(0);
  d += V(14) + V(1) + V(2) + V(3) + V(4) + V(5) + V(6) + V(7);    // defer
  d += V(15) + V(1) + V(2) + V(3) + V(4) + V(0) + V(6);          // panic
  d += V(9) + V(0x3000) + V(1) + V(4242);                         // osthread
  // data segment at 0x7000: 16 bytes, pointer at 8 -> 0x1020
  d += V(12) + V(0x7000) + V(16) + Word(0) + Word(0x1020) + V(1) + V(8) + V(0);
  d += V(13) + V(0x7100) + V(8) + Word(0) + V(1) + V(0) + V(0);  // bss, nil pointer
  d += V(7) + V(0x1000) + V(0x4a0000) + V(0x404000) + V(0x500) + V(0x500);  // finalizer
  d += V(11) + V(0x1020) + V(0x4a0000) + V(0x404000) + V(0x500) + V(0x500); // queued finalizer
  d += V(2) + S("finq") + V(0x1000);                              // otherroot
  d += V(10);                                                      // memstats
  for (int i = 0; i < 24; ++i) d += V(i + 100);
  for (int i = 0; i < 256; ++i) d += V(0);
  d += V(3);
  d += V(16) + V(0x9) + V(32) + V(1) + S("main.main") + S("main.go") + V(10) + V(4) + V(1);  // memprof
  d += V(17) + V(0x1000) + V(0x9);                                // allocsample
  d += V(0);
  return d;
}

using testing::ParseError;
using testing::ReadAll;

TEST(GoDump, MapsEveryGoRecordOntoTheModel) {
  std::vector<std::string> payloads;
  std::istringstream in(SampleDump());
  EXPECT_EQ(Reader(in).dialect(), Dialect::kGo17);
  const std::vector<Record> rs = ReadAll(SampleDump(), nullptr, &payloads);
  std::vector<Kind> kinds;
  for (const Record& r : rs) kinds.push_back(r.kind);
  const std::vector<Kind> want = {
      Kind::kParams, Kind::kType, Kind::kItab, Kind::kType, Kind::kObject, Kind::kType,
      Kind::kObject, Kind::kGoroutine, Kind::kFrame, Kind::kStackRoot, Kind::kFrame,
      Kind::kDataRoot, Kind::kFinalizer, Kind::kFinalizer, Kind::kOtherRoot, Kind::kMemStats,
      Kind::kEof};
  ASSERT_EQ(kinds, want);
  EXPECT_EQ(rs[0].params, (ParamsRecord{0, 8, 0, 0x1000, 0x9000}));
  EXPECT_EQ(rs[1].type.name, "main.node");
  EXPECT_EQ(rs[2].itab, (ItabRecord{0x600, 1, 0x500}));  // the itab's type is kept for --binary
  // Untyped objects get a synthetic type per size and pointer layout.
  EXPECT_EQ(rs[3].type.addr, kGoSyntheticTypeBase);
  EXPECT_EQ(rs[3].type.name, "obj24[0,16]");
  EXPECT_EQ(rs[3].type.fields, (std::vector<Field>{{kFieldPtr, 0}, {kFieldPtr, 16}}));
  EXPECT_EQ(rs[4].object, (ObjectRecord{0x1000, kGoSyntheticTypeBase, kObjRegular, 24}));
  EXPECT_EQ(payloads[0], Word(0x1020) + Word(7) + Word(0));
  EXPECT_EQ(rs[5].type.name, "noptr8");
  EXPECT_EQ(rs[6].object.type, kGoSyntheticTypeBase + 1);
  const GoroutineRecord& g = rs[7].goroutine;
  EXPECT_EQ(g.addr, 0x2000u);
  EXPECT_EQ(g.tos, 0x8000u);
  EXPECT_EQ(g.goid, 5u);
  EXPECT_EQ(g.status, kStatusWaiting);
  EXPECT_EQ(g.wait_reason, "chan receive");
  // Frames link innermost to outermost through the caller's sp.
  EXPECT_EQ(rs[8].frame, (FrameRecord{0x8000, 0x8010, 0x402000, 0x402010, "runtime.gopark", 16}));
  EXPECT_EQ(rs[9].stack_root, (StackRootRecord{0x8008, 0x1000, 0x8000}));
  EXPECT_EQ(rs[10].frame, (FrameRecord{0x8010, 0, 0x403000, 0x403020, "main.blocker", 8}));
  EXPECT_EQ(rs[11].data_root, (DataRootRecord{0x7008, 0x1020}));
  EXPECT_EQ(rs[12].finalizer, (FinalizerRecord{0x1000, 0x4a0000, 0x404000, 0x500, 0x500}));
  EXPECT_EQ(rs[14].other_root, (OtherRootRecord{"finq", 0x1000}));
  ASSERT_EQ(rs[15].mem_stats.stats.size(), 25u);
  EXPECT_EQ(rs[15].mem_stats.stats[0], (MemStat{"Alloc", 100}));
  EXPECT_EQ(rs[15].mem_stats.stats[24], (MemStat{"NumGC", 3}));
}

TEST(GoDump, TruncatedAtEveryByteFailsCleanly) {
  const std::string d = SampleDump();
  for (size_t n = 0; n < d.size(); ++n) {
    uint64_t off = ~uint64_t{0};
    const std::string err = ParseError(d.substr(0, n), &off);
    ASSERT_FALSE(err.empty()) << n;
    EXPECT_LE(off, n) << n << ": " << err;
  }
  EXPECT_EQ(ParseError(d), "");
}

// The real Go 1.19 dump of testdata/ (docs/GODUMP.md): every record decodes,
// and cut anywhere (every 1733rd byte: each cut re-reads the prefix) it fails
// with one FormatError at or before the cut.
TEST(GoDump, RealDumpReadsAndEveryCutFailsCleanly) {
  std::ifstream f(std::string(GO_DUMP_TESTDATA) + "/go-1.19.heapdump", std::ios::binary);
  ASSERT_TRUE(f) << GO_DUMP_TESTDATA;
  const std::string d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(d.size(), 346389u);
  const std::vector<Record> rs = ReadAll(d);
  EXPECT_EQ(rs.size(), 1598u);  // testdata/go-1.19.heapdump.summary.expected
  for (size_t n = 0; n < d.size(); n += 1733) {
    uint64_t off = ~uint64_t{0};
    const std::string err = ParseError(d.substr(0, n), &off);
    ASSERT_FALSE(err.empty()) << n;
    EXPECT_LE(off, n) << n << ": " << err;
  }
}

// Reader::Range on a Go dump: a reader that has read the params record and
// jumps to any object record returns that object (after, at most, its
// synthetic type) with the address and payload of the whole read.
TEST(GoDump, RangeToEachObjectOfTheRealDumpReadsThatObject) {
  std::ifstream f(std::string(GO_DUMP_TESTDATA) + "/go-1.19.heapdump", std::ios::binary);
  const std::string d((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  struct Object {
    uint64_t at, addr;
    std::string bytes;
  };
  std::vector<Object> objects;
  {
    std::istringstream in(d);
    Reader reader(in);
    Record r;
    while (reader.Next(r)) {
      if (r.kind != Kind::kObject) continue;
      const auto p = reader.Payload();
      objects.push_back({r.offset, r.object.addr, std::string(p.begin(), p.end())});
    }
  }
  ASSERT_EQ(objects.size(), 163u);  // testdata/go-1.19.heapdump.summary.expected
  for (size_t k = 0; k < objects.size(); k += 7) {
    std::istringstream in(d);
    Reader reader(in);
    Record r;
    ASSERT_TRUE(reader.Next(r));
    ASSERT_EQ(r.kind, Kind::kParams);
    EXPECT_THROW(reader.Range(objects[k].at, objects[k].at + 1), std::logic_error);
    reader.Range(objects[k].at, 0);
    do {
      ASSERT_TRUE(reader.Next(r));
    } while (r.kind == Kind::kType);
    ASSERT_EQ(r.kind, Kind::kObject);
    EXPECT_EQ(r.offset, objects[k].at);
    EXPECT_EQ(r.object.addr, objects[k].addr);
    const auto p = reader.Payload();
    EXPECT_EQ(std::string(p.begin(), p.end()), objects[k].bytes);
  }
}

TEST(GoDump, HugeLengthsAllocateNothing) {
  for (uint64_t n : {uint64_t{1} << 40, ~uint64_t{0} >> 1, ~uint64_t{0}}) {
    const std::string err = ParseError(kGoHeader + Params() + V(1) + V(0x1000) + V(n) + "abc");
    EXPECT_NE(err.find("contents: length"), std::string::npos) << err;
    const std::string nstk = ParseError(kGoHeader + Params() + V(16) + V(9) + V(32) + V(n));
    EXPECT_NE(nstk.find("nstk: length"), std::string::npos) << nstk;
  }
}

TEST(GoDump, UnknownKindsAndBadFields) {
  uint64_t off = 0;
  const std::string head = kGoHeader + Params();
  EXPECT_NE(ParseError(head + V(18), &off).find("go kind 18 (unknown): unknown record kind"),
            std::string::npos);
  EXPECT_EQ(off, head.size());
  // Field kind 4 does not exist; an offset past the contents is refused.
  EXPECT_NE(ParseError(head + V(1) + V(0x1000) + V(8) + Word(0) + V(4) + V(0) + V(0))
                .find("fieldkind: expected 0 to 3, got 4"), std::string::npos);
  EXPECT_NE(ParseError(head + V(1) + V(0x1000) + V(8) + Word(0) + V(1) + V(8) + V(0))
                .find("fieldoffset: 8 is not inside the 8-byte contents"), std::string::npos);
  EXPECT_NE(ParseError(kGoHeader + V(6) + V(0) + V(3)).find("ptrsize: expected 4 or 8, got 3"),
            std::string::npos);
  EXPECT_NE(ParseError(head + V(0) + "x").find("unexpected data after the eof record"), std::string::npos);
  EXPECT_NE(ParseError(head).find("no eof record"), std::string::npos);
}

TEST(GoDump, Go15AndGo16ReadAsGo17ButTheirItabsNameThePointerType) {
  // type 0x500 is stored directly in an interface (efaceptr 0).
  const std::string body = Params() + V(3) + V(0x500) + V(8) + S("main.small") + V(0) + V(8) + V(0x600) +
                           V(0x500) + V(0);
  const std::pair<std::string, Dialect> cases[] = {
      {"go1.5 heap dump\n", Dialect::kGo15}, {"go1.6 heap dump\n", Dialect::kGo16}, {kGoHeader, Dialect::kGo17}};
  for (const auto& [header, dialect] : cases) {
    SCOPED_TRACE(header);
    std::istringstream in(header + body);
    EXPECT_EQ(Reader(in).dialect(), dialect);
    const std::vector<Record> rs = ReadAll(header + body);
    ASSERT_EQ(rs.size(), 4u);
    EXPECT_EQ(rs[2].itab, (ItabRecord{0x600, dialect == Dialect::kGo17 ? 0u : 1u, 0x500}));
  }
  // The whole sample reads the same under every header.
  const std::vector<Record> go17 = ReadAll(SampleDump());
  const std::vector<Record> go15 = ReadAll("go1.5 heap dump\n" + SampleDump().substr(kGoHeader.size()));
  ASSERT_EQ(go15.size(), go17.size());
  for (size_t i = 0; i < go15.size(); ++i) EXPECT_EQ(go15[i].kind, go17[i].kind) << i;
  EXPECT_NE(ParseError("go1.8 heap dump\n" + body).find("unsupported dialect"), std::string::npos);
}

TEST(GoDump, Go13RuntimeDumpIsToldFromLibdumpByItsParams) {
  // Go 1.3's params: kind 6, little-endian, 8-byte words, hchansize 88, the
  // arena, '6' (amd64), GOEXPERIMENT, ncpu.
  const std::string go13 = std::string("go1.3 heap dump\n") + V(6) + V(0) + V(8) + V(88) + V(0x1000) +
                           V(0x9000) + V('6') + S("") + V(2) + V(0);
  EXPECT_EQ(ParseError(go13), "");
  std::istringstream go13_in(go13);
  EXPECT_EQ(Reader(go13_in).dialect(), Dialect::kGo13);
  // A libdump dump that opens with an otherroot (kind 6) reads as libdump.
  const std::string libdump = std::string("go1.3 heap dump\n") + V(6) + S("") + V(8) + V(3);
  EXPECT_EQ(ParseError(libdump), "");
  std::istringstream in(libdump);
  EXPECT_EQ(Reader(in).dialect(), Dialect::kLibdump);
}

}  // namespace
}  // namespace libdump::format
