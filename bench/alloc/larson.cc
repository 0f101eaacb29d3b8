// Larson-like server churn: each thread owns a table of blocks and replaces
// random ones with new blocks of random size (8-1024 B). Every round the
// threads exit and new ones take over their tables, so blocks are freed by
// threads that did not allocate them, as in a server's worker turnover.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// Cache-line aligned: each thread updates its own table's rng and checksum on
// every operation, and two tables in one line would time that false sharing
// (wherever the allocator happened to put the vector) instead of the
// allocator; cache-scratch is the workload for allocator-made false sharing.
struct alignas(64) Table {
  std::vector<char*> blocks;
  uint64_t rng;
  uint64_t checksum = 0;
};

uint64_t Next(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

void Round(Table* t, int ops) {
  for (int i = 0; i < ops; ++i) {
    const size_t k = Next(t->rng) % t->blocks.size();
    free(t->blocks[k]);
    const size_t n = 8 + Next(t->rng) % 1017;
    char* p = static_cast<char*>(malloc(n));
    p[0] = static_cast<char>(n);
    p[n - 1] = 1;
    t->checksum += static_cast<unsigned char>(p[0]);
    t->blocks[k] = p;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int scale = argc > 1 ? atoi(argv[1]) : 1;
  constexpr int kThreads = 2, kBlocks = 4000, kRounds = 40;
  const int ops = 50000 * scale;
  std::vector<Table> tables(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    tables[t].rng = 88172645463325252ULL + t;
    for (int i = 0; i < kBlocks; ++i) tables[t].blocks.push_back(static_cast<char*>(malloc(8 + i % 1017)));
  }
  // Each generation of threads exits after its round; the next generation
  // inherits the tables and frees what its predecessors allocated.
  for (int r = 0; r < kRounds; ++r) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(Round, &tables[t], ops);
    for (auto& th : threads) th.join();
  }
  uint64_t sum = 0;
  for (auto& t : tables) {
    sum += t.checksum;
    for (char* p : t.blocks) free(p);
  }
  printf("larson: %llu\n", static_cast<unsigned long long>(sum));
}
