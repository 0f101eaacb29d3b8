// Large blocks: a working set of 16 blocks of 64 KiB-16 MiB, replaced at
// random; each new block is written once per 4 KiB page, as a program that
// uses its buffers would.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  constexpr int kLive = 16;
  const int ops = 3000 * scale;
  char* live[kLive] = {};
  size_t sizes[kLive] = {};
  uint64_t rng = 12345, sum = 0;
  for (int i = 0; i < ops; ++i) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const int k = static_cast<int>(rng % kLive);
    free(live[k]);
    // Log-uniform between 64 KiB and 16 MiB: small blocks are the common case.
    const int shift = 16 + static_cast<int>((rng >> 8) % 8);
    const size_t n = (size_t{1} << shift) + (rng >> 16) % (size_t{1} << shift);
    char* p = static_cast<char*>(malloc(n));
    for (size_t off = 0; off < n; off += 4096) p[off] = static_cast<char>(off);
    sum += static_cast<unsigned char>(p[n / 2 & ~size_t{4095}]);
    live[k] = p;
    sizes[k] = n;
  }
  for (char* p : live) free(p);
  printf("large: %llu %zu\n", static_cast<unsigned long long>(sum), sizes[0] > 0 ? size_t{1} : size_t{0});
}
