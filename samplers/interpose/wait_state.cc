// The interposition's state: which wait profiles are on, each thread's
// generator, and the stack capture warmed before the first timed wait. In
// libdump::samplers (not the interposition's library, which a program may
// leave out), since the profilers and the flight recorder turn it on.
#include "samplers/interpose/wait_state.h"

#include "samplers/unwind/allocation_stack_capture.h"

namespace libdump::samplers {

std::atomic<int> g_wait_profiling{0};
constinit thread_local WaitThreadState t_wait __attribute__((tls_model("initial-exec"))) = {};

namespace {

std::atomic<uint64_t> g_seed{0x9e3779b97f4a7c15ULL};
std::atomic<uint64_t> g_threads_seeded{0};

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void SetWaitSamplingSeed(uint64_t seed) {
  g_seed.store(seed, std::memory_order_relaxed);
  g_threads_seeded.store(0, std::memory_order_relaxed);
  t_wait.rng = 0;
}

uint64_t WaitRandom() {
  uint64_t x = t_wait.rng;
  if (x == 0) {
    x = SplitMix(g_seed.load(std::memory_order_relaxed) + g_threads_seeded.fetch_add(1, std::memory_order_relaxed));
    if (x == 0) x = 1;
  }
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  t_wait.rng = x;
  return x;
}

void WarmWaitStackCapture() {
  t_wait.in_profiler = true;
  WarmStackCapture();
  t_wait.in_profiler = false;
}

}  // namespace libdump::samplers
