#include "samplers/flight_recorder/flight_recorder_clock.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <bit>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace libdump::samplers::flight {

bool g_use_tsc = false;

namespace {

int64_t g_tick0 = 0, g_ns0 = 0;  // written once, before any reader
std::atomic<uint64_t> g_rate_bits{0};  // double ns per tick

void StoreRate(double r) { g_rate_bits.store(std::bit_cast<uint64_t>(r), std::memory_order_release); }
double LoadRate() { return std::bit_cast<double>(g_rate_bits.load(std::memory_order_acquire)); }

bool InvariantTsc() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000, &a, &b, &c, &d) == 0 || a < 0x80000007) return false;
  __get_cpuid(0x80000007, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
#else
  return false;
#endif
}

// A (ticks, ns) pair read as close together as the machine allows: the
// tightest of a few tries, its ticks taken halfway.
void Pair(int64_t* ticks, int64_t* ns) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const int64_t a = Ticks();
    const int64_t n = MonotonicNs();
    const int64_t b = Ticks();
    if (b - a < best) {
      best = b - a;
      *ticks = a + (b - a) / 2;
      *ns = n;
    }
  }
}

}  // namespace

void CalibrateClock() {
  static std::once_flag once;
  std::call_once(once, [] {
    // LIBDUMP_FLIGHT_RECORDER_CLOCK=monotonic: clock_gettime per event
    // (a machine whose TSCs disagree across CPUs).
    const char* e = std::getenv("LIBDUMP_FLIGHT_RECORDER_CLOCK");
    g_use_tsc = InvariantTsc() && !(e != nullptr && std::strcmp(e, "monotonic") == 0);
    Pair(&g_tick0, &g_ns0);
    if (!g_use_tsc) {
      StoreRate(1.0);
      return;
    }
    int64_t t, n;
    do {
      Pair(&t, &n);
    } while (n - g_ns0 < 2000000);
    StoreRate(static_cast<double>(n - g_ns0) / static_cast<double>(t - g_tick0));
  });
}

void RefineClock() {
  if (!g_use_tsc) return;
  int64_t t, n;
  Pair(&t, &n);
  if (t > g_tick0 && n > g_ns0) StoreRate(static_cast<double>(n - g_ns0) / static_cast<double>(t - g_tick0));
}

ClockMap CurrentClockMap() {
  const double r = LoadRate();
  return {g_tick0, g_ns0, r > 0 ? r : 1.0};
}

}  // namespace libdump::samplers::flight
