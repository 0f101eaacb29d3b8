// Cache-scratch (false sharing): the main thread allocates one small object
// per worker back to back; each worker frees its object, then repeatedly
// allocates a small object and writes it hard. An allocator that gives
// threads objects from one cache line makes the workers fight over it.
// `warm` (second argument): each worker first allocates and frees one
// object of its own, so that its free of the main thread's object is not
// its first call into the allocator (jemalloc's first free on a thread
// without a cache goes back to the arena, which alone spares it the false
// sharing; docs/ALLOCATOR.md).
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  constexpr int kThreads = 2, kObjSize = 8;
  const bool warm = argc > 2 && std::strcmp(argv[2], "warm") == 0;
  const int iterations = 200 * scale, repetitions = 50000;
  std::vector<char*> first(kThreads);
  for (auto& p : first) p = static_cast<char*>(malloc(kObjSize));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (warm) {
        volatile char* w = static_cast<char*>(malloc(kObjSize));
        w[0] = 1;
        free(const_cast<char*>(w));
      }
      free(first[t]);
      for (int i = 0; i < iterations; ++i) {
        volatile char* p = static_cast<char*>(malloc(kObjSize));
        for (int r = 0; r < repetitions; ++r) {
          for (int k = 0; k < kObjSize; ++k) p[k] = static_cast<char>(p[k] + 1);
        }
        free(const_cast<char*>(p));
      }
    });
  }
  for (auto& th : threads) th.join();
  puts("cache-scratch: done");
}
