// Cost of one CPU-profile sample in the signal handler, for whichever
// profiler LD_PRELOAD installs (libdump's, gperftools' libprofiler): the
// thread raises SIGPROF itself, ten frames deep, and the time per raise is
// compared with a run under a handler that does nothing (no profiler
// preloaded). What the timers add on top (one expiry per period) is the same
// for both; what the profilers do outside the handler (libdump's worker
// thread) is measured in docs/sampling.md. Prints ns per raise, best of five
// passes.
//
// Usage: bench_pprof_signal_cost [RAISES]
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>

namespace {

void Nothing(int) {}

double NowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// Frames for the handlers to walk, as a profiled program has.
__attribute__((noinline)) void Deep(int depth, long raises) {
  if (depth > 0) {
    Deep(depth - 1, raises);
    asm volatile("" ::: "memory");  // not a tail call: the frame stays
    return;
  }
  for (long i = 0; i < raises; ++i) raise(SIGPROF);
}

}  // namespace

int main(int argc, char** argv) {
  const long raises = argc > 1 ? std::atol(argv[1]) : 20000;
  struct sigaction sa {};
  sigaction(SIGPROF, nullptr, &sa);
  const bool profiler = sa.sa_handler != SIG_DFL;
  if (!profiler) signal(SIGPROF, Nothing);
  double best = 1e300;
  for (int pass = 0; pass < 5; ++pass) {
    const double t0 = NowNs();
    Deep(10, raises);
    const double t = NowNs() - t0;
    if (t < best) best = t;
  }
  std::printf("%.0f ns per SIGPROF (%s)\n", best / static_cast<double>(raises),
              profiler ? "profiler's handler" : "empty handler");
  return 0;
}
