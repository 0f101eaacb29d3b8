// WriteHeapDump on the real libdump heap, in a process whose malloc is
// libdump's: typed, polymorphic and plain objects, and dumps taken again and
// again while other threads rewire a typed structure.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "libdump/format/reader.h"
#include "libdump/heap_dump.h"
#include "libdump/typed.h"

struct ListNode {
  ListNode* next;
  long value;
  ListNode* other;
};
LIBDUMP_TYPE(ListNode, next, other)

namespace shapes {
struct Shape { virtual ~Shape() = default; virtual int Sides() const = 0; };
struct Square : Shape { int Sides() const override { return 4; } long side = 2; };
}  // namespace shapes

namespace {

using namespace libdump::format;

struct Dumped {
  std::map<uint64_t, ObjectRecord> objects;
  std::map<uint64_t, std::vector<uint64_t>> words;  // payload as words
  std::map<uint64_t, TypeRecord> types;
  uint64_t heap_start = 0, heap_end = 0;
  std::vector<OtherRootRecord> other_roots;
};

Dumped Parse(int fd) {
  lseek(fd, 0, SEEK_SET);
  Reader reader(fd);
  Dumped d;
  Record r;
  while (reader.Next(r)) {
    if (r.kind == Kind::kObject) {
      d.objects[r.object.addr] = r.object;
      auto s = reader.Payload();
      std::vector<uint64_t> w(s.size() / 8);
      std::memcpy(w.data(), s.data(), w.size() * 8);
      d.words[r.object.addr] = std::move(w);
    } else if (r.kind == Kind::kType) {
      d.types[r.type.addr] = r.type;
    } else if (r.kind == Kind::kParams) {
      d.heap_start = r.params.heap_start;
      d.heap_end = r.params.heap_end;
    } else if (r.kind == Kind::kOtherRoot) {
      d.other_roots.push_back(r.other_root);
    }
  }
  return d;
}

// Every pointer field of every typed object points to null, outside the heap,
// or into a dumped object: what `readdump --validate` checks of a consistent dump.
size_t DanglingFields(const Dumped& d) {
  size_t bad = 0;
  for (const auto& [addr, o] : d.objects) {
    if (o.type == 0 || !d.types.count(o.type)) continue;
    const TypeRecord& t = d.types.at(o.type);
    const uint64_t elems = o.kind == kObjArray ? o.size / t.size : 1;
    for (uint64_t e = 0; e < elems; ++e) {
      for (const Field& f : t.fields) {
        const uint64_t v = d.words.at(addr)[(e * t.size + f.offset) / 8];
        if (v == 0 || v < d.heap_start || v >= d.heap_end) continue;
        auto it = d.objects.upper_bound(v);
        if (it == d.objects.begin() || v >= std::prev(it)->first + std::prev(it)->second.size) ++bad;
      }
    }
  }
  return bad;
}

int TempFile() {
  char path[] = "/tmp/libdump_runtime_dump_XXXXXX";
  const int fd = mkstemp(path);
  unlink(path);
  return fd;
}

TEST(RuntimeHeapDump, TypedPolymorphicAndPlainObjects) {
  ListNode* a = libdump::make<ListNode>(nullptr, 1, nullptr);
  ListNode* b = libdump::make<ListNode>(a, 2, a);
  ListNode* arr = libdump::make_array<ListNode>(4);
  arr[3].next = b;
  shapes::Shape* sq = new shapes::Square;
  char* plain = static_cast<char*>(malloc(40));
  std::strcpy(plain, "plain bytes");
  static ListNode* root = b;
  libdump::AddRoot(&root, "test root");

  const int fd = TempFile();
  ASSERT_EQ(libdump::WriteHeapDump(fd), 0);
  const Dumped d = Parse(fd);
  close(fd);

  auto addr = [](const void* p) { return reinterpret_cast<uint64_t>(p); };
  ASSERT_TRUE(d.objects.count(addr(a)));
  ASSERT_TRUE(d.objects.count(addr(b)));
  ASSERT_TRUE(d.objects.count(addr(arr)));
  ASSERT_TRUE(d.objects.count(addr(sq)));
  ASSERT_TRUE(d.objects.count(addr(plain)));
  const uint64_t node_type = d.objects.at(addr(a)).type;
  ASSERT_NE(node_type, 0u);
  EXPECT_EQ(d.types.at(node_type).name, "ListNode");
  EXPECT_EQ(d.types.at(node_type).fields.size(), 2u);
  EXPECT_EQ(d.objects.at(addr(arr)).kind, kObjArray);
  EXPECT_EQ(d.objects.at(addr(arr)).type, node_type);
  EXPECT_EQ(d.types.at(d.objects.at(addr(sq)).type).name, "shapes::Square");
  EXPECT_EQ(d.objects.at(addr(plain)).type, 0u);
  EXPECT_EQ(d.words.at(addr(b))[0], addr(a));
  EXPECT_GE(d.heap_start, 1u);
  EXPECT_LE(addr(a), d.heap_end);
  bool rooted = false;
  for (const auto& r : d.other_roots) rooted |= r.description == "test root" && r.ptr == addr(b);
  EXPECT_TRUE(rooted);
  EXPECT_EQ(DanglingFields(d), 0u);

  libdump::RemoveRoot(&root);
  libdump::destroy(arr);
  libdump::destroy(b);
  libdump::destroy(a);
  delete sq;
  free(plain);
}

// Mutators keep growing and trimming typed lists (push a new head, unlink and
// free the tail), with plain malloc churn, while the main thread dumps: every
// dump must be internally consistent, whatever instruction each thread was
// stopped at.
TEST(RuntimeHeapDump, ConsistentWhileThreadsMutate) {
  constexpr int kThreads = 3, kLength = 500;
  std::atomic<bool> quit{false};
  std::atomic<int> full_lists{0};  // threads whose list reached kLength
  std::vector<std::thread> mutators;
  for (int t = 0; t < kThreads; ++t) {
    mutators.emplace_back([&, t] {
      std::mt19937 rng(t);
      ListNode* head = nullptr;
      ListNode* tail = nullptr;
      int length = 0;
      while (!quit.load(std::memory_order_relaxed)) {
        ListNode* n = libdump::make<ListNode>(head, t, nullptr);
        if (head != nullptr) head->other = n;  // doubly linked: other = previous
        head = n;
        if (tail == nullptr) tail = n;
        if (++length == kLength) full_lists.fetch_add(1);
        if (length > kLength) {
          ListNode* prev = tail->other;
          prev->next = nullptr;  // unlink first: nothing reachable points at a freed node
          libdump::destroy(tail);
          tail = prev;
          --length;
        }
        free(malloc(1 + rng() % 300));
      }
      while (head != nullptr) {
        ListNode* next = head->next;
        libdump::destroy(head);
        head = next;
      }
    });
  }
  while (full_lists.load() < kThreads) std::this_thread::yield();
  size_t typed_seen = 0;
  for (int round = 0; round < 15; ++round) {
    const int fd = TempFile();
    libdump::HeapDumpOptions o;
    o.fork_snapshot = round % 3 == 2;
    o.zstd = round % 5 == 4;
    ASSERT_EQ(libdump::WriteHeapDump(fd, o), 0);
    const Dumped d = Parse(fd);
    close(fd);
    EXPECT_EQ(DanglingFields(d), 0u) << "round " << round;
    for (const auto& [a, obj] : d.objects) typed_seen += obj.type != 0;
  }
  quit = true;
  for (auto& m : mutators) m.join();
  EXPECT_GE(typed_seen, 15u * kThreads * kLength);
}

}  // namespace
