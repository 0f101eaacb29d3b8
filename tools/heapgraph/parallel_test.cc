// Random dumps and hprofs opened with one thread and with several give the
// same graph and the same analysis, array by array, in RAM and under a
// budget small enough that the arrays (and the reference batches the
// threads work on) are files whose pages are dropped.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

#include "analyze.h"
#include "big_array.h"
#include "edge_batch.h"
#include "libdump/format/hprof_writer.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "load.h"
#include "testing/same_graph.h"
#include "threads.h"

namespace libdump::heapgraph {
namespace {

// Objects in a shuffled order (so the ids are sorted by the loader) and
// words of every sort: pointers to an object's start or inside it, pointers
// into the gaps between objects, zeros, junk. One object holds more words
// than a batch may.
// `expected` gets each object's references (by file order) as resolved by a
// map from addresses, independently of the loader.
std::string WriteRandomDump(uint32_t seed, uint32_t n, std::vector<std::vector<Index>>* expected) {
  std::mt19937_64 rng(seed);
  constexpr uint64_t kBase = 0x7f0000000000, kSlot = 128;
  std::vector<uint64_t> size(n);
  for (uint32_t i = 0; i < n; ++i) size[i] = 8 * (1 + rng() % 12);
  const uint32_t big = n / 2;
  size[big] = 8 * (2 * EdgeBatch::kBatchWords + 5000);  // split across batches
  // The big object's slot is the last, so that it overlaps nothing.
  auto addr = [&](uint32_t i) { return kBase + (i == big ? n : i) * kSlot; };
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (seed % 2) std::shuffle(order.begin(), order.end(), rng);
  const std::string path = ::testing::TempDir() + "parallel_test_" + std::to_string(seed) + ".dump";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0);
  format::FdSink sink(fd);
  format::Writer w(sink);
  w.Header();
  w.Params({0, 8, 0, kBase, addr(n) + size[big]});
  std::map<uint64_t, std::pair<Index, uint64_t>> by_addr;  // address: file position, size
  for (uint32_t k = 0; k < n; ++k) by_addr[addr(order[k])] = {k, size[order[k]]};
  expected->assign(n, {});
  std::vector<uint64_t> words;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = order[k];
    words.resize(size[i] / 8);
    for (uint64_t& v : words) {
      const uint32_t to = rng() % n;
      switch (rng() % 10) {
        case 0: case 1: case 2: v = addr(to); break;
        case 3: v = addr(to) + rng() % size[to]; break;
        case 4: v = addr(to) + size[to] + rng() % 8; break;  // a gap, when the object is small
        case 5: case 6: v = 0; break;
        default: v = rng(); break;
      }
    }
    w.Object({addr(i), 0, format::kObjRegular, size[i]}, words.data());
    for (uint64_t v : words) {
      auto it = by_addr.upper_bound(v);
      if (v == 0 || it == by_addr.begin()) continue;
      --it;
      if (v - it->first < it->second.second) (*expected)[k].push_back(it->second.first);
    }
  }
  for (int k = 0; k < 30; ++k) w.OtherRoot("root", addr(rng() % n));
  w.DataRoot({0x600000, addr(0)});
  w.Eof();
  ::close(fd);
  EXPECT_FALSE(w.error());
  return path;
}

// Object arrays and java.lang.ref.Finalizer instances (weak referents that
// are also finalizable) with ids in a shuffled order, nulls and dangling ids.
std::string WriteRandomHprof(uint32_t seed, uint32_t n) {
  using namespace format::hprof;
  std::mt19937_64 rng(seed);
  constexpr Id kArrayClass = 0x60, kReference = 0x70, kFinalizer = 0x80;
  auto id = [&](uint32_t i) -> Id { return 0x100000 + Id{i} * 16; };
  const std::string path = ::testing::TempDir() + "parallel_test_" + std::to_string(seed) + ".hprof";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  EXPECT_GE(fd, 0);
  FdOutput out(fd);
  Writer w(out);
  w.Utf8(1, "[Ljava/lang/Object;");
  w.Utf8(2, "java/lang/ref/Reference");
  w.Utf8(3, "java/lang/ref/Finalizer");
  w.Utf8(4, "referent");
  w.LoadClass(1, kArrayClass, kEmptyTrace, 1);
  w.LoadClass(2, kReference, kEmptyTrace, 2);
  w.LoadClass(3, kFinalizer, kEmptyTrace, 3);
  ClassDumpRecord c;
  c.id = kArrayClass;
  w.ClassDump(c);
  c.id = kReference;
  c.instance_size = 8;
  c.fields = {{4, Type::kObject}};
  w.ClassDump(c);
  c.id = kFinalizer;
  c.super = kReference;
  c.fields.clear();
  w.ClassDump(c);
  for (int k = 0; k < 30; ++k) w.RootUnknown(id(rng() % n));
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (seed % 2) std::shuffle(order.begin(), order.end(), rng);
  auto ref = [&]() -> Id {
    switch (rng() % 8) {
      case 0: return 0;
      case 1: return 0x900000000 + rng() % 1000;  // dangling
      default: return id(rng() % n);
    }
  };
  std::vector<Id> elems;
  for (uint32_t i : order) {
    if (rng() % 5 == 0) {
      uint8_t data[8];
      const Id v = ref();
      for (int b = 0; b < 8; ++b) data[b] = static_cast<uint8_t>(v >> (56 - 8 * b));
      w.Instance(id(i), kEmptyTrace, kFinalizer, data);
      continue;
    }
    elems.resize(i == n / 2 ? 2 * EdgeBatch::kBatchWords + 5000 : rng() % 10);  // split across batches
    for (Id& e : elems) e = ref();
    w.ObjectArray(id(i), kEmptyTrace, kArrayClass, elems);
  }
  w.HeapDumpEnd();
  ::close(fd);
  return path;
}

HeapGraph OpenWith(const std::string& path, unsigned threads) {
  SetThreads(threads);
  EXPECT_EQ(Threads(), threads);
  HeapGraph g;
  try {
    Open(path, g, [](const char*, uint64_t) { DropFilePages(); });
  } catch (...) {
    SetThreads(0);
    throw;
  }
  SetThreads(0);
  return g;
}

void ExpectSame(const HeapGraph& a, const HeapGraph& b) {
  testing::ExpectSameAnalysis(a, b);
  EXPECT_TRUE(testing::SameValues(a.ids, b.ids));
  EXPECT_TRUE(testing::SameValues(a.by_id, b.by_id));
  EXPECT_TRUE(testing::SameValues(a.cls, b.cls));
  EXPECT_TRUE(testing::SameValues(a.size32, b.size32));
  EXPECT_EQ(a.finalizable, b.finalizable);
  EXPECT_EQ(a.dangling, b.dangling);
}

struct Budget {
  explicit Budget(uint64_t bytes) { SetMemoryBudget(bytes, ::testing::TempDir()); }
  ~Budget() { SetMemoryBudget(0, ""); }
};

// Several batches (the pipeline runs), a tiny budget (1 MiB: the batches
// themselves go to files).
void CheckFile(const std::string& path) {
  const HeapGraph one = OpenWith(path, 1);
  // The file is a graph worth comparing: references kept and dropped, a
  // live heap, sorted ids when the file's were not.
  ASSERT_GT(one.out.size(), EdgeBatch::kBatchWords);
  EXPECT_GT(one.reachable_objects, one.size() / 4);
  for (unsigned t : {2u, 3u}) {
    SCOPED_TRACE(t);
    ExpectSame(one, OpenWith(path, t));
  }
  Budget b(1 << 20);
  const uint64_t files = GetMemoryStats().file_arrays;
  const HeapGraph bounded = OpenWith(path, 2);
  EXPECT_TRUE(bounded.out.in_file());
  EXPECT_GT(GetMemoryStats().file_arrays, files + 5);
  ExpectSame(one, bounded);
}

TEST(Parallel, DumpsOpenTheSameWithOneThreadAndSeveral) {
  for (uint32_t seed : {1u, 2u}) {
    SCOPED_TRACE(seed);
    std::vector<std::vector<Index>> expected;
    const std::string path = WriteRandomDump(seed, 40000, &expected);
    // The references themselves, against the map's: batches end between
    // objects and inside the large one alike.
    SetThreads(2);
    HeapGraph g;
    Load(path, g);
    SetThreads(0);
    ASSERT_EQ(g.size(), expected.size());
    size_t mismatches = 0;
    for (Index i = 0; i < g.size(); ++i) {
      const auto out = g.Out(i);
      if (!std::equal(out.begin(), out.end(), expected[i].begin(), expected[i].end())) ++mismatches;
    }
    EXPECT_EQ(mismatches, 0u);
    CheckFile(path);
    ::unlink(path.c_str());
  }
}

TEST(Parallel, HprofsOpenTheSameWithOneThreadAndSeveral) {
  for (uint32_t seed : {3u, 4u}) {
    SCOPED_TRACE(seed);
    const std::string path = WriteRandomHprof(seed, 40000);
    const HeapGraph one = OpenWith(path, 1);
    // Weak referents, finalizable objects and dangling ids all occur.
    EXPECT_GT(one.finalizable.size(), 500u);
    EXPECT_GT(one.dangling, 1000u);
    bool weak = false;
    for (uint64_t wd : one.weak_edges) weak |= wd != 0;
    EXPECT_TRUE(weak);
    CheckFile(path);
    ::unlink(path.c_str());
  }
}

TEST(Parallel, RunParallelRunsEveryPartAndRethrows) {
  std::vector<int> ran(5, 0);
  RunParallel(5, [&](unsigned k) { ran[k] = 1; });
  EXPECT_EQ(ran, std::vector<int>(5, 1));
  EXPECT_THROW(RunParallel(3, [](unsigned k) {
                 if (k == 2) throw std::runtime_error("part 2");
               }),
               std::runtime_error);
}

}  // namespace
}  // namespace libdump::heapgraph
