// WriteHeapDump throughput and pause (issue 4): builds N linked objects of
// log-uniform sizes in [min, max] bytes and dumps the heap to /dev/null and
// to files, zstd off and on, stopping the world or with a fork snapshot.
//
// The graph, identical in bench/dump/go and bench/dump/java (same generator,
// same sizes): node i is ONE heap object of s_i bytes (s_i log-uniform in
// [min, max], rounded to 16); its first word points to node i-1, its second
// to a random one of the 1024 nodes before it; the rest is payload (here: the
// remaining Cells, all zero like the null elements of the Java peer's
// Object[]; --payload random gives each a 16-bit random `data` word, as
// the Go peer's). A global
// holds the last node. Here a node is libdump::make_array<Cell>(s/16): a
// typed object whose type the dump reports.
//
// Each case runs --reps times; the median is printed. "pause" is the largest
// gap seen by a ticker thread that wakes every 50 us (the time other threads
// were stopped), "call" the caller's time in WriteHeapDump.
//
// Usage: dump_bench [--n N] [--min B] [--max B] [--reps R] [--shm DIR] [--disk DIR] [--thp] [--keep]
//                   [--payload zero|random] [--threads T] [--level L]
//                   [--cases null,shm,disk,null-zstd,shm-zstd,disk-zstd,fork-null,fork-shm,fork-disk,
//                            fork-disk-zstd,disk-zstd-1t,...]
// A "-zstd" case compresses on --threads processes (0: every CPU), a
// "-zstd-1t" case on the dumping thread (before parallel compression).
// Output: one line per case, "RESULT key=value ...", and a readable table.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "libdump/heap.h"
#include "libdump/heap_dump.h"
#include "libdump/typed.h"

struct Cell {
  Cell* next;
  Cell* other;  // only cell 0 of a node links; the others carry data
};
LIBDUMP_TYPE(Cell, next, other)

namespace {

Cell* g_root = nullptr;  // a data root: the whole graph is reachable from it

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// splitmix64: the same sequence in the Go and Java peers.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// Log-uniform in [lo, hi], rounded down to a multiple of 16 (at least 16).
uint64_t NodeSize(Rng& r, double lo, double hi) {
  const double u = double(r.Next() >> 11) * (1.0 / 9007199254740992.0);
  const uint64_t s = uint64_t(lo * std::exp(u * std::log(hi / lo)));
  return std::max<uint64_t>(16, s & ~uint64_t{15});
}

struct Graph {
  uint64_t nodes = 0;
  uint64_t bytes = 0;  // sum of the node sizes asked for
};

// --thp (an experiment, not what libdump does): madvise(MADV_HUGEPAGE) each
// arena as the heap grows into it, so fork copies 2 MiB page-table entries.
void AdviseHugePages(bool on) {
  static uintptr_t advised = 0;
  if (!on) return;
  const libdump::HeapRange h = libdump::GetHeapRange();
  const uintptr_t from = std::max(advised, h.lo);
  if (h.hi > from) {
    madvise(reinterpret_cast<void*>(from), h.hi - from, MADV_HUGEPAGE);  // gaps: ENOMEM, rest applied
    advised = h.hi;
  }
}

Graph Build(uint64_t n, double lo, double hi, bool thp, bool random_payload) {
  Rng r{42};
  Cell* recent[1024] = {};
  Cell* prev = nullptr;
  Graph g;
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 256 == 0) AdviseHugePages(thp);
    const uint64_t s = NodeSize(r, lo, hi);
    const uint64_t cells = s / 16;
    Cell* c = libdump::make_array<Cell>(cells);
    c[0].next = prev;
    c[0].other = i ? recent[r.Next() % std::min<uint64_t>(i, 1024)] : nullptr;
    if (random_payload) {
      for (uint64_t k = 1; k < cells; ++k) c[k].other = reinterpret_cast<Cell*>(r.Next() & 0xFFFF);
    }
    recent[i % 1024] = c;
    prev = c;
    g.bytes += s;
  }
  g.nodes = n;
  g_root = prev;
  return g;
}

// Largest gap between two wake-ups of a thread sleeping 50 us at a time.
class Ticker {
 public:
  Ticker() : thread_([this] { Loop(); }) {}
  ~Ticker() {
    stop_ = true;
    thread_.join();
  }
  void Reset() { reset_ = true; while (reset_.load()) std::this_thread::yield(); }
  // Waits for two more ticks first: the gap that ends when the world resumes
  // is only recorded once the ticker runs again.
  uint64_t MaxGapNs() const {
    const uint64_t c = ticks_.load();
    while (ticks_.load() < c + 2) std::this_thread::yield();
    return max_gap_.load();
  }

 private:
  void Loop() {
    uint64_t last = NowNs();
    const timespec nap{0, 50000};
    while (!stop_.load(std::memory_order_relaxed)) {
      nanosleep(&nap, nullptr);
      const uint64_t t = NowNs();
      if (reset_.load(std::memory_order_relaxed)) {
        max_gap_ = 0;
        reset_ = false;
      } else if (t - last > max_gap_.load(std::memory_order_relaxed)) {
        max_gap_ = t - last;
      }
      last = t;
      ticks_.fetch_add(1);
    }
  }
  std::atomic<uint64_t> ticks_{0};
  std::atomic<bool> stop_{false}, reset_{false};
  std::atomic<uint64_t> max_gap_{0};
  std::thread thread_;
};

struct Case {
  std::string name;
  std::string where;  // "null", "shm", "disk"
  bool zstd, fork;
  bool one_thread = false;  // "-1t": compressed on the dumping thread
};

// CPU seconds of this process and of every child it (or they) waited for:
// the dump's own work wherever it ran, the fork snapshot and its compressors.
double CpuSeconds() {
  double t = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    t += u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  return t;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = 1000000;
  double lo = 16, hi = 4096;
  int reps = 3;
  std::string shm = "/dev/shm", disk = "/tmp";
  std::string cases = "null,shm,disk,null-zstd,shm-zstd,disk-zstd,fork-null,fork-shm,fork-disk";
  bool thp = false, keep = false;  // --keep: leave the last dump file of each case
  bool random_payload = false;
  int threads = 0, level = 1;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--thp") { thp = true; --i; continue; }
    if (a == "--keep") { keep = true; --i; continue; }
    if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); return 2; }
    const std::string v = argv[i + 1];
    if (a == "--n") n = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--min") lo = std::atof(v.c_str());
    else if (a == "--max") hi = std::atof(v.c_str());
    else if (a == "--reps") reps = std::atoi(v.c_str());
    else if (a == "--shm") shm = v;
    else if (a == "--disk") disk = v;
    else if (a == "--cases") cases = v;
    else if (a == "--payload") random_payload = v == "random";
    else if (a == "--threads") threads = std::atoi(v.c_str());
    else if (a == "--level") level = std::atoi(v.c_str());
    else { std::fprintf(stderr, "unknown option %s\n", a.c_str()); return 2; }
  }
  const uint64_t t0 = NowNs();
  const Graph g = Build(n, lo, hi, thp, random_payload);
  const double build_s = double(NowNs() - t0) / 1e9;
  const libdump::HeapStats st = libdump::GetHeapStats();
  std::printf("libdump%s: %llu nodes, %.3f GB asked (%.3f GB in slots, %llu live objects), built in %.2f s\n", thp ? " (--thp)" : "",
              (unsigned long long)g.nodes, g.bytes / 1e9, st.bytes_in_use / 1e9,
              (unsigned long long)st.live_objects, build_s);
  std::fflush(stdout);

  std::vector<Case> list;
  for (size_t p = 0; p <= cases.size();) {
    size_t q = cases.find(',', p);
    if (q == std::string::npos) q = cases.size();
    std::string c = cases.substr(p, q - p);
    p = q + 1;
    if (c.empty()) continue;
    Case k{c, "", false, false};
    std::string w = c;
    if (w.rfind("fork-", 0) == 0) { k.fork = true; w = w.substr(5); }
    if (w.size() > 3 && w.compare(w.size() - 3, 3, "-1t") == 0) { k.one_thread = true; w = w.substr(0, w.size() - 3); }
    if (w.size() > 5 && w.compare(w.size() - 5, 5, "-zstd") == 0) { k.zstd = true; w = w.substr(0, w.size() - 5); }
    k.where = w;
    list.push_back(k);
  }

  Ticker ticker;
  for (const Case& c : list) {
    std::vector<double> secs, pauses, cpus;
    uint64_t dump_bytes = 0;
    for (int r = 0; r < reps; ++r) {
      std::string path = "/dev/null";
      if (c.where == "shm") path = shm + "/dump_bench." + std::to_string(getpid());
      else if (c.where == "disk") path = disk + "/dump_bench." + std::to_string(getpid());
      const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0) { std::perror(path.c_str()); return 1; }
      libdump::HeapDumpOptions o;
      o.zstd = c.zstd;
      o.fork_snapshot = c.fork;
      o.zstd_level = level;
      o.threads = c.one_thread ? 1 : threads;
      ticker.Reset();
      const double cpu0 = CpuSeconds();
      const uint64_t a = NowNs();
      const int err = libdump::WriteHeapDump(fd, o);
      const uint64_t b = NowNs();
      cpus.push_back(CpuSeconds() - cpu0);
      const uint64_t gap = ticker.MaxGapNs();
      struct stat sb{};
      fstat(fd, &sb);
      close(fd);
      if (path != "/dev/null") {
        dump_bytes = uint64_t(sb.st_size);
        if (keep && r == reps - 1) {
          const std::string kept = path + "." + c.name;
          rename(path.c_str(), kept.c_str());
          std::printf("kept %s\n", kept.c_str());
        } else {
          unlink(path.c_str());
        }
      }
      if (err != 0) { std::fprintf(stderr, "%s: WriteHeapDump: %s\n", c.name.c_str(), std::strerror(err)); return 1; }
      secs.push_back(double(b - a) / 1e9);
      pauses.push_back(double(gap) / 1e6);
    }
    const double s = Median(secs), pause = Median(pauses), cpu = Median(cpus);
    std::printf("RESULT impl=%s case=%s nodes=%llu heap_bytes=%llu secs=%.4f pause_ms=%.2f "
                "gbps=%.3f mobjps=%.3f dump_bytes=%llu pause_ms_per_gb=%.2f level=%d threads=%d payload=%s cpu_s=%.3f\n",
                thp ? "libdump-thp" : "libdump", c.name.c_str(), (unsigned long long)g.nodes,
                (unsigned long long)g.bytes, s, pause,
                g.bytes / s / 1e9, g.nodes / s / 1e6, (unsigned long long)dump_bytes, pause / (g.bytes / 1e9),
                level, c.one_thread ? 1 : threads, random_payload ? "random" : "zero", cpu);
    std::fflush(stdout);
  }
  return 0;
}
