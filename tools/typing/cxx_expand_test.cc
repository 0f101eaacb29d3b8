#include "cxx_expand.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

// abseil's btree, when the build has it (ABSL_BTREE in CMake) and without
// the generation counters abseil adds under sanitizers (a layout the rule
// does not read).
#if defined(LIBDUMP_TEST_ABSL_BTREE) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CXX_EXPAND_TEST_BTREE 1
#include <absl/container/btree_map.h>
#include <malloc.h>
#endif

// Real libstdc++ containers of this process, expanded through this test's
// own DWARF (built -g): what each reaches is what the container holds.
struct CxxExpandTestItem {
  long id;
  std::string name;
};
struct CxxExpandTestHolder {
  std::vector<CxxExpandTestItem> items;
  std::map<int, CxxExpandTestItem> by_id;
  std::unordered_map<int, long> counts;
  std::list<int> order;
  std::deque<long> queue;
  std::unique_ptr<CxxExpandTestItem> one;
  std::string short_name;
  std::string long_name;
};
CxxExpandTestHolder* cxx_expand_test_holder;
#ifdef CXX_EXPAND_TEST_BTREE
struct CxxExpandTestTree {
  absl::btree_map<int, CxxExpandTestItem> map;
};
CxxExpandTestTree* cxx_expand_test_tree;
#endif

namespace libdump::typing {
namespace {

// This process's bytes in [base, base + size): a value's own, as a dump
// holds an object's payload.
class Bytes : public MemoryReader {
 public:
  Bytes(const void* base, size_t size) : base_(reinterpret_cast<uint64_t>(base)), size_(size) {}
  bool Read(uint64_t addr, void* out, size_t n) const override {
    if (addr < base_ || addr - base_ > size_ || size_ - (addr - base_) < n) return false;
    std::memcpy(out, reinterpret_cast<const void*>(addr), n);
    return true;
  }

 private:
  uint64_t base_;
  size_t size_;
};

uint64_t A(const void* p) { return reinterpret_cast<uint64_t>(p); }

class CxxExpandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { program_ = CxxProgram::Open("/proc/self/exe").release(); }
  static void TearDownTestSuite() { delete program_; }

  std::vector<Reach> Expand(const void* at, size_t size, uint32_t type, Reach::Naming naming = Reach::kValue,
                            uint64_t count = 1) {
    Reach r;
    r.addr = A(at);
    r.program = program_;
    r.type = type;
    r.naming = naming;
    r.count = count;
    std::vector<Reach> out;
    uint64_t budget = 1 << 20;
    expander_.Expand(r, Bytes(at, size), budget, out);
    return out;
  }
  static const Reach* Find(const std::vector<Reach>& out, const void* addr) {
    for (const Reach& r : out) {
      if (r.addr == A(addr)) return &r;
    }
    return nullptr;
  }

  static CxxProgram* program_;
  Expander expander_{nullptr};
};
CxxProgram* CxxExpandTest::program_ = nullptr;

TEST_F(CxxExpandTest, ContainersReachTheirHeapParts) {
  CxxExpandTestHolder h;
  for (int i = 0; i < 5; ++i) h.items.push_back({i, std::string(20 + i, 'x')});
  for (int i = 0; i < 9; ++i) h.by_id[i] = {i, std::string(30, 'y')};
  for (int i = 0; i < 6; ++i) h.counts[i] = i;
  for (int i = 0; i < 4; ++i) h.order.push_back(i);
  for (int i = 0; i < 100; ++i) h.queue.push_back(i);
  h.one = std::make_unique<CxxExpandTestItem>();
  h.short_name = "short";
  h.long_name = std::string(40, 'z');
  cxx_expand_test_holder = &h;

  const uint32_t t = program_->FindType("CxxExpandTestHolder");
  ASSERT_NE(t, kNoCxxType);
  const std::vector<Reach> out = Expand(&h, sizeof h, t);

  const Reach* items = Find(out, h.items.data());
  ASSERT_NE(items, nullptr);
  EXPECT_EQ(ReachName(*items), "CxxExpandTestItem[]");
  EXPECT_EQ(items->count, 5u);
  const Reach* one = Find(out, h.one.get());
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(ReachName(*one), "CxxExpandTestItem");
  const Reach* name = Find(out, h.long_name.data());
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(ReachName(*name), "std::string buffer");
  EXPECT_EQ(name->count, h.long_name.capacity() + 1);
  EXPECT_EQ(Find(out, h.short_name.data()), nullptr);  // the local buffer
  const Reach* first = Find(out, &*h.order.begin());
  EXPECT_EQ(first, nullptr);  // a list reaches its node, not the value inside it
  size_t nodes = 0, map_nodes = 0, hash_nodes = 0, buckets = 0, deque_maps = 0;
  for (const Reach& r : out) {
    const std::string n = ReachName(r);
    nodes += n == "std::_List_node<int>";
    map_nodes += n == "std::_Rb_tree_node<std::pair<int const, CxxExpandTestItem> >";
    hash_nodes += n.starts_with("std::__detail::_Hash_node<std::pair<int const, long int>, ");
    buckets += n == "std::__detail::_Hash_node_base*[]";
    deque_maps += n == "long int*[]";
  }
  EXPECT_EQ(nodes, 1u);
  EXPECT_EQ(map_nodes, 1u);  // the root
  EXPECT_EQ(hash_nodes, 1u);  // the first
  EXPECT_EQ(buckets, 1u);
  EXPECT_EQ(deque_maps, 1u);

  // The vector's body: each element's string buffer.
  const std::vector<Reach> body = Expand(h.items.data(), h.items.size() * sizeof(CxxExpandTestItem), items->type,
                                         Reach::kArray, items->count);
  ASSERT_EQ(body.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(body[i].addr, A(h.items[i].name.data()));
    EXPECT_EQ(body[i].count, h.items[i].name.capacity() + 1);
  }
}

TEST_F(CxxExpandTest, NodesReachTheWholeContainer) {
  CxxExpandTestHolder h;
  for (int i = 0; i < 50; ++i) h.by_id[i * 7 % 50] = {i, std::string(25, 'n')};
  for (int i = 0; i < 30; ++i) h.order.push_back(i);
  const uint32_t t = program_->FindType("CxxExpandTestHolder");
  ASSERT_NE(t, kNoCxxType);
  std::vector<Reach> todo;
  for (const Reach& r : Expand(&h, sizeof h, t)) {
    const std::string n = ReachName(r);
    if (n.starts_with("std::_Rb_tree_node<") || n == "std::_List_node<int>") todo.push_back(r);
  }
  ASSERT_EQ(todo.size(), 2u);
  size_t tree = 0, list = 0, buffers = 0;
  std::set<uint64_t> seen;
  while (!todo.empty()) {
    const Reach r = todo.back();
    todo.pop_back();
    if (!seen.insert(r.addr).second) continue;
    const std::string n = ReachName(r);
    if (n == "std::string buffer") {
      ++buffers;
      continue;
    }
    tree += n.starts_with("std::_Rb_tree_node<");
    list += n == "std::_List_node<int>";
    const size_t size = program_->type(r.type).size;
    for (const Reach& next : Expand(reinterpret_cast<const void*>(r.addr), size, r.type)) {
      // A list's last node links to the header inside the holder: not a node.
      if (next.addr >= A(&h) && next.addr < A(&h) + sizeof h) continue;
      todo.push_back(next);
    }
  }
  EXPECT_EQ(tree, 50u);
  EXPECT_EQ(buffers, 50u);
  EXPECT_EQ(list, 30u);
}


// A swiss table's allocation as abseil lays it out: control bytes (full >= 0,
// empty -128, the sentinel -1 at index capacity, then clones of the first
// ones), the slots after them. Only the full slots before the sentinel are read.
TEST(CxxExpandSwissTest, OnlyFullSlotsBeforeTheSentinel) {
  std::unique_ptr<CxxProgram> program = CxxProgram::Open("/proc/self/exe");
  const uint32_t t = program->FindType("CxxExpandTestItem");
  ASSERT_NE(t, kNoCxxType);
  struct Alloc {
    int8_t ctrl[32];
    CxxExpandTestItem slots[4];
  };
  auto a = std::make_unique<Alloc>();
  const int8_t ctrl[] = {0x10, -128, 0x20, -1, 0x10, -128, 0x20};  // capacity 3
  std::memset(a->ctrl, -128, sizeof a->ctrl);
  std::memcpy(a->ctrl, ctrl, sizeof ctrl);
  for (int i = 0; i < 4; ++i) a->slots[i] = {i, std::string(30 + i, 'k')};
  Reach r;
  r.addr = reinterpret_cast<uint64_t>(a->slots);
  r.program = program.get();
  r.type = t;
  r.naming = Reach::kArray;
  r.count = 4;  // by size: more than the capacity
  r.ctrl = reinterpret_cast<uint64_t>(a->ctrl);
  std::vector<Reach> out;
  uint64_t budget = 1 << 20;
  Expander expander(nullptr);
  expander.Expand(r, Bytes(a.get(), sizeof *a), budget, out);
  std::vector<uint64_t> got;
  for (const Reach& x : out) got.push_back(x.addr);
  const std::vector<uint64_t> want = {reinterpret_cast<uint64_t>(a->slots[0].name.data()),
                                      reinterpret_cast<uint64_t>(a->slots[2].name.data())};
  EXPECT_EQ(got, want);
}

// A protobuf Map's table: an entry equal to its pair's other (b ^ 1) is a
// tree, not a list; the others head lists of the node type.
TEST(CxxExpandProtoMapTest, ListHeadsNotTrees) {
  std::unique_ptr<CxxProgram> program = CxxProgram::Open("/proc/self/exe");
  const uint32_t t = program->FindType("CxxExpandTestItem");
  ASSERT_NE(t, kNoCxxType);
  CxxExpandTestItem tree, a, b;
  void* table[6] = {&tree, &tree, &a, nullptr, nullptr, &b};
  Reach r;
  r.addr = reinterpret_cast<uint64_t>(table);
  r.program = program.get();
  r.type = t;  // what the table's entries are is map_node's to say
  r.naming = Reach::kArray;
  r.count = 6;
  r.map_node = t;
  std::vector<Reach> out;
  uint64_t budget = 1 << 20;
  Expander expander(nullptr);
  expander.Expand(r, Bytes(table, sizeof table), budget, out);
  std::vector<uint64_t> got;
  for (const Reach& x : out) got.push_back(x.addr);
  EXPECT_EQ(got, (std::vector<uint64_t>{reinterpret_cast<uint64_t>(&a), reinterpret_cast<uint64_t>(&b)}));
}

#ifdef CXX_EXPAND_TEST_BTREE
// Every node of a real btree, walked from the map through the reaches alone:
// the values' strings are exactly the map's, and every child reached carries
// the links its own payload proves (parent, position).
TEST_F(CxxExpandTest, AbseilBtreeNodesReachTheirValuesAndProvedChildren) {
  CxxExpandTestTree tree;
  std::set<uint64_t> expected;
  for (int i = 0; i < 300; ++i) tree.map.emplace(i, CxxExpandTestItem{i, std::string(40 + i % 7, 'b')});
  for (const auto& [k, v] : tree.map) expected.insert(A(v.name.data()));
  cxx_expand_test_tree = &tree;
  const uint32_t t = program_->FindType("CxxExpandTestTree");
  ASSERT_NE(t, kNoCxxType);
  std::vector<Reach> work = Expand(&tree, sizeof tree, t);
  std::set<uint64_t> nodes, strings;
  size_t children = 0;
  while (!work.empty()) {
    const Reach r = work.back();
    work.pop_back();
    if (r.naming == Reach::kStringBuffer) {
      strings.insert(r.addr);
      continue;
    }
    ASSERT_NE(ReachName(r).find("::container_internal::btree_node<"), std::string::npos) << ReachName(r);
    if (r.parent_link != 0) {
      ++children;
      EXPECT_EQ(*reinterpret_cast<const uint64_t*>(r.addr), r.parent_link);
      EXPECT_EQ(reinterpret_cast<const uint8_t*>(r.addr)[8], r.parent_index);
    }
    if (!nodes.insert(r.addr).second) continue;  // the rightmost leaf: a child and the tree's rightmost_
    const void* node = reinterpret_cast<const void*>(r.addr);
    const std::vector<Reach> more = Expand(node, malloc_usable_size(const_cast<void*>(node)), r.type);
    work.insert(work.end(), more.begin(), more.end());
  }
  EXPECT_EQ(strings, expected);
  EXPECT_GT(nodes.size(), 10u);
  EXPECT_EQ(children, nodes.size() - 1);  // every node but the root, once
}

// A node's bytes copied elsewhere: its children do not point back at the
// copy, so the links a reach carries do not hold there.
TEST_F(CxxExpandTest, AbseilBtreeChildrenOfACopiedNodeAreNotProved) {
  CxxExpandTestTree tree;
  for (int i = 0; i < 100; ++i) tree.map.emplace(i, CxxExpandTestItem{i, "x"});
  cxx_expand_test_tree = &tree;
  const uint32_t t = program_->FindType("CxxExpandTestTree");
  ASSERT_NE(t, kNoCxxType);
  const std::vector<Reach> top = Expand(&tree, sizeof tree, t);
  ASSERT_FALSE(top.empty());
  const void* root = reinterpret_cast<const void*>(top.front().addr);
  const size_t size = malloc_usable_size(const_cast<void*>(root));
  std::vector<uint64_t> copy(size / 8 + 1);
  std::memcpy(copy.data(), root, size);
  size_t proved = 0, children = 0;
  for (const Reach& r : Expand(copy.data(), size, top.front().type)) {
    if (r.parent_link == 0) continue;
    ++children;
    if (*reinterpret_cast<const uint64_t*>(r.addr) == r.parent_link) ++proved;
  }
  EXPECT_GT(children, 0u);
  EXPECT_EQ(proved, 0u);
}
#endif

}  // namespace
}  // namespace libdump::typing
