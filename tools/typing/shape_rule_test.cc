// The shape rule (rule 3) on hand-written dumps: what it proves must not
// depend on where the allocator put the pieces nor on what a slot held
// before the program wrote it (the debug heap's poison in a slot's slack).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "testing/typed_dump_testutil.h"

namespace libdump::typing {
namespace {

using Words = std::vector<uint64_t>;
constexpr uint64_t kPoison = 0xdfdfdfdfdfdfdfdfULL;

struct Layout {
  uint64_t buckets, n1, n2, n3;  // an unordered_map's bucket array and its nodes
  uint64_t map, b1, b2;          // a deque's map and its two blocks
  bool buckets_last;             // the bucket array's record after the nodes'
  uint64_t slack = kPoison;      // the words past the buckets, and the deque map's unused ends
  int typed = 0;                 // objects of a typed class besides (the first holds a string's triple)
};

constexpr uint64_t kTyped = 0x100;

// A global unordered_map<long, long> at 0x600000 {_M_buckets,
// _M_bucket_count, _M_before_begin} of three nodes in a bucket array of five
// (N1 in bucket 1, N2 in 3, N3 in 4: a bucket points to the node before its
// first), the array's slot three words longer; a global deque at 0x600100
// whose 8-word map holds its two 512-byte blocks at words 3 and 4.
std::map<uint64_t, std::string> Classes(const Layout& l) {
  return ClassesOfWritten("shape_rule_test", [&](format::Writer& w) {
    w.Header();
    w.Params({0, 8, 0, 0x10000, 0x50000});
    std::vector<std::pair<uint64_t, Words>> objects;
    const Words buckets = {0, 0x600010, 0, l.n1, l.n2, l.slack, l.slack, l.slack};
    if (!l.buckets_last) objects.push_back({l.buckets, buckets});
    objects.push_back({l.n1, {l.n2, 1, 10}});
    objects.push_back({l.n2, {l.n3, 3, 30}});
    objects.push_back({l.n3, {0, 4, 40}});
    if (l.buckets_last) objects.push_back({l.buckets, buckets});
    objects.push_back({l.map, {l.slack, l.slack, l.slack, l.b1, l.b2, l.slack, l.slack, l.slack}});
    objects.push_back({l.b1, Words(64, 7)});
    objects.push_back({l.b2, Words(64, 8)});
    for (const auto& [addr, words] : objects) w.Object({addr, 0, format::kObjRegular, words.size() * 8}, words.data());
    // Typed objects (the dump names them) at 0x40000...: the first holds a
    // std::string {pointer, length, capacity} at +8 to a buffer at 0x3f000.
    if (l.typed > 0) {
      Words buffer(4, 0);
      std::memcpy(buffer.data(), "twenty characters!!!", 20);
      w.Object({0x3f000, 0, format::kObjRegular, 32}, buffer.data());
    }
    for (int k = 0; k < l.typed; ++k) {
      const Words t = k == 0 ? Words{7, 0x3f000, 20, 20} : Words{7, 0, 0, 0};
      w.Object({0x40000 + 0x100 * static_cast<uint64_t>(k), kTyped, format::kObjRegular, 32}, t.data());
    }
    if (l.typed > 0) w.Type({kTyped, 32, "Typed", false, {{format::kFieldPtr, 8}}});
    w.DataRoot({0x600000, l.buckets});
    w.DataRoot({0x600010, l.n1});
    w.DataRoot({0x600100, l.map});
    for (int k = 0; k < l.typed; ++k) w.DataRoot({0x600200 + 8 * static_cast<uint64_t>(k), 0x40000 + 0x100 * static_cast<uint64_t>(k)});
    w.Eof();
  });
}


void ExpectShapes(const Layout& l) {
  const auto c = Classes(l);
  EXPECT_EQ(c.at(l.buckets), "std::unordered_map buckets");
  for (uint64_t n : {l.n1, l.n2, l.n3}) EXPECT_EQ(c.at(n), "std::unordered_map node") << std::hex << n;
  EXPECT_EQ(c.at(l.map), "std::deque map");
  EXPECT_EQ(c.at(l.b1), "std::deque block");
  EXPECT_EQ(c.at(l.b2), "std::deque block");
}

TEST(ShapeRule, HashNodesAndBucketsInAnyOrderWithPoisonedSlack) {
  // The array below its nodes, first in the file.
  ExpectShapes({0x10000, 0x11000, 0x11100, 0x11200, 0x20000, 0x21000, 0x21200, false});
  // Above them and last (a quarantine's order: the array reuses a later slot).
  ExpectShapes({0x30000, 0x11000, 0x11100, 0x11200, 0x20000, 0x21000, 0x21200, true});
  // Nodes in reverse address order, the blocks' below their map.
  ExpectShapes({0x30000, 0x11200, 0x11100, 0x11000, 0x22000, 0x21200, 0x21000, true});
  // A fresh slot's slack is zero.
  ExpectShapes({0x10000, 0x11000, 0x11100, 0x11200, 0x20000, 0x21000, 0x21200, false, 0});
}

// Most objects named by a stronger rule (a dump DWARF typed): the rule reads
// only the unnamed ones and their holders, and proves the same shapes.
TEST(ShapeRule, TheSameShapesWhenMostObjectsAreNamed) {
  Layout l{0x10000, 0x11000, 0x11100, 0x11200, 0x20000, 0x21000, 0x21200, true};
  l.typed = 40;
  ExpectShapes(l);
  const auto c = Classes(l);
  EXPECT_EQ(c.at(0x3f000), "std::string buffer (held by Typed +0x8)");
  EXPECT_EQ(c.at(0x40100), "Typed");
}

TEST(ShapeRule, SlackThatIsNotPoisonStillDisprovesBuckets) {
  // Text where the slack is: not a bucket array (two words point nowhere),
  // nor a deque map; the nodes stay unproved with it.
  Layout l{0x10000, 0x11000, 0x11100, 0x11200, 0x20000, 0x21000, 0x21200, false, 0x4141414141414141ULL};
  const auto c = Classes(l);
  EXPECT_NE(c.at(l.buckets), "std::unordered_map buckets");
  EXPECT_NE(c.at(l.n1), "std::unordered_map node");
  EXPECT_NE(c.at(l.map), "std::deque map");
}

}  // namespace
}  // namespace libdump::typing
