// The holder rule (rule 4) on hand-written dumps: what an unnamed array of
// pointers holds is one class, whatever the number of its elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "testing/typed_dump_testutil.h"

namespace libdump::typing {
namespace {

using Words = std::vector<uint64_t>;
constexpr uint64_t kCache = 0x100;

// A typed Cache (0x10000) whose +8 points to an unnamed array of 8 words
// (0x11000): `buckets`, pointing to three 16-byte entries (0x12000,
// 0x12100, 0x12200), each {value, key}, the value a 64-byte block.
std::map<uint64_t, std::string> Classes(const Words& buckets) {
  return ClassesOfWritten("holder_rule_test", [&](format::Writer& w) {
    w.Header();
    w.Params({0, 8, 0, 0x10000, 0x20000});
    auto obj = [&](uint64_t addr, uint64_t type, const Words& words) {
      w.Object({addr, type, format::kObjRegular, words.size() * 8}, words.data());
    };
    obj(0x10000, kCache, {7, 0x11000, 3, 0});
    obj(0x11000, 0, buckets);
    obj(0x12000, 0, {0x13000, 1});
    obj(0x12100, 0, {0x13100, 2});
    obj(0x12200, 0, {0x13200, 3});
    for (uint64_t b : {0x13000, 0x13100, 0x13200}) obj(b, 0, Words(8, 0x6161616161616161ULL));
    w.Type({kCache, 32, "Cache", false, {{format::kFieldPtr, 8}}});
    w.DataRoot({0x600000, 0x10000});
    w.Eof();
  });
}

TEST(HolderRule, WhatAnArrayOfPointersHoldsIsOneClass) {
  const auto c = Classes({0, 0, 0x12000, 0x12100, 0, 0, 0x12200, 0});
  EXPECT_EQ(c.at(0x11000), "(held by Cache +0x8)");
  // The elements and what they hold: one class for the member, not one per offset chain.
  for (uint64_t e : {0x12000, 0x12100, 0x12200}) EXPECT_EQ(c.at(e), "(held by Cache +0x8 +\u2026)") << std::hex << e;
  for (uint64_t b : {0x13000, 0x13100, 0x13200}) EXPECT_EQ(c.at(b), "(held by Cache +0x8 +\u2026)") << std::hex << b;
}

TEST(HolderRule, WhatAStructHoldsAtAnyOffsetIsOneClassPerMember) {
  // A word that is no pointer: a struct, its children at three offsets.
  const auto c = Classes({5, 0, 0x12000, 0x12100, 0, 0, 0x12200, 0});
  for (uint64_t e : {0x12000, 0x12100, 0x12200}) EXPECT_EQ(c.at(e), "(held by Cache +0x8 +\u2026)") << std::hex << e;
}

TEST(HolderRule, AMemberIsNamedByTheClassFields) {
  // The dump's type names its pointer field: the member's name, not its offset.
  const auto c = ClassesOfWritten("holder_rule_member", [&](format::Writer& w) {
    w.Header();
    w.Params({0, 8, 0, 0x10000, 0x20000});
    const Words cache = {7, 0x11000, 3, 0}, body = {0x12000, 0}, leaf = {1, 2};
    w.Object({0x10000, kCache, format::kObjRegular, 32}, cache.data());
    w.Object({0x11000, 0, format::kObjRegular, 16}, body.data());
    w.Object({0x12000, 0, format::kObjRegular, 16}, leaf.data());
    w.Type({kCache, 32, "Cache", false, {{format::kFieldPtr, 8}}});
    w.TypeFields({kCache, {{0, format::kFieldInt, 8, "hits"}, {8, format::kFieldPtr, 8, "entries_"}}});
    w.DataRoot({0x600000, 0x10000});
    w.Eof();
  });
  EXPECT_EQ(c.at(0x11000), "(held by Cache::entries_)");
  EXPECT_EQ(c.at(0x12000), "(held by Cache::entries_ +\u2026)");
}

}  // namespace
}  // namespace libdump::typing
