// Producer/consumer: one thread allocates messages of 16-512 B, another
// reads and frees them, through a bounded lock-free ring. Every free is a
// cross-thread free.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  const long messages = 4000000L * scale;
  constexpr size_t kRing = 4096;
  std::vector<std::atomic<char*>> ring(kRing);
  std::atomic<uint64_t> sum{0};
  std::thread consumer([&] {
    uint64_t s = 0;
    for (long i = 0; i < messages; ++i) {
      auto& slot = ring[static_cast<size_t>(i) % kRing];
      char* p;
      while ((p = slot.exchange(nullptr, std::memory_order_acquire)) == nullptr) std::this_thread::yield();
      s += static_cast<unsigned char>(p[0]);
      free(p);
    }
    sum = s;
  });
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  for (long i = 0; i < messages; ++i) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const size_t n = 16 + rng % 497;
    char* p = static_cast<char*>(malloc(n));
    memset(p, static_cast<int>(i), 16);
    auto& slot = ring[static_cast<size_t>(i) % kRing];
    while (slot.load(std::memory_order_relaxed) != nullptr) std::this_thread::yield();
    slot.store(p, std::memory_order_release);
  }
  consumer.join();
  printf("prodcons: %llu\n", static_cast<unsigned long long>(sum.load()));
}
