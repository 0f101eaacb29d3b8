// The graph built and analysed under a small memory budget, its arrays in
// files whose pages are dropped between phases, gives exactly what the
// in-RAM path gives on random graphs: dominators, retained sizes, paths,
// class retained sizes, and the same graph back from an index.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>

#include "analyze.h"
#include "big_array.h"
#include "index_codec.h"
#include "testing/same_graph.h"

namespace libdump::heapgraph {
namespace {

struct Spec {
  std::vector<uint64_t> sizes;
  std::vector<uint32_t> cls;
  std::vector<std::vector<std::pair<Index, bool>>> out;  // (target, weak)
  std::vector<Index> roots;
};

// A heap-like random graph: long chains (deep DFS), fan-in to shared
// objects, back edges (cycles), weak references, unreachable islands.
Spec RandomSpec(uint32_t seed, Index n) {
  std::mt19937 rng(seed);
  Spec s;
  s.out.resize(n);
  for (Index i = 0; i < n; ++i) {
    s.sizes.push_back(8 + rng() % 200);
    s.cls.push_back(rng() % 7);
  }
  for (Index i = 0; i + 1 < n; ++i) {
    if (rng() % 8 != 0) s.out[i].push_back({i + 1, false});  // chains
    const uint32_t extra = rng() % 3;
    for (uint32_t k = 0; k < extra; ++k) {
      const Index to = rng() % 4 == 0 ? static_cast<Index>(rng() % 64) : static_cast<Index>(rng() % n);
      s.out[i].push_back({to, rng() % 16 == 0});
    }
  }
  for (int k = 0; k < 20; ++k) s.roots.push_back(rng() % n);
  s.roots.push_back(0);
  return s;
}

HeapGraph Build(const Spec& s, bool drop_between_phases, bool wide = false) {
  HeapGraph g;
  g.wide = wide;
  for (int c = 0; c < 7; ++c) {
    ClassInfo ci;
    ci.name = "C" + std::to_string(c);
    g.classes.push_back(ci);
  }
  GraphBuilder b(g);
  for (size_t i = 0; i < s.sizes.size(); ++i) b.AddObject(0x10000 + 256 * i, s.cls[i], s.sizes[i], 64 * i);
  b.FinishObjects();
  for (Index i = 0; i < s.sizes.size(); ++i) {
    b.BeginEdges(i);
    for (const auto& [to, weak] : s.out[i]) b.Edge(to, weak);
  }
  b.FinishEdges();
  g.root_kinds = {"test"};
  for (Index r : s.roots) {
    Root root;
    root.object = r;
    g.roots.push_back(root);
  }
  if (drop_between_phases) DropFilePages();
  Analyze(g, [&](const char*, uint64_t) {
    if (drop_between_phases) DropFilePages();
  });
  if (drop_between_phases) DropFilePages();
  return g;
}

// 1 MiB: half a MiB of arrays in RAM, so every array of 2^17 entries or
// more goes to a file.
constexpr uint64_t kSmallBudget = 1 << 20;

struct Budget {
  explicit Budget(uint64_t bytes) { SetMemoryBudget(bytes, ::testing::TempDir()); }
  ~Budget() { SetMemoryBudget(0, ""); }
};

TEST(Bounded, RandomGraphsMatchTheInRamPath) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const Spec s = RandomSpec(seed, 300000);
    const HeapGraph ram = Build(s, false);
    EXPECT_FALSE(ram.out.in_file());
    const uint64_t files = GetMemoryStats().file_arrays;
    const uint64_t drops = GetMemoryStats().drops;
    Budget b(kSmallBudget);
    const HeapGraph bounded = Build(s, true);
    // The external path ran: the large arrays were files, and their pages
    // were dropped and read back.
    EXPECT_TRUE(bounded.out.in_file());
    EXPECT_TRUE(bounded.idom.in_file());
    EXPECT_TRUE(bounded.retained.in_file());
    EXPECT_GT(GetMemoryStats().file_arrays, files + 5);
    EXPECT_GE(GetMemoryStats().drops, drops + 4);
    testing::ExpectSameAnalysis(ram, bounded);
    // Reached objects: a graph where most of the heap is live.
    EXPECT_GT(ram.reachable_objects, 100000u) << seed;
  }
}

TEST(Bounded, SmallGraphsMatchToo) {
  for (uint32_t seed = 10; seed < 40; ++seed) {
    const Spec s = RandomSpec(seed, 1 + seed * 37);
    const HeapGraph ram = Build(s, false);
    Budget b(kSmallBudget);
    const HeapGraph bounded = Build(s, true);
    testing::ExpectSameAnalysis(ram, bounded);
  }
}

// 8-byte index storage (what a graph of 2^32 - 2 objects or more gets), in
// files, gives what the 4-byte in-RAM path gives.
TEST(Bounded, WideIndicesMatchTheNarrowPath) {
  const Spec s = RandomSpec(5, 200000);
  const HeapGraph ram = Build(s, false);
  ASSERT_FALSE(ram.out.wide());
  Budget b(kSmallBudget);
  const HeapGraph wide = Build(s, true, true);
  EXPECT_TRUE(wide.out.wide());
  EXPECT_TRUE(wide.idom.wide());
  EXPECT_TRUE(wide.idom.in_file());
  testing::ExpectSameAnalysis(ram, wide);
}

TEST(Bounded, AnIndexWrittenAndReadUnderTheBudgetIsTheSameGraph) {
  const Spec s = RandomSpec(7, 200000);
  const HeapGraph ram = Build(s, false);
  Budget b(kSmallBudget);
  const HeapGraph bounded = Build(s, true);
  const std::string path = ::testing::TempDir() + "/bounded_test.index";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ::unlink(path.c_str());
  index::Writer w;
  index::PutGraph(w, bounded);
  constexpr char kMagic[8] = {'T', 'E', 'S', 'T', 'I', 'N', 'D', 'X'};
  int err = 0;
  ASSERT_TRUE(w.Finish(fd, kMagic, &err)) << err;
  struct stat st;
  ASSERT_EQ(::fstat(fd, &st), 0);
  index::Reader r;
  ASSERT_EQ(r.Open(fd, static_cast<uint64_t>(st.st_size), kMagic), index::Reader::Status::kOk);
  HeapGraph back;
  ASSERT_TRUE(index::GetGraph(r, back));
  ::close(fd);
  // The arrays are the file's, mapped; their pages come back once dropped.
  EXPECT_TRUE(back.out.mapped());
  EXPECT_TRUE(back.idom.mapped());
  EXPECT_GT(GetMemoryStats().mapped_bytes, back.out.size() * sizeof(Index));
  DropFilePages();
  testing::ExpectSameAnalysis(ram, back);
}

}  // namespace
}  // namespace libdump::heapgraph
