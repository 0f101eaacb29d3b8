// The two cross-thread mixes of the allocator targets (docs/ALLOCATOR.md,
// Benchmarks): T threads each keep a working set of blocks and, per
// operation, replace a random one with a block of a random size. One free in
// R is handed to the next thread (ring order) through the single-producer,
// single-consumer ring the two share, and freed there, unread; each thread
// drains its incoming ring every 16 operations.
//
// Sizes are log-uniform from 16 B to 32 KiB: size = 16 * 2^(11 * u^k) for u
// uniform in [0, 1), so k = 1 gives each doubling the same share and k = 2
// favours the small end; a tail of large blocks (64 KiB-1 MiB, log-uniform)
// is drawn instead with the mix's probability. Each size is a quantile of
// that law plus a jitter of up to 1/16 (BuildSizes).
//   A (short-lived, small): k = 2, 1,000 blocks a thread, 1 in 1,000 large.
//   B (long-lived, larger): k = 1, 4,000 blocks a thread, 1 in 200 large.
// Both: 4 threads, 6 M operations in all, one free in 4 handed over.
//
// Usage: alloc_bench_cross_mix A|B [OPS] [THREADS]
// Fixed seeds; the printed checksum depends only on the arguments, so run.sh
// can compare the output across allocators. A full ring makes the producer
// free the block itself (not printed: scheduling decides how often).
#include <atomic>
#include <cmath>
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

struct Mix {
  double skew;          // k above
  int blocks;           // working set per thread
  uint32_t large_in;    // one draw in large_in is a large block
  int remote_one_in;    // one free in remote_one_in goes to the next thread
};

bool ParseMix(const char* name, Mix* mix) {
  if (strcmp(name, "A") == 0) *mix = {2.0, 1000, 1000, 4};
  else if (strcmp(name, "B") == 0) *mix = {1.0, 4000, 200, 4};
  else return false;
  return true;
}

// The size distribution as a table of 4,096 quantiles, drawn by index plus
// a jitter of up to 1/16 of the size: pow and exp2 per draw (the first
// version) were half of the program's instructions, more than the allocator.
struct Sizes {
  uint32_t small[4096];
  uint32_t large[4096];
  uint32_t large_in;
};

void BuildSizes(const Mix& mix, Sizes* t) {
  for (int q = 0; q < 4096; ++q) {
    const double u = (q + 0.5) / 4096.0;
    t->small[q] = static_cast<uint32_t>(16.0 * std::exp2(11.0 * std::pow(u, mix.skew)));
    t->large[q] = static_cast<uint32_t>(65536.0 * std::exp2(4.0 * u));
  }
  t->large_in = mix.large_in;
}

size_t DrawSize(uint64_t& rng, const Sizes& t) {
  const uint64_t r = Next(rng);
  const uint32_t* table = (r >> 52) % t.large_in == 0 ? t.large : t.small;
  const uint32_t base = table[r & 4095];
  const size_t n = base + (r >> 12) % (base / 16 + 1);
  return n > 32768 && table == t.small ? 32768 : n;
}

struct alignas(64) Worker {
  std::vector<char*> blocks;
  uint64_t rng = 0;
  uint64_t checksum = 0;
  Ring* in = nullptr;
  Ring* out = nullptr;
  std::atomic<int>* running = nullptr;
};

char* NewBlock(Worker* w, const Sizes& sizes) {
  const size_t n = DrawSize(w->rng, sizes);
  char* p = static_cast<char*>(malloc(n));
  p[0] = static_cast<char>(n);
  p[n - 1] = 1;
  w->checksum += n;
  return p;
}

void Run(Worker* w, const Mix& mix, const Sizes& sizes, long ops) {
  for (long i = 0; i < ops; ++i) {
    const size_t k = Next(w->rng) % w->blocks.size();
    char* old = w->blocks[k];
    if (i % mix.remote_one_in == 0 && w->out != w->in) {
      if (!w->out->Push(old)) free(old);
    } else {
      free(old);
    }
    w->blocks[k] = NewBlock(w, sizes);
    if ((i & 15) == 0) w->in->Drain();
  }
  w->running->fetch_sub(1, std::memory_order_acq_rel);
  while (w->running->load(std::memory_order_acquire) != 0) {
    if (w->in->Drain() == 0) std::this_thread::yield();
  }
  w->in->Drain();
}

}  // namespace

int main(int argc, char** argv) {
  Mix mix;
  if (argc < 2 || !ParseMix(argv[1], &mix)) {
    fprintf(stderr, "usage: alloc_bench_cross_mix A|B [OPS] [THREADS]\n");
    return 2;
  }
  const long total_ops = argc > 2 ? atol(argv[2]) : 6000000L;
  const int threads = argc > 3 ? atoi(argv[3]) : 4;
  if (total_ops < 1 || threads < 1 || threads > 64) {
    fprintf(stderr, "cross_mix: bad arguments\n");
    return 2;
  }
  static Sizes sizes;
  BuildSizes(mix, &sizes);
  std::vector<Ring> rings(threads);
  std::vector<Worker> workers(threads);
  std::atomic<int> running{threads};
  for (int t = 0; t < threads; ++t) {
    workers[t].rng = 0x2545f4914f6cdd1dULL * (t + 1);
    workers[t].in = &rings[t];
    workers[t].out = &rings[(t + 1) % threads];
    workers[t].running = &running;
  }
  // Each thread fills its own working set, so its blocks start in its own
  // spans, as a server's per-thread state would.
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      Worker& w = workers[t];
      for (int i = 0; i < mix.blocks; ++i) w.blocks.push_back(NewBlock(&w, sizes));
      Run(&w, mix, sizes, total_ops / threads);
      for (char* p : w.blocks) free(p);
    });
  }
  for (auto& th : pool) th.join();
  uint64_t sum = 0;
  for (auto& w : workers) sum += w.checksum;
  printf("cross_mix %s: %llu\n", argv[1], static_cast<unsigned long long>(sum));
}
