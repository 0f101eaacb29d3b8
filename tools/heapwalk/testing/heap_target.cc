// The program the walker's core test cores: four threads and the main thread
// each make a KnownHeap (testing/known_heap.h) on glibc's malloc, then the
// main thread prints every known block, the freed ones by list, and
// mallinfo2's figures, ends with "ready", and waits for stdin to close. From
// the frees on nothing allocates (the report is written with write(2) from
// a static buffer), so the core shows the heap the report describes.
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "known_heap.h"

using libdump::heapwalk::testing::KnownHeap;

namespace {

constexpr int kThreads = 4;
KnownHeap known[kThreads + 1];
std::atomic<int> ready{0};
std::atomic<bool> release{false};
char line[256];

void Print(const char* fmt, unsigned long a, unsigned long b = 0) {
  const int n = std::snprintf(line, sizeof line, fmt, a, b);
  if (n > 0 && write(1, line, static_cast<size_t>(n)) < 0) _exit(1);
}

}  // namespace

int main() {
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);  // gcore, run by the test, is not our parent
  std::thread threads[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    threads[t] = std::thread([t] {
      known[t + 1].Allocate();
      ready.fetch_add(1);
      while (!release.load()) usleep(1000);
    });
  }
  known[0].Allocate();
  while (ready.load() < kThreads) usleep(1000);
  const struct mallinfo2 mi = mallinfo2();
  for (const KnownHeap& k : known) {
    for (void* p : k.live) Print("live %lx %lu\n", reinterpret_cast<unsigned long>(p), malloc_usable_size(p));
    for (void* p : k.tcache) Print("tcache %lx\n", reinterpret_cast<unsigned long>(p));
    for (void* p : k.fastbin) Print("fastbin %lx\n", reinterpret_cast<unsigned long>(p));
    for (void* p : k.bin) Print("bin %lx\n", reinterpret_cast<unsigned long>(p));
  }
  Print("threads %lu\n", kThreads + 1);
  Print("mallinfo %lu %lu ", mi.arena, mi.ordblks);
  Print("%lu %lu ", mi.smblks, mi.hblks);
  Print("%lu %lu ", mi.hblkhd, mi.fsmblks);
  Print("%lu %lu\nready\n", mi.uordblks, mi.fordblks);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  release.store(true);
  for (auto& t : threads) t.join();
  return 0;
}
