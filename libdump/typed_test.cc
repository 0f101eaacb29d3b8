#include "libdump/typed.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "libdump/heap.h"

namespace test_types {

struct Node {
  int value = 0;
  Node* left = nullptr;
  Node* right = nullptr;
};

int g_destroyed = 0;
struct Tracked {
  Tracked() = default;
  explicit Tracked(int v) : value(v) {}
  ~Tracked() { ++g_destroyed; }
  long value = 7;
  Tracked* children[4] = {};
  const char* label = nullptr;
};

struct Leaf {
  double x;
};

}  // namespace test_types

LIBDUMP_TYPE(test_types::Node, left, right)
LIBDUMP_TYPE(test_types::Tracked, children, label)
LIBDUMP_TYPE(test_types::Leaf)

namespace libdump {
namespace {

using test_types::Leaf;
using test_types::Node;
using test_types::Tracked;

ObjectInfo Find(const void* p) {
  ObjectInfo o{};
  EXPECT_TRUE(FindObject(p, &o));
  return o;
}

TEST(Typed, RegistrationDescribesTheFields) {
  const TypeInfo* node = FindType(TypeTraits<Node>::id());
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(std::string_view(node->name), "test_types::Node");
  EXPECT_EQ(node->size, sizeof(Node));
  ASSERT_EQ(node->nfields, 2u);
  EXPECT_EQ(std::string_view(node->fields[0].name), "left");
  EXPECT_EQ(node->fields[0].offset, offsetof(Node, left));
  EXPECT_EQ(node->fields[1].offset, offsetof(Node, right));
  EXPECT_EQ(node->fields[1].count, 1u);
  const TypeInfo* tracked = FindType(TypeTraits<Tracked>::id());
  ASSERT_EQ(tracked->nfields, 2u);
  EXPECT_EQ(tracked->fields[0].count, 4u);
  EXPECT_EQ(FindType(TypeTraits<Leaf>::id())->nfields, 0u);
  EXPECT_NE(TypeTraits<Node>::id(), TypeTraits<Tracked>::id());
  EXPECT_EQ(TypeTraits<Node>::id(), TypeTraits<Node>::id());
  EXPECT_GE(TypeCount(), 3u);
  EXPECT_EQ(FindType(0), nullptr);
}

TEST(Typed, TheWalkKnowsTheTypeOfTypedObjectsOnly) {
  Node* n = make<Node>(Node{5, nullptr, nullptr});
  n->left = make<Node>();
  void* plain = Allocate(sizeof(Node));
  EXPECT_EQ(n->value, 5);
  EXPECT_EQ(Find(n).type_id, TypeTraits<Node>::id());
  EXPECT_EQ(Find(n).count, 1u);
  EXPECT_EQ(Find(n->left).type_id, TypeTraits<Node>::id());
  EXPECT_EQ(Find(plain).type_id, 0u);
  bool seen = false;
  WalkHeap([&](const ObjectInfo& o) {
    if (o.addr == reinterpret_cast<uintptr_t>(n)) seen = o.type_id == TypeTraits<Node>::id();
  });
  EXPECT_TRUE(seen);
  destroy(n->left);
  destroy(n);
  Free(plain);
}

TEST(Typed, ASlotReusedByAPlainAllocationCarriesNoStaleType) {
  std::vector<Node*> typed;
  for (int i = 0; i < 600; ++i) typed.push_back(make<Node>());
  std::set<void*> was_typed(typed.begin(), typed.end());
  for (Node* n : typed) destroy(n);
  std::vector<void*> plain;
  int reused = 0;
  for (int i = 0; i < 2000; ++i) {
    plain.push_back(Allocate(sizeof(Node)));
    if (was_typed.count(plain.back())) {
      ++reused;
      EXPECT_EQ(Find(plain.back()).type_id, 0u);
    }
  }
  EXPECT_GT(reused, 0);
  for (void* p : plain) Free(p);
}

TEST(Typed, ArraysRecordTheirLengthAndDestroyEveryElement) {
  for (size_t n : {size_t{3}, size_t{1000}}) {  // a small slot, then a large span
    test_types::g_destroyed = 0;
    Tracked* a = make_array<Tracked>(n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(a[i].value, 7);
    const ObjectInfo o = Find(a + n - 1);
    EXPECT_EQ(o.addr, reinterpret_cast<uintptr_t>(a));
    EXPECT_EQ(o.type_id, TypeTraits<Tracked>::id());
    EXPECT_EQ(o.count, n);
    destroy(a);
    EXPECT_EQ(test_types::g_destroyed, static_cast<int>(n));
  }
  test_types::g_destroyed = 0;
  Tracked* one = make<Tracked>(3);
  EXPECT_EQ(one->value, 3);
  destroy(one);
  EXPECT_EQ(test_types::g_destroyed, 1);
}

}  // namespace
}  // namespace libdump
