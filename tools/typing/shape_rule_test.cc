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

// Other libraries' layouts that look like a bucket array of words that are
// 0, node starts and one word elsewhere, but are no libstdc++ _Hashtable:
// each must stay unnamed as an unordered_map.
std::map<uint64_t, std::string> ClassesOfObjects(const std::vector<std::pair<uint64_t, Words>>& objects,
                                                 const std::vector<std::pair<uint64_t, uint64_t>>& roots) {
  return ClassesOfWritten("shape_rule_other", [&](format::Writer& w) {
    w.Header();
    w.Params({0, 8, 0, 0x10000, 0x50000});
    for (const auto& [addr, words] : objects) w.Object({addr, 0, format::kObjRegular, words.size() * 8}, words.data());
    for (const auto& [slot, ptr] : roots) w.DataRoot({slot, ptr});
    w.Eof();
  });
}

void ExpectNoHashShape(const std::map<uint64_t, std::string>& c) {
  for (const auto& [addr, name] : c) EXPECT_EQ(name.find("std::unordered_map"), std::string::npos) << std::hex << addr << ": " << name;
}

TEST(ShapeRule, AbseilNodeHashMapNodesAreNoBucketArrays) {
  // absl::node_hash_map<int, std::unique_ptr<Blob>>: a node {key, Blob*}
  // (the key the one word that is no pointer), the blob's first bytes 0; the
  // backing array {control bytes, slots} that points at the nodes.
  std::vector<std::pair<uint64_t, Words>> objects;
  Words backing = {0x8080808080800201ULL, 0x80808080808080ffULL, 0x11000, 0x11100};
  objects.push_back({0x10000, backing});
  for (uint64_t k = 0; k < 2; ++k) {
    objects.push_back({0x11000 + 0x100 * k, {k + 5, 0x12000 + 0x100 * k}});
    objects.push_back({0x12000 + 0x100 * k, Words(26, 0)});
  }
  ExpectNoHashShape(ClassesOfObjects(objects, {{0x600000, 0x10000}, {0x600008, 0x10010}}));
}

TEST(ShapeRule, BoostUnorderedMapBucketsAreNotLibstdcxxs) {
  // boost::unordered_map (1.74): bucket_count + 1 buckets, the last the
  // sentinel whose next is the first node; a bucket points to the link before
  // its first node (a node's next word, or the sentinel inside the array).
  // Nodes {next, bucket info, value}.
  std::vector<std::pair<uint64_t, Words>> objects;
  objects.push_back({0x10000, {0x10018, 0, 0x11000, 0x11100}});  // buckets 0-2, the sentinel at +0x18
  objects.push_back({0x11000, {0x11100, 0, 10}});
  objects.push_back({0x11100, {0x11200, 2, 20}});
  objects.push_back({0x11200, {0, 2, 30}});
  ExpectNoHashShape(ClassesOfObjects(objects, {{0x600000, 0x10000}}));
}

TEST(ShapeRule, AHashtableHeaderInTheHeapMustCountItsNodes) {
  // A std::unordered_map allocated alone {buckets, bucket count, before-begin,
  // element count}: proved with its counts, refused when they disagree.
  auto layout = [](uint64_t bucket_count, uint64_t elements) {
    return std::vector<std::pair<uint64_t, Words>>{
        {0x10000, {0x20010, 0, 0x11000}},
        {0x11000, {0x11100, 1, 10}},
        {0x11100, {0, 2, 20}},
        {0x20000, {0x10000, bucket_count, 0x11000, elements, 0, 0, 0}},
    };
  };
  const auto good = ClassesOfObjects(layout(3, 2), {{0x600000, 0x20000}});
  EXPECT_EQ(good.at(0x10000), "std::unordered_map buckets");
  EXPECT_EQ(good.at(0x11000), "std::unordered_map node");
  EXPECT_EQ(good.at(0x11100), "std::unordered_map node");
  ExpectNoHashShape(ClassesOfObjects(layout(3, 5), {{0x600000, 0x20000}}));   // five elements counted, two found
  ExpectNoHashShape(ClassesOfObjects(layout(64, 2), {{0x600000, 0x20000}}));  // more buckets than the array holds
}

}  // namespace
}  // namespace libdump::typing
