#include "go_types.h"

#include <gtest/gtest.h>

namespace libdump::godwarf {
namespace {

GoType Ty(std::string name, uint64_t size, GoKind kind, uint32_t elem = kNoType, uint64_t count = 0) {
  GoType t;
  t.name = std::move(name);
  t.size = size;
  t.kind = kind;
  t.elem = elem;
  t.count = count;
  return t;
}

// The shapes Go's DWARF gives (checked against readelf --debug-dump=info of
// tests/godump/producer.go built by Go 1.19): a struct typedef'd to its own
// name, pointers to the typedef, a slice struct with its element, a string,
// interfaces as typedefs.
struct Table {
  GoProgram p{8};
  uint32_t i64, u8, node_struct, node, pnode, str, eface, iface, slice_pnode, arr;

  Table() {
    i64 = p.Add(Ty("int", 8, GoKind::kInt));
    u8 = p.Byte();
    node_struct = p.Add(Ty("main.node", 48, GoKind::kStruct));
    node = p.Add(Ty("main.node", 0, GoKind::kTypedef, node_struct));
    pnode = p.Add(Ty("*main.node", 8, GoKind::kPointer, node));
    str = p.Add(Ty("string", 16, GoKind::kString));
    eface = p.Add(Ty("interface {}", 16, GoKind::kEface));
    iface = p.Add(Ty("error", 16, GoKind::kIface));
    slice_pnode = p.Add(Ty("[]*main.node", 24, GoKind::kSlice, pnode));
    arr = p.Add(Ty("[2]*main.node", 16, GoKind::kArray, pnode, 2));
    // next *node @0, val int @8, name string @16, v interface{} @32
    p.mutable_type(node_struct).members = {
        {"next", 0, pnode}, {"val", 8, i64}, {"name", 16, str}, {"v", 32, eface}};
    p.AddGlobal({"main.head", 0x5000, pnode});
    p.AddGlobal({"main.list", 0x5020, slice_pnode});
    p.AddGlobal({"main.err", 0x5010, iface});
    p.Finish();
  }
};

TEST(GoTypes, PointerWordsFollowTheGarbageCollector) {
  Table t;
  std::vector<uint64_t> w;
  ASSERT_TRUE(t.p.PointerWords(t.node, 0, w, 100));
  // next, name.str, the interface's data word; not val, not name.len, not
  // the interface's type word (unmarked in Go's bitmaps).
  EXPECT_EQ(w, (std::vector<uint64_t>{0, 16, 40}));
  w.clear();
  ASSERT_TRUE(t.p.PointerWords(t.arr, 8, w, 100));
  EXPECT_EQ(w, (std::vector<uint64_t>{8, 16}));
  w.clear();
  EXPECT_FALSE(t.p.PointerWords(t.node, 0, w, 2));  // more than the limit
}

TEST(GoTypes, TargetAtFindsWhatAWordPointsTo) {
  Table t;
  WordTarget next = t.p.TargetAt(t.node, 0);
  EXPECT_EQ(next.what, WordTarget::kValue);
  EXPECT_EQ(next.type, t.node);
  WordTarget bytes = t.p.TargetAt(t.node, 16);
  EXPECT_EQ(bytes.what, WordTarget::kElements);
  EXPECT_EQ(bytes.type, t.u8);
  EXPECT_EQ(t.p.TargetAt(t.node, 8).what, WordTarget::kNothing);   // val: a scalar
  EXPECT_EQ(t.p.TargetAt(t.node, 24).what, WordTarget::kNothing);  // name.len
  EXPECT_EQ(t.p.TargetAt(t.node, 32).what, WordTarget::kNothing);  // the interface's type word
  EXPECT_EQ(t.p.TargetAt(t.node, 40).what, WordTarget::kEfaceData);
  WordTarget backing = t.p.TargetAt(t.slice_pnode, 0);
  EXPECT_EQ(backing.what, WordTarget::kElements);
  EXPECT_EQ(backing.type, t.pnode);
  EXPECT_EQ(t.p.TargetAt(t.arr, 8).type, t.node);  // the second element
  EXPECT_EQ(t.p.TargetAt(t.iface, 8).what, WordTarget::kIfaceData);
}

TEST(GoTypes, GlobalsByAddressInsideTheirValue) {
  Table t;
  ASSERT_NE(t.p.GlobalAt(0x5000), nullptr);
  EXPECT_EQ(t.p.GlobalAt(0x5000)->name, "main.head");
  EXPECT_EQ(t.p.GlobalAt(0x5007)->name, "main.head");
  EXPECT_EQ(t.p.GlobalAt(0x5008), nullptr);  // between head and err
  EXPECT_EQ(t.p.GlobalAt(0x5018)->name, "main.err");
  EXPECT_EQ(t.p.GlobalAt(0x5037)->name, "main.list");
  EXPECT_EQ(t.p.GlobalAt(0x5038), nullptr);
  EXPECT_EQ(t.p.GlobalAt(0x4fff), nullptr);
}

TEST(GoTypes, LocalsByPcAndFrameOffset) {
  Table t;
  // f at 0x400000: name (a string) at CFA-32 in [0x400010, 0x400040), then in
  // a register; next (*main.node) at CFA-8 throughout.
  t.p.AddLocal(0x400000, 0x400010, 0x400040, -32, t.str);
  t.p.AddLocal(0x400000, 0x400000, 0x400100, -8, t.pnode);
  uint64_t inner = 99;
  EXPECT_EQ(t.p.LocalAt(0x400000, 0x400020, -32, &inner), t.str);
  EXPECT_EQ(inner, 0u);
  EXPECT_EQ(t.p.LocalAt(0x400000, 0x400020, -24, &inner), t.str);  // the string's length word
  EXPECT_EQ(inner, 8u);
  EXPECT_EQ(t.p.LocalAt(0x400000, 0x400041, -32, &inner), kNoType);  // past the range, even at pc - 1
  EXPECT_EQ(t.p.LocalAt(0x400000, 0x400040, -32, &inner), t.str);   // a return address: its call is inside
  EXPECT_EQ(t.p.LocalAt(0x400000, 0x400020, -8, &inner), t.pnode);
  EXPECT_EQ(t.p.LocalAt(0x400000, 0x400020, -16, &inner), kNoType);  // between the two
  EXPECT_EQ(t.p.LocalAt(0x500000, 0x400020, -8, &inner), kNoType);   // another function
}

TEST(GoTypes, DirectIfaceIsPointerShaped) {
  Table t;
  EXPECT_TRUE(t.p.DirectIface(t.pnode));
  EXPECT_FALSE(t.p.DirectIface(t.node));
  EXPECT_FALSE(t.p.DirectIface(t.str));
  const uint32_t one = t.p.Add(Ty("[1]*main.node", 8, GoKind::kArray, t.pnode, 1));
  EXPECT_TRUE(t.p.DirectIface(one));
}

TEST(GoTypes, TypedefCyclesEnd) {
  GoProgram p;
  const uint32_t a = p.Add(Ty("a", 0, GoKind::kTypedef, 1));
  p.Add(Ty("b", 0, GoKind::kTypedef, 0));
  EXPECT_EQ(p.Resolve(a), kNoType);
  EXPECT_EQ(p.TargetAt(a, 0).what, WordTarget::kNothing);
  std::vector<uint64_t> w;
  EXPECT_TRUE(p.PointerWords(a, 0, w, 10));
  EXPECT_TRUE(w.empty());
  // An array of itself, as a corrupt binary could say: refused, not recursed forever.
  const uint32_t self = p.Add(Ty("[2]self", 16, GoKind::kArray, 0, 2));
  p.mutable_type(self).elem = self;
  EXPECT_FALSE(p.PointerWords(self, 0, w, 10));
  EXPECT_EQ(p.TargetAt(self, 8).what, WordTarget::kNothing);
  EXPECT_FALSE(p.DirectIface(self));
}

}  // namespace
}  // namespace libdump::godwarf
