// Cache-scratch (false sharing): the main thread allocates one small object
// per worker back to back; each worker frees its object, then repeatedly
// allocates a small object and writes it hard. An allocator that gives
// threads objects from one cache line makes the workers fight over it.
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  constexpr int kThreads = 2, kObjSize = 8;
  const int iterations = 200 * scale, repetitions = 50000;
  std::vector<char*> first(kThreads);
  for (auto& p : first) p = static_cast<char*>(malloc(kObjSize));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
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
