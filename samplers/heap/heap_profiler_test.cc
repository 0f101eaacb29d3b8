// The heap profiler on libdump's real allocator: the allocator's sample hook
// feeds the bucket table and WriteHeapProfile writes what pprof reads.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "libdump/heap.h"
#include "libdump/profiler.h"
#include "samplers/testing/profile_testutil.h"
#include "platform/env/env_var.h"
#include "samplers/heap/heap_profiler.h"
#include "libdump/interface/sampler_interface.h"
#include "samplers/unwind/unwind_table.h"

namespace libdump {
namespace {

using samplers::testing::Decode;
using samplers::testing::TempFile;

__attribute__((noipa)) void* AllocateHere(size_t n) {
  void* p = Allocate(n);
  asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
  return p;
}

TEST(HeapProfiler, RateOneCountsEveryAllocationAndFree) {
  SetMemProfileRate(1);
  ASSERT_TRUE(InstallHeapProfiler());
  std::vector<void*> objs;
  for (int i = 0; i < 1000; ++i) objs.push_back(AllocateHere(100));
  for (int i = 0; i < 400; ++i) Free(objs[i]);
  uintptr_t pcs[64];
  EXPECT_GT(SampledAllocationStack(objs[500], pcs, 64), 0u);
  EXPECT_EQ(SampledAllocationStack(objs[0], pcs, 64), 0u);  // freed
  SetMemProfileRate(0);

  TempFile f;
  ASSERT_TRUE(WriteHeapProfile(f.fd(), HeapProfileKind::kHeap));
  const auto p = Decode(f.Contents());
  EXPECT_EQ(p.sample_types,
            (std::vector<std::string>{"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}));
  EXPECT_EQ(p.default_sample_type, "inuse_space");
  EXPECT_EQ(p.period_type, "space");
  // Slot bytes: the allocator charges and reports the size class of 100.
  EXPECT_EQ(p.Total("alloc_objects", "AllocateHere"), 1000);
  EXPECT_EQ(p.Total("inuse_objects", "AllocateHere"), 600);
  const int64_t slot = p.Total("alloc_space", "AllocateHere") / 1000;
  EXPECT_GE(slot, 100);
  EXPECT_EQ(p.Total("inuse_space", "AllocateHere"), 600 * slot);
  // The allocator's own frames are cut from the top of the stacks.
  for (const auto& s : p.samples) {
    if (s.Contains("AllocateHere")) {
      ASSERT_FALSE(s.functions.empty());
      EXPECT_NE(s.functions[0].find("AllocateHere"), std::string::npos) << s.functions[0];
      EXPECT_EQ(s.num_labels.at("bytes"), slot);
    }
  }
  if (p.Total("alloc_objects", "AllocateHere") == 0) {
    for (const auto& s : p.samples) {
      std::string st;
      for (const auto& fn : s.functions) st += fn + " <- ";
      ADD_FAILURE() << st;
    }
  }
  for (int i = 400; i < 1000; ++i) Free(objs[i]);

  TempFile g;
  ASSERT_TRUE(WriteHeapProfile(g.fd(), HeapProfileKind::kAllocs));
  const auto q = Decode(g.Contents());
  EXPECT_EQ(q.default_sample_type, "alloc_space");
  EXPECT_EQ(q.Total("inuse_objects", "AllocateHere"), 0);
  EXPECT_EQ(q.Total("alloc_objects", "AllocateHere"), 1000);
}

struct Visits {
  std::vector<uintptr_t> addrs;
  size_t Count(const void* p) const {
    size_t n = 0;
    for (uintptr_t a : addrs) n += a == reinterpret_cast<uintptr_t>(p);
    return n;
  }
};

Visits VisitSampled() {
  Visits v;
  v.addrs.reserve(100000);  // no allocation (and sampling) while visiting
  ForEachSampledAllocation([](void* ctx, uintptr_t addr, size_t, const uintptr_t*,
                              size_t) { static_cast<Visits*>(ctx)->addrs.push_back(addr); },
                           &v);
  return v;
}

// The first sample of a span keeps its bucket in the span (no table entry);
// a second sample of the same span goes to the table. Both answer
// SampledAllocationStack and ForEachSampledAllocation, and a freed one
// leaves both.
TEST(HeapProfiler, ASpanKeepsOneSampleAndTheTableHoldsTheRest) {
  SetMemProfileRate(1);
  ASSERT_TRUE(InstallHeapProfiler());
  // A size class no other test uses: a fresh span, consecutive slots.
  void* a = AllocateHere(3000);
  void* b = AllocateHere(3000);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(b) - reinterpret_cast<uintptr_t>(a), UsableSize(a));
  EXPECT_NE(internal::SampleTokenOf(a), 0u);
  EXPECT_EQ(internal::SampleTokenOf(b), 0u);
  void* large = AllocateHere(size_t{1} << 20);
  EXPECT_NE(internal::SampleTokenOf(large), 0u);
  SetMemProfileRate(0);

  uintptr_t pcs[64];
  for (void* p : {a, b, large}) EXPECT_GT(SampledAllocationStack(p, pcs, 64), 0u) << p;
  Visits v = VisitSampled();
  for (void* p : {a, b, large}) EXPECT_EQ(v.Count(p), 1u) << p;

  Free(a);
  Free(large);
  EXPECT_EQ(SampledAllocationStack(a, pcs, 64), 0u);
  EXPECT_EQ(SampledAllocationStack(large, pcs, 64), 0u);
  v = VisitSampled();
  EXPECT_EQ(v.Count(a), 0u);
  EXPECT_EQ(v.Count(large), 0u);
  EXPECT_EQ(v.Count(b), 1u);
  // The span's place is free again: its next sample keeps its token.
  SetMemProfileRate(1);
  void* c = AllocateHere(3000);
  SetMemProfileRate(0);
  EXPECT_NE(internal::SampleTokenOf(c), 0u);
  Free(b);
  Free(c);
  v = VisitSampled();
  EXPECT_EQ(v.Count(b), 0u);
  EXPECT_EQ(v.Count(c), 0u);
}

__attribute__((noipa)) void* AllocateToStack(size_t n) {
  void* p = Allocate(n);
  asm volatile("" ::: "memory");
  return p;
}

// A sampled object's free is counted through its kept token (the allocator
// adds to the bucket's free counter), and its slot then goes onto its
// class's list like any freed slot: the next allocation of the class gets
// it back, no longer sampled.
TEST(HeapProfiler, ASampledFreeIsCountedAndListsItsSlot) {
  // The debug heap's quarantine never hands the freed slot straight back.
  if (libdump::env::GetBool("LIBDUMP_DEBUG_HEAP", false)) GTEST_SKIP() << "the debug heap hands out no freed slot";
  ASSERT_TRUE(InstallHeapProfiler());
  SetMemProfileRate(0);
  void* keep = Allocate(1800);  // a size class no other test uses; the span stays
  void* x = Allocate(1800);
  Free(x);  // the class's stack: [x]
  SetMemProfileRate(1);
  void* p = AllocateToStack(1800);
  SetMemProfileRate(0);
  ASSERT_EQ(p, x);
  ASSERT_TRUE(IsSampled(p));
  ASSERT_NE(internal::SampleTokenOf(p), 0u);
  Free(p);
  void* q = Allocate(1800);
  EXPECT_EQ(q, p);
  EXPECT_FALSE(IsSampled(q));
  EXPECT_EQ(internal::SampleTokenOf(q), 0u);

  TempFile f;
  ASSERT_TRUE(WriteHeapProfile(f.fd(), HeapProfileKind::kHeap));
  const auto prof = Decode(f.Contents());
  EXPECT_EQ(prof.Total("alloc_objects", "AllocateToStack"), 1);
  EXPECT_EQ(prof.Total("inuse_objects", "AllocateToStack"), 0);
  Free(q);
  Free(keep);
}

// More kept samples than ForEachKeptSampleToken collects under one hold of
// the page heap lock (256): the walk resumes where it stopped, and every
// object is visited once.
TEST(HeapProfiler, KeptSamplesBeyondOneBatchAreEachVisitedOnce) {
  SetMemProfileRate(1);
  ASSERT_TRUE(InstallHeapProfiler());
  std::vector<void*> objs;
  for (int i = 0; i < 600; ++i) objs.push_back(AllocateHere(size_t{64} << 10));  // a span each
  SetMemProfileRate(0);
  for (void* p : objs) ASSERT_NE(internal::SampleTokenOf(p), 0u) << p;
  const Visits v = VisitSampled();
  for (void* p : objs) EXPECT_EQ(v.Count(p), 1u) << p;
  for (void* p : objs) Free(p);
}


using ModuleAlloc = void* (*)(void* (*)(size_t), size_t);

__attribute__((noipa)) void* AllocateThroughModule(ModuleAlloc leaf, size_t n) {
  void* p = leaf(AllocateHere, n);
  asm volatile("" ::: "memory");
  return p;
}

// Whether the unwind tables cover pc (module_known), within 5 s: the
// profiler's thread checks the module list every 100 ms.
bool TablesCover(uintptr_t pc, bool covered) {
  for (int i = 0; i < 500; ++i) {
    {
      samplers::UnwindTables::Reader pin;
      if (samplers::UnwindTables::Lookup(pc).module_known == covered) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// With the heap profiler alone (no CPU profile, whose worker also refreshes
// the tables), a module dlopened after the start gets its rules: the
// allocation made through its frameless function is charged to that
// function's caller. Without them the frame-pointer walk skips the caller,
// and on a thread the chain ends on rbp 0, so no libunwind check rescues it.
// After dlclose the tables drop the module.
TEST(HeapProfiler, AModuleDlopenedAfterTheStartGetsItsRules) {
  ASSERT_TRUE(InstallHeapProfiler());
  void* h = dlopen(LIBDUMP_TEST_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  const auto leaf = reinterpret_cast<ModuleAlloc>(dlsym(h, "libdump_test_frameless_alloc"));
  ASSERT_NE(leaf, nullptr);
  const uintptr_t leaf_pc = reinterpret_cast<uintptr_t>(leaf);
  ASSERT_TRUE(TablesCover(leaf_pc, true)) << "the tables never took the module";

  SetMemProfileRate(1);
  std::vector<void*> objs(20);
  std::thread([&] {
    for (void*& p : objs) p = AllocateThroughModule(leaf, 2500);  // a size class of its own
  }).join();
  SetMemProfileRate(0);
  TempFile f;
  ASSERT_TRUE(WriteHeapProfile(f.fd(), HeapProfileKind::kHeap));
  for (void* p : objs) Free(p);
  const auto prof = Decode(f.Contents());
  int64_t through_leaf = 0;
  for (const auto& s : prof.samples) {
    std::string stack;
    for (const auto& fn : s.functions) stack += fn + " <- ";
    for (size_t i = 0; i < s.functions.size(); ++i) {
      if (s.functions[i].find("libdump_test_frameless_alloc") == std::string::npos) continue;
      through_leaf += s.values[0];
      ASSERT_LT(i + 1, s.functions.size()) << stack;
      EXPECT_NE(s.functions[i + 1].find("AllocateThroughModule"), std::string::npos) << stack;
    }
  }
  EXPECT_EQ(through_leaf, 20);
  EXPECT_EQ(prof.Total("alloc_objects", "AllocateThroughModule"), 20);

  dlclose(h);
  EXPECT_TRUE(TablesCover(leaf_pc, false)) << "the tables kept the unloaded module";
}

// Go's legacy text (debug=1) keeps the sampled counts, which the reader
// unbiases with the header's rate: heap/2*rate, as Go writes it.
TEST(HeapProfileForms, LegacyTextKeepsTheSampledCounts) {
  const std::vector<samplers::HeapBucketSnapshot> buckets = {
      {1024, 4096, 10, 4, {0x1000, 0x2000}},
      {64, 4096, 3, 3, {0x3000}},
  };
  const std::string t = samplers::HeapProfileText(buckets, 4096);
  EXPECT_EQ(t.rfind("heap profile: 6: 6144 [13: 10432] @ heap/8192\n", 0), 0u) << t;
  EXPECT_NE(t.find("\n6: 6144 [10: 10240] @ 0x1000 0x2000\n"), std::string::npos) << t;
  EXPECT_NE(t.find("\n0: 0 [3: 192] @ 0x3000\n"), std::string::npos) << t;
  EXPECT_NE(t.find("\nMAPPED_LIBRARIES:\n"), std::string::npos);
}

// seconds=N: what each bucket gained; an unchanged bucket is left out, a
// new one comes whole, in use may fall.
TEST(HeapProfileForms, DeltaIsWhatEachBucketGained) {
  const std::vector<samplers::HeapBucketSnapshot> before = {
      {1024, 4096, 4, 1, {0x1000, 0x2000}},
      {64, 4096, 3, 3, {0x3000}},
      {32, 4096, 5, 0, {0x5000}},
  };
  const std::vector<samplers::HeapBucketSnapshot> after = {
      {1024, 4096, 10, 4, {0x1000, 0x2000}},
      {64, 4096, 3, 3, {0x3000}},
      {32, 4096, 5, 5, {0x5000}},
      {128, 4096, 2, 0, {0x4000}},
  };
  pprof::ProfileBuilder b = samplers::NewHeapProfileBuilder(HeapProfileKind::kAllocs, 4096);
  samplers::BuildHeapProfile(b, after, &before);
  const samplers::testing::DecodedProfile p = Decode(b.EncodeGzip());
  ASSERT_EQ(p.samples.size(), 3u);
  const double s1024 = 1 / -std::expm1(-1024.0 / 4096), s128 = 1 / -std::expm1(-128.0 / 4096),
               s32 = 1 / -std::expm1(-32.0 / 4096);
  // 6 more allocations of 1 KiB, 3 more of them in use; 2 new of 128 B; 5
  // of 32 B freed.
  EXPECT_EQ(p.Total("alloc_objects"), std::llround(6 * s1024) + std::llround(2 * s128));
  EXPECT_EQ(p.Total("inuse_objects"), std::llround(3 * s1024) + std::llround(2 * s128) - std::llround(5 * s32));
}

}  // namespace
}  // namespace libdump
