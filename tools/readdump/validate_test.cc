#include "validate.h"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

namespace libdump::readdump {
namespace {

using namespace libdump::format;

constexpr uint64_t kHeapStart = 0x10000, kHeapEnd = 0x20000;
constexpr uint64_t kNode = 0x5000;

std::string Words(std::initializer_list<uint64_t> words, int size = 8, bool big = false) {
  std::string out;
  for (uint64_t w : words) {
    for (int i = 0; i < size; ++i) {
      const int shift = 8 * (big ? size - 1 - i : i);
      out += static_cast<char>((w >> shift) & 0xff);
    }
  }
  return out;
}

// Header, `body`, eof.
std::string Dump(const std::function<void(Writer&)>& body) {
  std::ostringstream os;
  OstreamSink sink(os);
  Writer w(sink);
  w.Header();
  body(w);
  w.Eof();
  return os.str();
}

void Obj(Writer& w, uint64_t addr, uint64_t type, uint64_t kind, const std::string& payload) {
  w.Object({addr, type, kind, payload.size()}, payload.data());
}

void Params(Writer& w, uint64_t ptr_size = 8, bool big = false, uint64_t hchan = 0) {
  w.Params({big ? 1u : 0u, ptr_size, hchan, kHeapStart, kHeapEnd});
}

void NodeType(Writer& w, uint64_t size = 24) {
  w.Type({kNode, size, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 16}}});
}

struct StreamReader {
  std::istringstream in;
  Reader reader;
  StreamReader(const std::string& bytes, size_t buffer) : in(bytes), reader(in, {.buffer_size = buffer}) {}
};

std::vector<Problem> Validate(const std::string& bytes, size_t buffer = 1 << 20) {
  std::vector<Problem> out;
  const uint64_t n = ValidateDump(
      [&] {
        auto s = std::make_shared<StreamReader>(bytes, buffer);
        return std::shared_ptr<Reader>(s, &s->reader);
      },
      [&](const Problem& p) { out.push_back(p); });
  EXPECT_EQ(n, out.size());
  return out;
}

// Offset of the i-th record, to check where a problem is reported.
uint64_t RecordAt(const std::string& bytes, size_t i) {
  std::istringstream in(bytes);
  Reader reader(in);
  Record r;
  for (size_t k = 0; reader.Next(r); ++k) {
    if (k == i) return r.offset;
  }
  ADD_FAILURE() << "no record " << i;
  return 0;
}

std::string Messages(const std::vector<Problem>& ps) {
  std::string s;
  for (const Problem& p : ps) s += std::to_string(p.offset) + ": " + p.message + "\n";
  return s;
}

TEST(Validate, GoodDumpWithForwardTypeReferences) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    // The object comes before its type, as libdump writes polymorphic classes.
    Obj(w, 0x10000, kNode, kObjRegular, Words({0x10018, 1, 0x1001f}));  // start, interior
    Obj(w, 0x10018, 0, kObjRegular, Words({0x10100, 0x10200}));  // untyped: not scanned
    NodeType(w);
    w.Goroutine({0x7000, 0x7f00, 1, 0, kStatusRunning, false, false, 0, ""});
    w.Frame({0x7f00, 0x7f40, 0, 0, "f"});
    w.Frame({0x7f40, 0, 0, 0, "main"});
    w.StackRoot({0x7f08, 0x10000, 0x7f40});
    w.DataRoot({0x600000, 0});               // null
    w.OtherRoot("below heap", 0x8000);       // outside the heap range
    w.OtherRoot("above heap", kHeapEnd);     // heap_end itself is outside
    w.Finalizer({0x10000, 1, 2, 0, kNode});
    w.AllocStack({0x10018, 16, {0x401000}});
    w.ThreadInfo({0x7000, 1, "main"});
  });
  EXPECT_EQ(Messages(Validate(d)), "");
}

TEST(Validate, DanglingFieldPointerNamesObjectRecordAndWord) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    NodeType(w);
    Obj(w, 0x10000, kNode, kObjRegular, Words({0x10018, 0, 0x10100}));
    Obj(w, 0x10018, 0, kObjRegular, Words({0}));
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 1u) << Messages(ps);
  EXPECT_EQ(ps[0].offset, RecordAt(d, 2));
  EXPECT_EQ(ps[0].kind, Kind::kObject);
  EXPECT_EQ(ps[0].message, "object 0x10000 \"Node\": pointer at +16 is 0x10100, in the heap but in no dumped object");
}

TEST(Validate, ArrayElementsAreScannedAndPartialElementsIgnored) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    NodeType(w);
    // Two whole Nodes and 16 bytes of a third, 64 bytes in all. Words at +8,
    // +32 and +56 are no fields; the third element's +16 word is absent.
    Obj(w, 0x10000, kNode, kObjArray,
        Words({0x10000, 0x10400, 0, 0, 0x10300, 0x10048, 0x10500, 0x10600}));
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 2u) << Messages(ps);
  EXPECT_NE(ps[0].message.find("pointer at +40 is 0x10048"), std::string::npos) << Messages(ps);
  EXPECT_NE(ps[1].message.find("pointer at +48 is 0x10500"), std::string::npos) << Messages(ps);
}

TEST(Validate, RegularObjectScansOnlyTheFirstElement) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    NodeType(w);
    // Size-class slack after the Node holds garbage that is not a field.
    Obj(w, 0x10000, kNode, kObjRegular, Words({0, 0, 0, 0x10500}));
  });
  EXPECT_EQ(Messages(Validate(d)), "");
}

TEST(Validate, ChannelElementsStartAfterTheHeader) {
  const std::string d = Dump([](Writer& w) {
    Params(w, 8, false, 16);
    w.Type({0x5100, 8, "Elem*", false, {{kFieldPtr, 0}}});
    // 16-byte header (not scanned), then elements of one pointer each.
    Obj(w, 0x10000, 0x5100, kObjChan, Words({0x10700, 0x10700, 0x10000, 0x10800}));
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 1u) << Messages(ps);
  EXPECT_NE(ps[0].message.find("pointer at +24 is 0x10800"), std::string::npos) << Messages(ps);
}

TEST(Validate, BigEndianFourBytePointers) {
  const std::string d = Dump([](Writer& w) {
    Params(w, 4, true);
    w.Type({kNode, 8, "Pair", false, {{kFieldPtr, 0}, {kFieldPtr, 4}}});
    Obj(w, 0x10000, kNode, kObjRegular, Words({0x10004, 0x10100}, 4, true));
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 1u) << Messages(ps);
  EXPECT_NE(ps[0].message.find("pointer at +4 is 0x10100"), std::string::npos) << Messages(ps);
}

// The payload streams through a 64-byte buffer, so words straddle chunks.
TEST(Validate, PointerWordsAcrossChunkBoundaries) {
  std::string payload;
  // 1000 Nodes: the object spans [0x10000, 0x15dc0).
  for (int i = 0; i < 1000; ++i) {
    payload += Words({i == 0 ? 0x18000u : 0x10000u, 0, i == 777 ? 0x1f000u : 0x15db8u});
  }
  const std::string d = Dump([&](Writer& w) {
    Params(w);
    NodeType(w);
    Obj(w, 0x10000, kNode, kObjArray, payload);
  });
  for (size_t buffer : {64, 100, 4096}) {
    const auto ps = Validate(d, buffer);
    ASSERT_EQ(ps.size(), 2u) << "buffer " << buffer << "\n" << Messages(ps);
    EXPECT_NE(ps[0].message.find("pointer at +0 is 0x18000"), std::string::npos) << Messages(ps);
    EXPECT_NE(ps[1].message.find("pointer at +" + std::to_string(777 * 24 + 16) + " is 0x1f000"),
              std::string::npos) << Messages(ps);
  }
}

TEST(Validate, Roots) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    Obj(w, 0x10000, 0, kObjRegular, Words({0}));
    w.Goroutine({0x7000, 0x7f00, 1, 0, kStatusRunning, false, false, 0, ""});
    w.Frame({0x7f00, 0, 0, 0, "main"});
    w.StackRoot({0x7f08, 0x10008, 0x7f00});  // one past the object
    w.StackRoot({0x7f10, 0x10000, 0x7e00});  // no such frame
    w.DataRoot({0x600000, 0x1ffff});
    w.OtherRoot("tls", 0x10007);             // interior: fine
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 3u) << Messages(ps);
  EXPECT_EQ(ps[0].offset, RecordAt(d, 4));
  EXPECT_EQ(ps[0].message, "stack root at 0x7f08: rootptr 0x10008 is in the heap but in no dumped object");
  EXPECT_EQ(ps[1].offset, RecordAt(d, 5));
  EXPECT_EQ(ps[1].message, "stack root at 0x7f10: frame 0x7e00 is not a dumped frame");
  EXPECT_EQ(ps[2].kind, Kind::kDataRoot);
}

TEST(Validate, FrameChains) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    w.Goroutine({0x7000, 0x7f00, 1, 0, kStatusRunning, false, false, 0, ""});  // 1
    w.Frame({0x7f00, 0x7f40, 0, 0, "a"});                                      // 2: parent missing
    w.Goroutine({0x7100, 0x8f00, 2, 0, kStatusRunning, false, false, 0, ""});  // 3: loops
    w.Frame({0x8f00, 0x8f40, 0, 0, "b"});                                      // 4
    w.Frame({0x8f40, 0x8f00, 0, 0, "c"});                                      // 5
    w.Goroutine({0x7200, 0x8f40, 3, 0, kStatusRunning, false, false, 0, ""});  // 6: shares c
    w.Goroutine({0x7300, 0x9f00, 4, 0, kStatusRunning, false, false, 0, ""});  // 7: no top frame
    w.Frame({0xaf00, 0, 0, 0, "orphan"});                                      // 8
    w.Goroutine({0x7400, 0, 5, 0, kStatusIdle, false, false, 0, ""});          // 9: no frames: fine
    w.Goroutine({0x7000, 0, 6, 0, kStatusIdle, false, false, 0, ""});          // 10: duplicate
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 6u) << Messages(ps);
  const std::vector<std::pair<size_t, std::string>> want = {
      {2, "frame 0x7f00 \"a\": parent 0x7f40 is not a dumped frame"},
      {3, "thread 0x7100: the frame chain loops back to frame 0x8f00"},
      {6, "thread 0x7200: frame 0x8f40 is also on the stack of thread 0x7100 at offset " +
              std::to_string(RecordAt(d, 3))},
      {7, "thread 0x7300: top frame 0x9f00 is not a dumped frame"},
      {8, "frame 0xaf00 \"orphan\" is on no thread's stack"},
      {10, "thread 0x7000 is defined again (first at offset " + std::to_string(RecordAt(d, 1)) + ")"},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(ps[i].offset, RecordAt(d, want[i].first)) << i;
    EXPECT_EQ(ps[i].message, want[i].second);
  }
}

TEST(Validate, TypesAndObjects) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    NodeType(w);                                                    // 1
    Obj(w, 0x10000, 0x5999, kObjRegular, Words({0x10100}));         // 2: undefined type
    Obj(w, 0x10010, kNode, kObjRegular, Words({0x10100}));          // 3: smaller than Node; field +0 dangles
    Obj(w, 0x10014, 0, kObjArray, Words({0}));                      // 4: untyped array; overlaps 3
    Obj(w, 0x30000, 0, kObjRegular, Words({0}));                    // 5: outside the heap
    w.Type({0x5100, 8, "Bad", false, {{kFieldPtr, 4}}});            // 6: field runs past
    Obj(w, 0x10040, 0x5100, kObjArray, Words({0x10100, 0x10100}));  // 7: not scanned
    NodeType(w);                                                    // 8: duplicate
    w.TypeFields({0x5200, {}});                                     // 9: undefined
    w.TypeInfo({kNode, kTypePolymorphic | kTypeArray, 0x6000, 0x5300, 8});  // 10: two problems
    w.Finalizer({0x10008, 1, 2, 0, 0x5400});                        // 11: two problems
    w.AllocStack({0x10001, 8, {}});                                 // 12
    w.ThreadInfo({0x7000, 1, "ghost"});                             // 13
  });
  const auto ps = Validate(d);
  const std::vector<std::pair<size_t, std::string>> want = {
      {2, "object 0x10000: type 0x5999 is not defined"},
      {3, "object 0x10010 (8 bytes) is smaller than its type \"Node\" (24 bytes)"},
      {3, "object 0x10010 \"Node\": pointer at +0 is 0x10100, in the heap but in no dumped object"},
      {4, "object 0x10014 (8 bytes) overlaps object 0x10010 (8 bytes) at offset " + std::to_string(RecordAt(d, 3))},
      {4, "object 0x10014: an untyped object has kind array"},
      {5, "object 0x30000 (8 bytes) is not inside the heap [0x10000, 0x20000)"},
      {6, "type 0x5100 \"Bad\": pointer field at +4 runs past the type's 8 bytes"},
      {8, "type 0x5000 \"Node\" is defined again (first at offset " + std::to_string(RecordAt(d, 1)) + ")"},
      {9, "typefields: type 0x5200 is not defined"},
      {10, "typeinfo of type 0x5000: vtable 0x6000 has no itab record"},
      {10, "typeinfo of type 0x5000: element type 0x5300 is not defined"},
      {11, "finalizer: obj 0x10008 is not the start of a dumped object"},
      {11, "finalizer of 0x10008: ot 0x5400 is not a defined type"},
      {12, "allocstack: obj 0x10001 is not the start of a dumped object"},
      {13, "threadinfo \"ghost\": goroutine 0x7000 is not a dumped thread"},
  };
  ASSERT_EQ(ps.size(), want.size()) << Messages(ps);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(ps[i].offset, RecordAt(d, want[i].first)) << i;
    EXPECT_EQ(ps[i].message, want[i].second);
  }
}

// What dumptohprof refuses, validate reports (one rule set,
// libdump/format/hprof_ids.h): two objects at one address, an object at
// address 0, an object ending above 2^62, where hprof ids begin.
TEST(Validate, WhatDumptohprofRefusesIsAProblem) {
  const std::string d = Dump([](Writer& w) {
    w.Params({0, 8, 0, 0, ~uint64_t{0}});
    Obj(w, 0x10000, 0, kObjRegular, Words({0}));                      // 1
    Obj(w, 0x10000, 0, kObjRegular, Words({0}));                      // 2: same address
    Obj(w, 0x20000, 0, kObjRegular, "");                              // 3
    Obj(w, 0x20000, 0, kObjRegular, "");                              // 4: same address, zero sizes
    Obj(w, 0, 0, kObjRegular, Words({0}));                            // 5: address 0
    Obj(w, (uint64_t{1} << 62) - 8, 0, kObjRegular, Words({0}));      // 6: ends at 2^62: fine
    Obj(w, (uint64_t{1} << 62) + 0x1000, 0, kObjRegular, Words({0}));  // 7: above
  });
  const auto ps = Validate(d);
  std::vector<size_t> at;
  for (const Problem& p : ps) {
    for (size_t i = 1; i <= 7; ++i) {
      if (p.offset == RecordAt(d, i)) at.push_back(i);
    }
  }
  EXPECT_EQ(at, (std::vector<size_t>{2, 4, 5, 7})) << Messages(ps);
}

TEST(Validate, MissingParamsIsReportedAtEof) {
  const std::string d = Dump([](Writer& w) {
    NodeType(w);
    Obj(w, 0x10000, kNode, kObjRegular, Words({0x10100, 0, 0}));
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 1u) << Messages(ps);
  EXPECT_EQ(ps[0].kind, Kind::kEof);
  EXPECT_EQ(ps[0].offset, RecordAt(d, 2));
  EXPECT_EQ(ps[0].message, "the dump has no params record: heap pointers were not checked");
}

TEST(Validate, RepeatedParams) {
  const std::string d = Dump([](Writer& w) {
    Params(w);
    Params(w);
  });
  const auto ps = Validate(d);
  ASSERT_EQ(ps.size(), 1u) << Messages(ps);
  EXPECT_EQ(ps[0].message, "params repeated (first at offset 16)");
}

TEST(Validate, DumpThatChangesBetweenPassesIsAnError) {
  const std::string a = Dump([](Writer& w) { Params(w); });
  const std::string b = Dump([](Writer& w) {
    Params(w);
    Params(w);
  });
  int opened = 0;
  auto open = [&] {
    auto s = std::make_shared<StreamReader>(opened++ == 0 ? a : b, 4096);
    return std::shared_ptr<Reader>(s, &s->reader);
  };
  EXPECT_THROW(ValidateDump(open, [](const Problem&) {}), FormatError);
}

TEST(ObjectIndex, FindHandlesInteriorEndsAndZeroSizes) {
  ObjectIndex idx;
  idx.Add(0x100, 0x10, 1);
  idx.Add(0x80, 0, 2);
  idx.Add(~uint64_t{0} - 4, 100, 3);  // end overflows
  idx.Finish();
  EXPECT_EQ(idx.Find(0x7f), nullptr);
  ASSERT_NE(idx.Find(0x80), nullptr);
  EXPECT_EQ(idx.Find(0x80)->offset, 2u);
  EXPECT_EQ(idx.Find(0x81), nullptr);
  EXPECT_EQ(idx.Find(0x10f)->offset, 1u);
  EXPECT_EQ(idx.Find(0x110), nullptr);
  EXPECT_EQ(idx.Find(~uint64_t{0})->offset, 3u);
  EXPECT_EQ(idx.FindStart(0x104), nullptr);
  EXPECT_EQ(idx.FindStart(0x100)->offset, 1u);
}

}  // namespace
}  // namespace libdump::readdump
