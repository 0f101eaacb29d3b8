// The allocator's stress test (tests/allocator/alloc_stress.sh): 4 threads malloc,
// calloc, realloc (growth chains), memalign, posix_memalign, aligned_alloc
// and new[] blocks of every size class and large sizes, hand one block in
// eight to another thread to free, and keep each block filled with a pattern
// of its own; meanwhile the main thread has the heap dumped on the dump signal
// and forks. Every block is checked when it is freed or grown, and every live
// block of every thread after each dump. A fork's child checks the blocks
// its forking thread holds, allocates and frees, and exits; a child that
// does not end in 20 s is a hang.
//   alloc_stress_program SECONDS DUMP_DIR
// Needs LD_PRELOAD=libdump.so and LIBDUMP_HEAPDUMP_SIGNAL=USR2 with
// LIBDUMP_HEAPDUMP_PATH=DUMP_DIR/d.%n.dump. Prints a summary; exit 0 or 1.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;
constexpr size_t kSlotsPerThread = 3000;
constexpr size_t kMaxLarge = 4 << 20;

enum class Kind : uint8_t { kMalloc, kAligned, kNewArray };

struct Block {
  uint8_t* p = nullptr;
  size_t size = 0;
  uint64_t id = 0;
  Kind kind = Kind::kMalloc;
};

uint8_t PatternByte(uint64_t id, size_t i) { return static_cast<uint8_t>((id * 0x9e3779b1u) >> 11) ^ static_cast<uint8_t>(i * 7 + (i >> 8)); }

// Large blocks: every byte of the first and last 4 KiB, and one in 61 between.
template <class F>
void ForCheckedBytes(size_t size, F&& f) {
  if (size <= 16384) {
    for (size_t i = 0; i < size; ++i) f(i);
    return;
  }
  for (size_t i = 0; i < 4096; ++i) f(i);
  for (size_t i = 4096; i < size - 4096; i += 61) f(i);
  for (size_t i = size - 4096; i < size; ++i) f(i);
}

void Fill(const Block& b, size_t from = 0) {
  for (size_t i = from; i < b.size; ++i) b.p[i] = PatternByte(b.id, i);
}

std::atomic<bool> g_failed{false};

void Check(const Block& b, size_t n, const char* where) {
  ForCheckedBytes(n, [&](size_t i) {
    if (b.p[i] != PatternByte(b.id, i) && !g_failed.exchange(true)) {
      std::fprintf(stderr, "FAIL: block %llu (%p, %zu bytes) byte %zu is 0x%02x, want 0x%02x (%s)\n",
                   static_cast<unsigned long long>(b.id), static_cast<void*>(b.p), b.size, i, b.p[i],
                   PatternByte(b.id, i), where);
    }
  });
}

struct Rng {
  uint64_t s;
  uint64_t Next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
};

// Sizes: every small size class (1 B to 32 KiB, log-uniform) and, one time
// in 40, a large block up to 4 MiB.
size_t PickSize(Rng& r) {
  if (r.Below(40) == 0) return 32768 + r.Below(kMaxLarge - 32768);
  const int bits = 1 + static_cast<int>(r.Below(15));
  return 1 + r.Below(size_t{1} << bits);
}

void Release(const Block& b) {
  switch (b.kind) {
    case Kind::kNewArray:
      delete[] b.p;
      break;
    default:
      std::free(b.p);
  }
}

// Hand-over queues: thread t frees what others put in inbox[t].
struct Inbox {
  std::mutex mu;
  std::vector<Block> blocks;
};
Inbox g_inbox[kThreads];

std::atomic<uint64_t> g_next_id{1};
std::atomic<unsigned> g_dump_epoch{0};
std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_ops{0}, g_handed{0}, g_sweeps{0}, g_reallocs{0};

// What a fork's child may check: the forking (main) thread's own blocks.
std::vector<Block>* g_main_blocks = nullptr;

Block Make(Rng& r) {
  Block b;
  b.id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  b.size = PickSize(r);
  switch (r.Below(8)) {
    case 0: {
      const size_t align = size_t{16} << r.Below(9);  // 16 B .. 4 KiB
      b.p = static_cast<uint8_t*>(memalign(align, b.size));
      b.kind = Kind::kAligned;
      if (b.p && reinterpret_cast<uintptr_t>(b.p) % align != 0) {
        std::fprintf(stderr, "FAIL: memalign(%zu) gave %p\n", align, static_cast<void*>(b.p));
        g_failed = true;
      }
      break;
    }
    case 1: {
      const size_t align = size_t{32} << r.Below(12);  // 32 B .. 64 KiB
      void* p = nullptr;
      if (posix_memalign(&p, align, b.size) != 0) p = nullptr;
      b.p = static_cast<uint8_t*>(p);
      b.kind = Kind::kAligned;
      if (b.p && reinterpret_cast<uintptr_t>(b.p) % align != 0) {
        std::fprintf(stderr, "FAIL: posix_memalign(%zu) gave %p\n", align, static_cast<void*>(b.p));
        g_failed = true;
      }
      break;
    }
    case 2: {
      const size_t align = size_t{64} << r.Below(4);
      b.size = (b.size + align - 1) / align * align;
      b.p = static_cast<uint8_t*>(aligned_alloc(align, b.size));
      b.kind = Kind::kAligned;
      break;
    }
    case 3:
      b.p = new uint8_t[b.size];
      b.kind = Kind::kNewArray;
      break;
    case 4: {
      b.p = static_cast<uint8_t*>(std::calloc(1, b.size));
      for (size_t i = 0; b.p && i < b.size; i += 97) {
        if (b.p[i] != 0 && !g_failed.exchange(true)) std::fprintf(stderr, "FAIL: calloc(%zu) byte %zu not zero\n", b.size, i);
      }
      break;
    }
    default:
      b.p = static_cast<uint8_t*>(std::malloc(b.size));
  }
  if (b.p == nullptr) {
    std::fprintf(stderr, "FAIL: allocation of %zu bytes failed\n", b.size);
    g_failed = true;
    std::abort();
  }
  if (malloc_usable_size(b.p) < b.size && !g_failed.exchange(true)) {
    std::fprintf(stderr, "FAIL: usable size %zu < %zu\n", malloc_usable_size(b.p), b.size);
  }
  Fill(b);
  return b;
}

// A realloc growth chain: grown by half again, a few times, the kept prefix
// checked at each step (as a growing string or vector does).
void Grow(Block& b, Rng& r) {
  const int steps = 1 + static_cast<int>(r.Below(6));
  for (int s = 0; s < steps; ++s) {
    size_t to = b.size + b.size / 2 + 1 + r.Below(64);
    if (to > kMaxLarge) to = 1 + r.Below(100);  // and shrink, now and then
    auto* q = static_cast<uint8_t*>(std::realloc(b.p, to));
    if (q == nullptr) {
      std::fprintf(stderr, "FAIL: realloc to %zu failed\n", to);
      g_failed = true;
      std::abort();
    }
    const size_t kept = to < b.size ? to : b.size;
    b.p = q;
    const size_t old = b.size;
    b.size = to;
    Check(b, kept, "kept across realloc");
    if (to > old) Fill(b, old);
    g_reallocs.fetch_add(1, std::memory_order_relaxed);
  }
}

void Sweep(const std::vector<Block>& blocks) {
  for (const Block& b : blocks) {
    if (b.p) Check(b, b.size, "after a dump");
  }
  g_sweeps.fetch_add(1, std::memory_order_relaxed);
}

void Worker(int t) {
  Rng r{0x1234567ull * static_cast<uint64_t>(t + 1) + 99};
  std::vector<Block> blocks(kSlotsPerThread);
  unsigned epoch = g_dump_epoch.load();
  uint64_t ops = 0;
  while (!g_stop.load(std::memory_order_relaxed) && !g_failed.load(std::memory_order_relaxed)) {
    if (g_dump_epoch.load(std::memory_order_acquire) != epoch) {
      epoch = g_dump_epoch.load(std::memory_order_acquire);
      Sweep(blocks);
    }
    // Blocks other threads handed over: checked, then freed here.
    if ((ops & 63) == 0) {
      std::vector<Block> in;
      {
        std::lock_guard<std::mutex> g(g_inbox[t].mu);
        in.swap(g_inbox[t].blocks);
      }
      for (const Block& b : in) {
        Check(b, b.size, "handed over");
        Release(b);
      }
    }
    Block& b = blocks[r.Below(kSlotsPerThread)];
    if (b.p == nullptr) {
      b = Make(r);
    } else if (b.kind == Kind::kMalloc && r.Below(6) == 0) {
      Check(b, b.size, "before realloc");
      Grow(b, r);
    } else {
      Check(b, b.size, "before free");
      if (r.Below(8) == 0) {
        const int to = static_cast<int>((t + 1 + r.Below(kThreads - 1)) % kThreads);
        std::lock_guard<std::mutex> g(g_inbox[to].mu);
        g_inbox[to].blocks.push_back(b);
        g_handed.fetch_add(1, std::memory_order_relaxed);
      } else {
        Release(b);
      }
      b = Block{};
    }
    ++ops;
  }
  Sweep(blocks);
  for (const Block& b : blocks) {
    if (b.p) Release(b);
  }
  g_ops.fetch_add(ops);
}

// A child of the fork: its forking thread's blocks are intact, and the
// allocator works (all sizes, freed at once).
[[noreturn]] void Child() {
  alarm(20);
  int bad = 0;
  for (const Block& b : *g_main_blocks) {
    if (!b.p) continue;
    ForCheckedBytes(b.size, [&](size_t i) { bad += b.p[i] != PatternByte(b.id, i); });
  }
  Rng r{static_cast<uint64_t>(getpid()) * 2654435761u + 1};
  std::vector<Block> mine;
  for (int i = 0; i < 300; ++i) mine.push_back(Make(r));
  for (Block& b : mine) {
    ForCheckedBytes(b.size, [&](size_t i) { bad += b.p[i] != PatternByte(b.id, i); });
    Release(b);
  }
  _exit(bad == 0 && !g_failed ? 0 : 3);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: alloc_stress_program SECONDS DUMP_DIR\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const std::string dir = argv[2];
  std::vector<Block> main_blocks;
  g_main_blocks = &main_blocks;
  Rng r{42};
  for (int i = 0; i < 200; ++i) main_blocks.push_back(Make(r));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(Worker, t);
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  unsigned dumps = 0, forks = 0;
  while (elapsed() < seconds && !g_failed) {
    // One dump: requested, waited for (written as .partial, then renamed),
    // then every thread checks all its blocks.
    kill(getpid(), SIGUSR2);
    const std::string path = dir + "/d." + std::to_string(dumps + 1) + ".dump";
    const auto asked = elapsed();
    while (!Exists(path) && elapsed() - asked < 120) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!Exists(path)) {
      std::fprintf(stderr, "FAIL: dump %u never written\n", dumps + 1);
      g_failed = true;
      break;
    }
    unlink(path.c_str());
    ++dumps;
    g_dump_epoch.fetch_add(1, std::memory_order_release);
    // Forks, while the workers run on.
    for (int f = 0; f < 2 && !g_failed; ++f) {
      Block& b = main_blocks[r.Below(main_blocks.size())];
      Check(b, b.size, "main thread's");
      Release(b);
      b = Make(r);
      const pid_t child = fork();
      if (child == 0) Child();
      if (child < 0) {
        std::perror("fork");
        g_failed = true;
        break;
      }
      int status = 0;
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      ++forks;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "FAIL: child %d of fork %u: %s %d\n", child, forks,
                     WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        g_failed = true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  g_stop = true;
  for (auto& t : threads) t.join();
  for (Inbox& in : g_inbox) {
    for (const Block& b : in.blocks) {
      Check(b, b.size, "left over");
      Release(b);
    }
  }
  for (const Block& b : main_blocks) Check(b, b.size, "main thread's");
  std::printf("%s: %.0f s, %u dumps, %u forks, %llu operations, %llu reallocs, %llu handed over, %llu sweeps\n",
              g_failed ? "FAIL" : "ok", elapsed(), dumps, forks, static_cast<unsigned long long>(g_ops.load()),
              static_cast<unsigned long long>(g_reallocs.load()), static_cast<unsigned long long>(g_handed.load()),
              static_cast<unsigned long long>(g_sweeps.load()));
  return g_failed ? 1 : 0;
}
