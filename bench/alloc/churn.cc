// Single-thread small-object churn: a std::map of strings with random
// inserts and erases, plus bursts of short-lived 16-256 B blocks, like an
// interpreter or a compiler's front end.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  const long ops = 3000000L * scale;
  std::map<uint32_t, std::string> m;
  std::vector<void*> burst;
  uint64_t rng = 42, sum = 0;
  for (long i = 0; i < ops; ++i) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const uint32_t key = static_cast<uint32_t>(rng % 100000);
    if (rng & (1u << 20)) {
      m[key].assign(20 + rng % 40, 'k');
    } else {
      m.erase(key);
    }
    burst.push_back(malloc(16 + (rng >> 24) % 241));
    if (burst.size() == 64) {
      for (void* p : burst) free(p);
      burst.clear();
    }
    sum += m.size();
  }
  for (void* p : burst) free(p);
  printf("churn: %llu\n", static_cast<unsigned long long>(sum));
}
