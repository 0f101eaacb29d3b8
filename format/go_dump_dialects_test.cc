// Every dialect of Go runtimes' heap dumps, go1.3 to go1.7: one heap of known
// content written by GoEncoder (go_dump_encoder_testutil.h) in each dialect's
// layout decodes to the same model, less what a dialect does not say; then
// what only go1.3 has (typed objects, arrays, channels, conservative objects,
// string/slice/scalar-interface fields) and each dialect's bad fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "go_dump.h"
#include "testing/go_dump_encoder_testutil.h"
#include "libdump/format/reader.h"

namespace libdump::format {
namespace {

using testing::GoEncoder;

constexpr Dialect kAll[] = {Dialect::kGo13, Dialect::kGo14, Dialect::kGo15, Dialect::kGo16, Dialect::kGo17};
constexpr uint64_t kSynth = kGoSyntheticTypeBase;

// A node 0x1000 {next 0x1020, 7, prev nil} and an int box 0x1020, a
// goroutine blocked in main.blocker whose gopark frame holds the node, a data
// word holding the box, two finalizers, and one of every other record.
std::string KnownHeap(Dialect d) {
  GoEncoder e(d);
  e.Params(0x1000, 0x9000);
  e.Type(0x500, 24, "main.node", true, {{kFieldPtr, 0}, {kFieldPtr, 16}});
  e.Type(0x510, 8, "int", false);
  e.Itab(0x600, 0x500, true);
  e.Object(0x1000, GoEncoder::Words({0x1020, 7, 0}), {{kFieldPtr, 0}, {kFieldPtr, 16}}, 0x500, kObjRegular);
  e.Object(0x1020, GoEncoder::Words({9}), {});
  e.Goroutine(0x2000, 0x8000, 5, kStatusWaiting, "chan receive");
  e.Frame(0x8000, 0, 0, GoEncoder::Words({0, 0x1000}), 0x402000, "runtime.gopark", {{kFieldPtr, 8}});
  e.Frame(0x8010, 1, 0x8000, GoEncoder::Words({0}), 0x403000, "main.blocker", {});
  e.Defer();
  e.Panic();
  e.OSThread();
  e.Segment(kGoData, 0x7000, GoEncoder::Words({0, 0x1020}), {{kFieldPtr, 8}});
  e.Segment(kGoBss, 0x7100, GoEncoder::Words({0}), {{kFieldPtr, 0}});  // nil: no root
  e.Finalizer(kGoFinalizer, 0x1000, 0x500, 0x500);
  e.Finalizer(kGoQueuedFinalizer, 0x1020, 0x510, 0x510);
  e.OtherRoot("finq", 0x1000);
  e.MemStats();
  e.MemProf();
  e.AllocSample(0x1000);
  e.Eof();
  return e.bytes();
}

using testing::ParseError;
using testing::ReadAll;

TEST(GoDialects, KnownHeapDecodesAlikeInEveryDialect) {
  for (Dialect d : kAll) {
    SCOPED_TRACE(DialectName(d));
    const bool go13 = d == Dialect::kGo13;
    Dialect got;
    const std::vector<Record> rs = ReadAll(KnownHeap(d), &got);
    EXPECT_EQ(got, d);
    std::vector<Kind> kinds;
    for (const Record& r : rs) kinds.push_back(r.kind);
    // go1.3 objects name their type; later ones get a synthetic one per layout.
    std::vector<Kind> want = {Kind::kParams, Kind::kType, Kind::kType, Kind::kItab};
    if (!go13) want.push_back(Kind::kType);
    for (Kind k : {Kind::kObject, Kind::kType, Kind::kObject, Kind::kGoroutine, Kind::kFrame, Kind::kStackRoot,
                   Kind::kFrame, Kind::kDataRoot, Kind::kFinalizer, Kind::kFinalizer, Kind::kOtherRoot,
                   Kind::kMemStats, Kind::kEof}) {
      want.push_back(k);
    }
    ASSERT_EQ(kinds, want);
    size_t i = 0;
    EXPECT_EQ(rs[i++].params, (ParamsRecord{0, 8, go13 ? 88u : 0u, 0x1000, 0x9000}));
    const TypeRecord& node = rs[i++].type;
    EXPECT_EQ(node.addr, 0x500u);
    EXPECT_EQ(node.name, "main.node");
    EXPECT_TRUE(node.eface_ptr);
    EXPECT_EQ(node.fields, go13 ? (std::vector<Field>{{kFieldPtr, 0}, {kFieldPtr, 16}}) : std::vector<Field>{});
    EXPECT_FALSE(rs[i++].type.eface_ptr);  // int
    // go1.3 says ptr; go1.4 to go1.6 name the data word's type (a pointer);
    // go1.7 names the stored type, main.node, whose efaceptr is 1; the
    // type's address is kept from go1.4 on (go1.3 writes none).
    EXPECT_EQ(rs[i++].itab, (ItabRecord{0x600, 1, go13 ? 0u : 0x500u}));
    uint64_t node_type = 0x500, box_type = kSynth;
    if (!go13) {
      EXPECT_EQ(rs[i].type.name, "obj24[0,16]");
      EXPECT_EQ(rs[i++].type.addr, kSynth);
      node_type = kSynth, box_type = kSynth + 1;
    }
    EXPECT_EQ(rs[i++].object, (ObjectRecord{0x1000, node_type, kObjRegular, 24}));
    EXPECT_EQ(rs[i].type.name, "noptr8");
    EXPECT_EQ(rs[i++].type.addr, box_type);
    EXPECT_EQ(rs[i++].object, (ObjectRecord{0x1020, box_type, kObjRegular, 8}));
    const GoroutineRecord& g = rs[i++].goroutine;
    EXPECT_EQ(g.addr, 0x2000u);
    EXPECT_EQ(g.tos, 0x8000u);
    EXPECT_EQ(g.goid, 5u);
    EXPECT_EQ(g.status, kStatusWaiting);
    EXPECT_EQ(g.wait_reason, "chan receive");
    EXPECT_EQ(rs[i++].frame, (FrameRecord{0x8000, 0x8010, 0x402000, 0x402010, "runtime.gopark", 16}));
    EXPECT_EQ(rs[i++].stack_root, (StackRootRecord{0x8008, 0x1000, 0x8000}));
    EXPECT_EQ(rs[i++].frame, (FrameRecord{0x8010, 0, 0x403000, 0x403010, "main.blocker", 8}));
    EXPECT_EQ(rs[i++].data_root, (DataRootRecord{0x7008, 0x1020}));
    EXPECT_EQ(rs[i++].finalizer, (FinalizerRecord{0x1000, 0x4a0000, 0x404000, 0x500, 0x500}));
    EXPECT_EQ(rs[i++].finalizer, (FinalizerRecord{0x1020, 0x4a0000, 0x404000, 0x510, 0x510}));
    EXPECT_EQ(rs[i++].other_root, (OtherRootRecord{"finq", 0x1000}));
    const MemStatsRecord& m = rs[i++].mem_stats;
    ASSERT_EQ(m.stats.size(), 25u);
    EXPECT_EQ(m.stats[23], (MemStat{"PauseTotalNs", 123}));
    EXPECT_EQ(m.stats[24], (MemStat{"NumGC", 3}));
  }
}

TEST(GoDialects, EveryTruncationOfEveryDialectFailsCleanly) {
  for (Dialect d : kAll) {
    SCOPED_TRACE(DialectName(d));
    const std::string dump = KnownHeap(d);
    EXPECT_EQ(ParseError(dump), "");
    for (size_t n = 0; n < dump.size(); ++n) {
      uint64_t off = ~uint64_t{0};
      const std::string err = ParseError(dump.substr(0, n), &off);
      ASSERT_FALSE(err.empty()) << n;
      EXPECT_LE(off, n) << n << ": " << err;
    }
  }
}

// Random byte edits of each dialect's dump either read or fail with one
// FormatError (ASan builds check the memory of every path they reach).
TEST(GoDialects, MutatedDumpsReadOrFailCleanly) {
  std::mt19937_64 rng(20261126);
  for (Dialect d : kAll) {
    SCOPED_TRACE(DialectName(d));
    const std::string seed = KnownHeap(d);
    for (int iter = 0; iter < 500; ++iter) {
      std::string s = seed;
      for (int e = 1 + static_cast<int>(rng() % 4); e > 0; --e) {
        const size_t at = 16 + rng() % (s.size() - 16);  // the header stays
        switch (rng() % 4) {
          case 0: s[at] = static_cast<char>(rng()); break;
          case 1: s[at] = static_cast<char>(0x80 | rng()); break;
          case 2: s.erase(at, std::min<size_t>(1 + rng() % 8, s.size() - at)); break;
          case 3: s.insert(at, std::string(1 + rng() % 8, static_cast<char>(0xff))); break;
        }
        if (s.size() <= 16) s = seed;
      }
      try {
        ReadAll(s);
      } catch (const FormatError&) {
      }
    }
  }
}

// What only go1.3 writes: arrays and channels of a type, objects the
// collector scanned conservatively, and string, slice and interface fields
// whose interface data words may hold scalars.
TEST(GoDialects, Go13TypedObjectsAndFieldKinds) {
  GoEncoder e(Dialect::kGo13);
  e.Params(0x1000, 0x9000, 96);
  e.Type(0x500, 24, "main.node", true, {{kFieldPtr, 0}, {kFieldPtr, 16}});
  e.Type(0x510, 8, "int", false);
  e.Itab(0x600, 0, false);  // an int stored in the interface word
  e.Itab(0x610, 0, true);
  e.Object(0x1000, GoEncoder::Words({0, 1, 0, 0, 2, 0}), {}, 0x500, kObjArray);  // [2]main.node
  e.Object(0x1100, std::string(96, '\0') + GoEncoder::Words({0x1000, 0}), {}, 0x510, kObjChan);
  e.Object(0x1200, GoEncoder::Words({0x1000, 3}), {}, 0, 127);  // conservative
  e.Object(0x1300, GoEncoder::Words({4, 5}), {}, 0, 127);        // the same layout again
  // string @0, slice @16, iface @40 (scalar), iface @56, eface @72
  // (scalar int), eface @88 (*main.node): 13 words.
  e.Segment(kGoData, 0x7000,
            GoEncoder::Words({0x1000, 3, 0x1100, 2, 2, 0x600, 5, 0x610, 0x1200, 0x510, 7, 0x500, 0x1000}),
            {{kFieldString, 0}, {kFieldSlice, 16}, {kFieldIface, 40}, {kFieldIface, 56}, {kFieldEface, 72},
             {kFieldEface, 88}});
  e.Eof();
  Dialect d;
  const std::vector<Record> rs = ReadAll(e.bytes(), &d);
  EXPECT_EQ(d, Dialect::kGo13);
  const std::vector<Kind> want = {Kind::kParams,   Kind::kType,     Kind::kType,     Kind::kItab,
                                  Kind::kItab,     Kind::kObject,   Kind::kObject,   Kind::kType,
                                  Kind::kTypeInfo, Kind::kObject,   Kind::kObject,   Kind::kDataRoot,
                                  Kind::kDataRoot, Kind::kDataRoot, Kind::kDataRoot, Kind::kEof};
  std::vector<Kind> kinds;
  for (const Record& r : rs) kinds.push_back(r.kind);
  ASSERT_EQ(kinds, want);
  EXPECT_EQ(rs[0].params.hchan_size, 96u);
  EXPECT_EQ(rs[3].itab, (ItabRecord{0x600, 0}));
  EXPECT_EQ(rs[4].itab, (ItabRecord{0x610, 1}));
  EXPECT_EQ(rs[5].object, (ObjectRecord{0x1000, 0x500, kObjArray, 48}));
  EXPECT_EQ(rs[6].object, (ObjectRecord{0x1100, 0x510, kObjChan, 112}));
  EXPECT_EQ(rs[7].type.name, "conservative16");
  EXPECT_TRUE(rs[7].type.fields.empty());
  EXPECT_EQ(rs[8].type_info, (TypeInfoRecord{kSynth, kTypeConservative, 0, 0, 0}));
  EXPECT_EQ(rs[9].object, (ObjectRecord{0x1200, kSynth, kObjRegular, 16}));
  EXPECT_EQ(rs[10].object, (ObjectRecord{0x1300, kSynth, kObjRegular, 16}));
  // Strings and slices point through their first word; the scalar
  // interface words (itab 0x600, type int) are no roots.
  EXPECT_EQ(rs[11].data_root, (DataRootRecord{0x7000, 0x1000}));
  // Each root keeps the word before it: the string's length (3), the iface's
  // itab (0x610), the eface's type (0x500).
  EXPECT_EQ(rs[12].data_root, (DataRootRecord{0x7010, 0x1100, 3}));
  EXPECT_EQ(rs[13].data_root, (DataRootRecord{0x7040, 0x1200, 0x610}));
  EXPECT_EQ(rs[14].data_root, (DataRootRecord{0x7060, 0x1000, 0x500}));
}

TEST(GoDialects, Go13TypesSaidTwiceAreDefinedOnce) {
  GoEncoder e(Dialect::kGo13);
  e.Params(0x1000, 0x9000);
  e.Type(0x500, 8, "main.x", true, {{kFieldPtr, 0}});
  e.Type(0x500, 8, "main.x", true, {{kFieldPtr, 0}});
  e.Eof();
  const std::vector<Record> rs = ReadAll(e.bytes());
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[1].type.fields, (std::vector<Field>{{kFieldPtr, 0}}));
}

TEST(GoDialects, BadFieldsOfEachDialect) {
  GoEncoder go13(Dialect::kGo13);
  go13.Params(0x1000, 0x9000);
  const std::string head13 = go13.bytes();
  const auto v = [](std::initializer_list<uint64_t> xs) {
    std::string s;
    for (uint64_t x : xs) {
      uint8_t b[kMaxUvarintLen];
      s.append(reinterpret_cast<const char*>(b), PutUvarint(b, x));
    }
    return s;
  };
  uint64_t off = 0;
  // object 0x1000, type 0, kind 3
  EXPECT_NE(ParseError(head13 + v({1, 0x1000, 0, 3, 0}), &off).find("objkind: expected 0, 1, 2 or 127, got 3"),
            std::string::npos);
  EXPECT_EQ(off, head13.size() + 1 + 2 + 1);
  EXPECT_NE(ParseError(head13 + v({1, 0x1000, 0, 1, 0})).find("objkind: an array or channel object without a type"),
            std::string::npos);
  // type 0x500 (8 bytes) with field kind 6, then one with a slice (3 words) in 16 bytes
  EXPECT_NE(ParseError(head13 + v({3, 0x500, 8, 0, 1, 6, 0, 0})).find("fieldkind: expected 0 to 5, got 6"),
            std::string::npos);
  EXPECT_NE(ParseError(head13 + v({3, 0x500, 16, 0, 1, 3, 0, 0})).find("fieldoffset: 0 is not inside the 16-byte"),
            std::string::npos);
  // go1.4: field kinds stop at 3 (eface); 4 is go1.3's iface.
  GoEncoder go14(Dialect::kGo14);
  go14.Params(0x1000, 0x9000);
  EXPECT_NE(ParseError(go14.bytes() + v({1, 0x1000, 8, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0}))
                .find("fieldkind: expected 0 to 3, got 4"),
            std::string::npos);
  // go1.4's params under a go1.5 header: thechar '6' read as GOARCH's length
  // leaves the rest misread, and the stream fails.
  GoEncoder fake(Dialect::kGo14);
  fake.Params(0x1000, 0x9000);
  fake.Eof();
  EXPECT_NE(ParseError("go1.5 heap dump\n" + fake.bytes().substr(16)), "");
}

}  // namespace
}  // namespace libdump::format
