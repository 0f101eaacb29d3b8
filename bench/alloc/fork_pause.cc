// fork() pause of a process with a large heap: what a fork-snapshot heap
// dump stops the program for. The kernel copies one page-table entry per
// 4 KiB page (or one per 2 MiB huge page), so the pause grows with RSS.
// Builds a heap of about `MiB` (default 1024) in blocks of 64 KiB-1 MiB and
// small objects, touches all of it, then times fork() in the parent.
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// kB value of a field summed over /proc/self/smaps_rollup.
long RollupKb(const char* field) {
  FILE* f = fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  const size_t n = strlen(field);
  while (fgets(line, sizeof line, f) != nullptr) {
    if (strncmp(line, field, n) == 0 && line[n] == ':') kb = atol(line + n + 1);
  }
  fclose(f);
  return kb;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? strtoul(argv[1], nullptr, 10) : 1024;
  const size_t target = mib << 20;
  std::vector<void*> blocks;
  blocks.reserve(1 << 22);
  uint64_t rng = 88172645463325252ULL;
  size_t total = 0;
  // A quarter in small objects (16-256 B), the rest in blocks.
  while (total < target / 4) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const size_t n = 16 + rng % 241;
    char* p = static_cast<char*>(malloc(n));
    memset(p, 1, n);
    blocks.push_back(p);
    total += n;
  }
  while (total < target) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    const size_t n = (size_t{64} << 10) + rng % (size_t{960} << 10);
    char* p = static_cast<char*>(malloc(n));
    for (size_t off = 0; off < n; off += 4096) p[off] = 1;
    blocks.push_back(p);
    total += n;
  }
  const double rss_gib = RollupKb("Rss") / 1048576.0;
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    const double t0 = NowMs();
    const pid_t pid = fork();
    if (pid == 0) _exit(0);
    const double t1 = NowMs();
    waitpid(pid, nullptr, 0);
    if (t1 - t0 < best) best = t1 - t0;
  }
  printf("fork: heap %zu MiB, RSS %.2f GiB (AnonHugePages %.2f GiB), best fork %.2f ms = %.2f ms per GiB of RSS\n",
         mib, rss_gib, RollupKb("AnonHugePages") / 1048576.0, best, best / rss_gib);
  for (void* p : blocks) free(p);
}
