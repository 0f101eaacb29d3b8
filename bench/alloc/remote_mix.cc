// Mixed sizes with cross-thread frees (issue 28's workload): each of T
// threads keeps a working set of slots and, per operation, frees a random
// slot's block and puts a new block of a random size there. One free in R is
// handed to the next thread (ring order) through a single-producer,
// single-consumer lock-free ring and freed there; every thread drains its
// incoming ring every 16 operations. The size mix is 90 % 8-264 B, 9 %
// 256-1024 B, 1 % 4-64 KiB by default.
//
// Usage: alloc_bench_remote_mix [THREADS] [REMOTE_ONE_IN] [MIX] [READ] [OPS] [SLOTS]
//   THREADS 2, REMOTE_ONE_IN 8 (0: no remote frees), OPS 6000000 in all,
//   SLOTS 4000 per thread; MIX is "issue" (the mix above), "small" (8-264 B
//   only), "medium" (8-1024 B, no big blocks) or "big" (80 % 8-264 B, 15 %
//   256-1024 B, 5 % 4-64 KiB); READ 1 makes the receiving thread read each
//   block's first byte before it frees it, as a consumer of messages would
//   (default 0: freed unread, as in the issue).
// Fixed seeds; the printed checksum depends only on the arguments, so run.sh
// can compare the output across allocators. When a ring is full the
// producer frees the block itself (counted apart, not printed: it depends
// on scheduling).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "handover_ring.h"

namespace {

using alloc_bench::Next;
using alloc_bench::Ring;

// Sizes out of 1000: small up to `small`, medium up to `medium`, big above.
struct Mix {
  int small, medium;
  uint32_t small_max;  // upper bound of the small range
};

Mix ParseMix(const char* name) {
  if (strcmp(name, "issue") == 0) return {900, 990, 264};
  if (strcmp(name, "small") == 0) return {1000, 1000, 264};
  if (strcmp(name, "medium") == 0) return {900, 1000, 264};
  if (strcmp(name, "big") == 0) return {800, 950, 264};
  fprintf(stderr, "remote_mix: unknown mix %s\n", name);
  exit(2);
}

size_t DrawSize(uint64_t& rng, const Mix& mix) {
  const uint64_t r = Next(rng);
  const int bucket = static_cast<int>(r % 1000);
  const uint64_t v = r >> 20;
  if (bucket < mix.small) return 8 + v % (mix.small_max - 8 + 1);
  if (bucket < mix.medium) return 256 + v % (1024 - 256 + 1);
  return 4096 + v % (65536 - 4096 + 1);
}

struct alignas(64) Worker {
  std::vector<char*> blocks;
  uint64_t rng = 0;
  uint64_t checksum = 0;
  uint64_t full = 0;  // remote frees done locally because the ring was full
  uint64_t drained_sum = 0;  // first bytes of remotely freed blocks: not printed (scheduling decides which)
  Ring* in = nullptr;
  Ring* out = nullptr;
  std::atomic<int>* running = nullptr;
};

char* NewBlock(Worker* w, const Mix& mix) {
  const size_t n = DrawSize(w->rng, mix);
  char* p = static_cast<char*>(malloc(n));
  p[0] = static_cast<char>(n);
  p[n - 1] = 1;
  w->checksum += n;
  return p;
}

void Run(Worker* w, const Mix& mix, long ops, int remote_one_in, bool read) {
  uint64_t drained = 0;
  for (long i = 0; i < ops; ++i) {
    const size_t k = Next(w->rng) % w->blocks.size();
    char* old = w->blocks[k];
    if (remote_one_in > 0 && i % remote_one_in == 0) {
      if (!w->out->Push(old)) {
        ++w->full;
        free(old);
      }
    } else {
      free(old);
    }
    w->blocks[k] = NewBlock(w, mix);
    if ((i & 15) == 0) w->in->Drain(read ? &drained : nullptr);
  }
  // Keep draining until every producer has stopped, then once more.
  w->running->fetch_sub(1, std::memory_order_acq_rel);
  while (w->running->load(std::memory_order_acquire) != 0) {
    if (w->in->Drain(read ? &drained : nullptr) == 0) std::this_thread::yield();
  }
  w->in->Drain(read ? &drained : nullptr);
  w->drained_sum = drained;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  const int remote_one_in = argc > 2 ? atoi(argv[2]) : 8;
  const Mix mix = ParseMix(argc > 3 ? argv[3] : "issue");
  const bool read = argc > 4 && atoi(argv[4]) != 0;
  const long total_ops = argc > 5 ? atol(argv[5]) : 6000000L;
  const int slots = argc > 6 ? atoi(argv[6]) : 4000;
  if (threads < 1 || threads > 64 || remote_one_in < 0 || total_ops < 1 || slots < 1) {
    fprintf(stderr, "remote_mix: bad arguments\n");
    return 2;
  }
  std::vector<Ring> rings(threads);
  std::vector<Worker> workers(threads);
  std::atomic<int> running{threads};
  for (int t = 0; t < threads; ++t) {
    Worker& w = workers[t];
    w.rng = 0x9e3779b97f4a7c15ULL * (t + 1);
    w.in = &rings[t];
    w.out = &rings[(t + 1) % threads];
    w.running = &running;
  }
  // Each thread fills its own working set, so its blocks start in its own
  // spans, as a server's per-thread state would.
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Worker& w = workers[t];
      for (int i = 0; i < slots; ++i) w.blocks.push_back(NewBlock(&w, mix));
      Run(&w, mix, total_ops / threads, remote_one_in, read);
      for (char* p : w.blocks) free(p);
    });
  }
  for (auto& th : pool) th.join();
  uint64_t sum = 0;
  for (auto& w : workers) sum += w.checksum;
  printf("remote_mix: %llu\n", static_cast<unsigned long long>(sum));
}
