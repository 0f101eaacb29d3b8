// The heap profile table's per-thread logs of counts (heap_profile.cc,
// SampleLog): each thread appends its sampled allocations and frees with
// plain stores; the table folds a log when it fills (256 entries) and at every
// snapshot. Threads here log more than a log holds, free objects another
// thread allocated, and race snapshots (TSan checks the ring's hand-off);
// once they are done the counts must be exact.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "heap_profile.h"

namespace libdump::samplers {
namespace {

constexpr int kThreads = 4;
constexpr int kPerThread = 1000;  // about four folds of a full log each

TEST(SampleLog, CountsAreExactThroughFoldsCrossThreadFreesAndRacingSnapshots) {
  HeapProfileTable t;
  // Thread i allocates kPerThread objects at its own stack; thread
  // (i + 1) % kThreads later frees the first half of them, through its log.
  std::vector<std::vector<uintptr_t>> tokens(kThreads);
  std::atomic<int> allocated{0};
  std::atomic<bool> done{false};
  // Snapshots fold the logs while their threads append (for TSan).
  std::thread snapshots([&] {
    while (!done.load()) t.Snapshot();
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      void* log = nullptr;  // as a thread heap's
      const uintptr_t pc = 0x1000 + i;
      for (int k = 0; k < kPerThread; ++k) tokens[i].push_back(t.RecordAlloc(nullptr, 64, 1, &pc, 1, false, &log));
      allocated.fetch_add(1);
      while (allocated.load() < kThreads) std::this_thread::yield();
      const std::vector<uintptr_t>& victim = tokens[(i + 1) % kThreads];
      for (int k = 0; k < kPerThread / 2; ++k) t.RecordFreeOfToken(victim[k], &log);
    });
  }
  for (auto& th : threads) th.join();
  done.store(true);
  snapshots.join();
  const std::vector<HeapBucketSnapshot> snap = t.Snapshot();
  ASSERT_EQ(snap.size(), size_t{kThreads});
  for (const HeapBucketSnapshot& b : snap) {
    EXPECT_EQ(b.allocs, uint64_t{kPerThread}) << b.stack[0];
    EXPECT_EQ(b.frees, uint64_t{kPerThread / 2}) << b.stack[0];
  }
  // Without a log, counts go to the bucket at once.
  t.RecordFreeOfToken(tokens[0][kPerThread - 1]);
  for (const HeapBucketSnapshot& b : t.Snapshot()) {
    EXPECT_EQ(b.frees, uint64_t{kPerThread / 2} + (b.stack[0] == 0x1000 ? 1 : 0)) << b.stack[0];
  }
}

}  // namespace
}  // namespace libdump::samplers
