// CPU-bound 2-thread workload for the CPU profiler overhead comparison:
// fixed work in two threads, prints the process's CPU seconds for it.
//
// Usage: bench_pprof_cpu [ITERATIONS]
//        bench_pprof_cpu ITERATIONS alternate none|libdump|gperftools HZ PAIRS
// alternate: two threads that live for the whole run do ITERATIONS each in
// 2 PAIRS blocks, and the profiler, preloaded (libdumpprof.so or gperftools'
// libprofiler.so), is started before every other block and stopped after
// it (alternation.h): the per-pair ratio of the process's CPU time, profiled
// over not, is the profiler's whole cost, signal handlers and its own
// threads included, with the start and stop (timers, writing the profile)
// left out. gperftools takes its rate from CPUPROFILE_FREQUENCY, which is
// set to HZ unless the environment already has it. A second line gives the
// signals the profiler handled per second of profiled CPU, which should be
// HZ for both: a profiler that took fewer samples would look cheaper.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "alternation.h"
#include "libdump/profiler.h"
#if __has_include(<gperftools/profiler.h>)
#include <gperftools/profiler.h>
#define HAVE_GPERFTOOLS_PROFILER 1
#endif

namespace {

__attribute__((noinline)) uint64_t Work(uint64_t n, uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < n; ++i) x = x * 6364136223846793005ULL + (x >> 17);
  return x;
}

// Threads that outlive the profiler's starts and stops, as a server's do: a
// block wakes both and waits, blocked, until both are done.
class Workers {
 public:
  explicit Workers(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { Loop(static_cast<uint64_t>(i) + 1); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void Run(uint64_t iterations) {
    std::unique_lock<std::mutex> g(mu_);
    iterations_ = iterations;
    busy_ = static_cast<int>(threads_.size());
    ++generation_;
    wake_.notify_all();
    done_.wait(g, [this] { return busy_ == 0; });
  }
  uint64_t sink() const { return sink_; }

 private:
  void Loop(uint64_t seed) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      wake_.wait(g, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      const uint64_t n = iterations_;
      g.unlock();
      const uint64_t r = Work(n, seed);
      g.lock();
      sink_ ^= r;
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0, iterations_ = 0, sink_ = 0;
  int busy_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Start and stop of the preloaded profiler, looked up so that one binary
// runs under either.
struct Profiler {
  bool (*start)(int fd, int hz) = nullptr;
  void (*stop)() = nullptr;
  uint64_t (*signals)() = [] { return uint64_t{0}; };  // handled since start
};

Profiler FindProfiler(const std::string& name, int hz) {
  Profiler p;
  if (name == "none") {
    p.start = [](int, int) { return true; };
    p.stop = [] {};
  } else if (name == "libdump") {
    static auto set_rate = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "_ZN7libdump17SetCPUProfileRateEi"));
    static auto start = reinterpret_cast<bool (*)(int)>(dlsym(RTLD_DEFAULT, "_ZN7libdump15StartCPUProfileEi"));
    static auto stop = reinterpret_cast<bool (*)()>(dlsym(RTLD_DEFAULT, "_ZN7libdump14StopCPUProfileEv"));
    static auto stats =
        reinterpret_cast<libdump::CPUProfileStats (*)()>(dlsym(RTLD_DEFAULT, "_ZN7libdump18GetCPUProfileStatsEv"));
    if (set_rate != nullptr && start != nullptr && stop != nullptr && stats != nullptr) {
      p.start = [](int fd, int rate) {
        set_rate(rate);
        return start(fd);
      };
      p.stop = [] { stop(); };
      p.signals = [] { return stats().samples; };
    }
  }
#ifdef HAVE_GPERFTOOLS_PROFILER
  if (name == "gperftools") {
    setenv("CPUPROFILE_FREQUENCY", std::to_string(hz).c_str(), 0);
    static auto start = reinterpret_cast<int (*)(const char*)>(dlsym(RTLD_DEFAULT, "ProfilerStart"));
    static auto stop = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "ProfilerStop"));
    static auto state = reinterpret_cast<void (*)(ProfilerState*)>(dlsym(RTLD_DEFAULT, "ProfilerGetCurrentState"));
    if (start != nullptr && stop != nullptr && state != nullptr) {
      p.start = [](int, int) { return start("/dev/null") != 0; };
      p.stop = [] { stop(); };
      p.signals = [] {
        ProfilerState st;
        state(&st);
        return static_cast<uint64_t>(st.samples_gathered);
      };
    }
  }
#endif
  return p;
}

int Alternate(uint64_t iterations, const std::string& name, int hz, int pairs) {
  const Profiler prof = FindProfiler(name, hz);
  const uint64_t block = pairs < 1 ? 0 : iterations / (2 * static_cast<uint64_t>(pairs));
  if (prof.start == nullptr || block < 1) {
    std::fprintf(stderr, "bench_pprof_cpu: alternate needs PAIRS >= 1, ITERATIONS >= 2 PAIRS and the profiler "
                         "(libdumpprof.so or libprofiler.so) preloaded\n");
    return 1;
  }
  const int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  Workers workers(2);
  workers.Run(block / 4);  // warm up: threads running, code and stacks paged in
  bool running = false;
  uint64_t signals = 0;
  const std::string label = name + " " + std::to_string(hz) + " Hz vs off";
  const double profiled_ns = bench::AlternateBlocks(
      label.c_str(), pairs, static_cast<long>(block), "iteration",
      [&](bool on) {
        if (running) {
          signals += prof.signals();
          prof.stop();
        }
        running = on && prof.start(fd, hz);
        if (on && !running) std::fprintf(stderr, "bench_pprof_cpu: %s did not start\n", name.c_str());
      },
      [&] { workers.Run(block); });
  close(fd);
  std::printf("%s handled %llu signals in %.2f s of profiled CPU: %.1f per second\n", name.c_str(),
              static_cast<unsigned long long>(signals), profiled_ns * 1e-9, signals / (profiled_ns * 1e-9));
  return static_cast<int>(workers.sink() & 1) * 0;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1500000000ULL;
  if (argc > 5 && std::strcmp(argv[2], "alternate") == 0) {
    return Alternate(n, argv[3], std::atoi(argv[4]), std::atoi(argv[5]));
  }
  const double t0 = bench::ProcessCpuNs();
  uint64_t r[2];
  std::thread a([&] { r[0] = Work(n, 1); });
  std::thread b([&] { r[1] = Work(n, 2); });
  a.join();
  b.join();
  std::printf("%.4f\n", (bench::ProcessCpuNs() - t0) * 1e-9);
  return static_cast<int>((r[0] ^ r[1]) & 1) * 0;
}
