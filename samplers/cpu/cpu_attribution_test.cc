// The CPU profiler names the function that burns the CPU even when the
// signal lands in code without a frame pointer: the vDSO's clock_gettime,
// libc's memcpy and strlen, an assembly leaf that uses rbp as a counter, and
// leaves built with -O2 -fomit-frame-pointer (cpu_attribution_leaf.cc).
// Before the unwind rules (unwind_table.h), a sample there read the caller's
// frame record as the current one and skipped the caller: 15-20 % of the
// clock_gettime loop's samples and every memcpy/strlen sample lost the
// burning function.
//
// Each of two threads runs each burner for a fixed CPU time. Per-thread CPU
// timers make the counts nearly deterministic (a thread that uses c ns gets
// floor(c/T) or floor(c/T)+1 samples), so the criterion is exact up to one
// sample of quantisation: of the samples whose stack reaches the thread's
// own function, >= 99 % also carry a burner, and each burner gets its share.
// Not under ASan (labelled no_asan): instrumented burners and handler change
// the split, and the counts assume uninstrumented code.
#include <gtest/gtest.h>
#include <time.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "samplers/testing/cpu_attribution_leaf.h"
#include "samplers/unwind/dwarf_unwind.h"
#include "libdump/profiler.h"
#include "samplers/testing/profile_testutil.h"
#include "samplers/unwind/unwind_table.h"

namespace libdump {
namespace {

using samplers::testing::Decode;
using samplers::testing::DecodedProfile;
using samplers::testing::TempFile;

#define NO_TAIL_CALL asm volatile("" ::: "memory")

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

__attribute__((noipa)) uint64_t Arith(int n, uint64_t x) {
  for (int i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + (x >> 17);
    asm volatile("" : "+r"(x));
  }
  return x;
}

constexpr size_t kBuffer = 1 << 20;

// Each burner splits its time between its own arithmetic and a frameless
// call, until the thread has used ns of CPU in it.
__attribute__((noipa)) uint64_t BurnClock(int64_t ns) {
  const int64_t end = ThreadCpuNs() + ns;
  uint64_t x = 1;
  for (;;) {
    // The vDSO's clock_gettime, which for a CPU clock enters the kernel.
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if (int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec >= end) break;
    for (int i = 0; i < 300; ++i) {
      x = x * 6364136223846793005ULL + (x >> 17);
      asm volatile("" : "+r"(x));
    }
  }
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnCopy(int64_t ns) {
  std::vector<char> a(kBuffer, 'a'), b(kBuffer);
  const int64_t end = ThreadCpuNs() + ns;
  uint64_t x = 1;
  while (ThreadCpuNs() < end) {
    std::memcpy(b.data(), a.data(), kBuffer);
    asm volatile("" ::"r"(b.data()) : "memory");
    x = Arith(20000, x + static_cast<uint64_t>(b[x % kBuffer]));
  }
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnStrlen(int64_t ns) {
  std::string s(kBuffer, 's');
  const int64_t end = ThreadCpuNs() + ns;
  uint64_t x = 1;
  while (ThreadCpuNs() < end) {
    asm volatile("" ::"r"(s.data()) : "memory");
    x += std::strlen(s.c_str());
    for (int i = 0; i < 20000; ++i) {
      x = x * 6364136223846793005ULL + (x >> 17);
      asm volatile("" : "+r"(x));
    }
  }
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnAsm(int64_t ns) {
  const int64_t end = ThreadCpuNs() + ns;
  uint64_t x = 1;
  while (ThreadCpuNs() < end) x += libdump_attribution_asm_spin(200000);
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnLeafArith(int64_t ns) {
  const int64_t end = ThreadCpuNs() + ns;
  uint64_t x = 1;
  while (ThreadCpuNs() < end) x = attribution::LeafArith(200000, x);
  NO_TAIL_CALL;
  return x;
}

__attribute__((noipa)) uint64_t BurnLeafStrlen(int64_t ns) {
  std::string s(kBuffer / 4, 'l');
  const int64_t end = ThreadCpuNs() + ns;
  uint64_t x = 1;
  while (ThreadCpuNs() < end) x += attribution::LeafStrlen(s.c_str(), 4);
  NO_TAIL_CALL;
  return x;
}

const char* const kBurners[] = {"BurnClock", "BurnCopy", "BurnStrlen", "BurnAsm", "BurnLeafArith", "BurnLeafStrlen"};

// One thread's program: every burner, copy or strlen by thread.
__attribute__((noipa)) void AttributionThreadA(int64_t ns) {
  BurnClock(ns);
  BurnCopy(ns);
  BurnAsm(ns);
  BurnLeafArith(ns);
  BurnLeafStrlen(ns);
  NO_TAIL_CALL;
}
__attribute__((noipa)) void AttributionThreadB(int64_t ns) {
  BurnClock(ns);
  BurnStrlen(ns);
  BurnAsm(ns);
  BurnLeafArith(ns);
  BurnLeafStrlen(ns);
  NO_TAIL_CALL;
}

struct Counts {
  int64_t thread = 0;     // samples reaching the thread's function
  int64_t burner = 0;     // ... that also carry a burner
  int64_t per_burner[6] = {};
};

Counts Count(const DecodedProfile& p, const char* thread) {
  Counts c;
  const int i = p.Index("samples");
  for (const auto& s : p.samples) {
    if (!s.Contains("AttributionThread")) {
      // A sample of a burner whose walk stopped before the thread's
      // function would escape the count: reported.
      for (const char* b : kBurners) {
        if (s.Contains(std::string(b) + "(")) {
          std::string frames;
          for (const auto& f : s.functions) frames += (f.empty() ? "?" : f) + " <- ";
          ADD_FAILURE() << "a burner's sample that does not reach its thread: " << frames;
          break;
        }
      }
    }
    if (!s.Contains(thread)) continue;
    c.thread += s.values[i];
    bool any = false;
    for (size_t b = 0; b < std::size(kBurners); ++b) {
      // BurnStrlen is a prefix of nothing else; BurnLeafStrlen contains
      // "Strlen" but not "BurnStrlen".
      if (s.Contains(std::string(kBurners[b]) + "(")) {
        c.per_burner[b] += s.values[i];
        any = true;
      }
    }
    if (any) c.burner += s.values[i];
    if (!any) {
      std::string frames;
      for (const auto& f : s.functions) frames += (f.empty() ? "?" : f) + " <- ";
      ADD_FAILURE() << thread << " sample without its burner: " << frames;
    }
  }
  return c;
}

void RunAt(int hz, int64_t ns_per_burner) {
  ASSERT_TRUE(samplers::UnwindTables::Refresh() || samplers::UnwindTables::Modules() > 0);
  SetCPUProfileRate(hz);
  TempFile f;
  ASSERT_TRUE(StartCPUProfile(f.fd()));
  int64_t cpu_a = 0, cpu_b = 0;
  std::thread a([&] {
    const int64_t t0 = ThreadCpuNs();
    AttributionThreadA(ns_per_burner);
    cpu_a = ThreadCpuNs() - t0;
  });
  std::thread b([&] {
    const int64_t t0 = ThreadCpuNs();
    AttributionThreadB(ns_per_burner);
    cpu_b = ThreadCpuNs() - t0;
  });
  a.join();
  b.join();
  ASSERT_TRUE(StopCPUProfile());
  SetCPUProfileRate(100);
  const DecodedProfile p = Decode(f.Contents());
  const double period = 1e9 / hz;
  // At 1000 Hz the kernel's 250 Hz tick merges expirations into one signal
  // (weighted by si_overrun): the counts are samples, not signals.
  for (const auto& [name, cpu] : {std::pair{"AttributionThreadA", cpu_a}, std::pair{"AttributionThreadB", cpu_b}}) {
    const Counts c = Count(p, name);
    const double expected = static_cast<double>(cpu) / period;
    // Every sample of the thread reaches its function: one sample of
    // quantisation, and at the thread's end up to two ticks' worth (the
    // kernel checks CPU timers at its 250 Hz tick): the expirations not yet
    // checked, and those merged into a signal not yet delivered.
    const double tick = hz > 250 ? static_cast<double>(hz) / 250 : 1;
    EXPECT_GE(static_cast<double>(c.thread), expected - 1 - 2 * tick) << name;
    EXPECT_LE(static_cast<double>(c.thread), expected + 2) << name;
    // >= 99 % of them carry the burning function.
    EXPECT_GE(static_cast<double>(c.burner), 0.99 * static_cast<double>(c.thread)) << name;
    // Each burner its share of its CPU time, as a sanity bound (no burner's
    // samples taken by another function): at each boundary between two
    // burners, up to a tick's worth of samples due in one is taken in the
    // next. At 1000 Hz a signal carries the expirations merged while it was
    // pending as its weight, and on a loaded host it can be pending for tens
    // of periods (50 seen), all of them charged where it is delivered: half
    // the share is the bound there.
    const double min_share = hz > 250 ? 0.5 : 0.9;
    const double share = static_cast<double>(ns_per_burner) / period;
    for (size_t i = 0; i < std::size(kBurners); ++i) {
      const bool runs = !(std::string(kBurners[i]) == "BurnCopy" && name == std::string("AttributionThreadB")) &&
                        !(std::string(kBurners[i]) == "BurnStrlen" && name == std::string("AttributionThreadA"));
      if (!runs) continue;
      std::printf("%d Hz %s %s: %lld samples, %.1f expected\n", hz, name, kBurners[i],
                  static_cast<long long>(c.per_burner[i]), share);
      EXPECT_GE(static_cast<double>(c.per_burner[i]), min_share * share - 2) << name << " " << kBurners[i];
    }
  }
  const samplers::DwarfUnwindStats st = samplers::GetDwarfUnwindStats();
  std::printf("fallbacks: no rule %llu, unsupported %llu, unknown module %llu\n",
              static_cast<unsigned long long>(st.no_rule), static_cast<unsigned long long>(st.unsupported),
              static_cast<unsigned long long>(st.unknown_module));
}

TEST(CPUAttribution, FramelessCodeKeepsItsCallerAt100Hz) { RunAt(100, 400000000); }
TEST(CPUAttribution, FramelessCodeKeepsItsCallerAt1000Hz) { RunAt(1000, 200000000); }

}  // namespace
}  // namespace libdump
