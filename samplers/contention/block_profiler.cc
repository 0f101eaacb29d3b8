#include "samplers/contention/block_profiler.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <cmath>
#include <string_view>

#include "samplers/unwind/allocation_stack_capture.h"
#include "samplers/flight_recorder/flight_recorder.h"
#include "libdump/profiler.h"
#include "samplers/symbolize/pprof_symbolizer.h"
#include "samplers/interpose/wait_state.h"

namespace libdump::samplers {

namespace {

std::atomic<int64_t> g_block_rate{0};
// The profilers' own frames, on top of every recorded stack. A template's
// demangled name starts with its return type, so the namespace is looked
// for before the parameter list rather than at the start.
bool IsProfilerFrame(std::string_view f) {
  const size_t ns = f.find("libdump::samplers::");
  return ns != std::string_view::npos && ns < f.find('(');
}

}  // namespace

BlockSample SampleBlockEvent(int64_t ns, int64_t rate, uint64_t draw) {
  if (rate <= 0) return {false, 0, 0};
  if (ns <= 0) ns = 1;
  if (ns >= rate) return {true, 1, static_cast<double>(ns)};
  if (draw % static_cast<uint64_t>(rate) >= static_cast<uint64_t>(ns)) return {false, 0, 0};
  return {true, static_cast<double>(rate) / static_cast<double>(ns), static_cast<double>(rate)};
}

ContentionTable& BlockTable() {
  // Never destroyed: threads may block during exit.
  alignas(ContentionTable) static unsigned char storage[sizeof(ContentionTable)];
  static ContentionTable* t = [] {
    ContentionTable* made = new (storage) ContentionTable;
    pthread_atfork([] { BlockTable().Lock(); }, [] { BlockTable().Unlock(); }, [] { BlockTable().Unlock(); });
    return made;
  }();
  return *t;
}

void RecordBlockEvent(int64_t t0, int64_t t1) {
  const BlockSample s = SampleBlockEvent(t1 - t0, g_block_rate.load(std::memory_order_relaxed), WaitRandom());
  // A running flight recorder takes every wait above its threshold.
  const bool flight = flight::WantsWait(t1 - t0);
  if (!s.sampled && !flight) return;
  uintptr_t pcs[kMaxFrames];
  const size_t n = CaptureAllocationStack(pcs, kMaxFrames);
  if (s.sampled) BlockTable().Record(pcs, n, s.count, s.delay_ns);
  if (flight) flight::RecordWait("blocked", t0, t1, pcs, n);
}

pprof::ProfileBuilder NewContentionProfileBuilder(int64_t period) {
  pprof::ProfileBuilder b({{"contentions", "count"}, {"delay", "nanoseconds"}}, {"contentions", "count"}, period);
  return b;
}

void BuildContentionProfile(pprof::ProfileBuilder& b, const std::vector<ContentionBucketSnapshot>& buckets,
                            double scale) {
  ProfileSymbolizer sym(b);
  for (const ContentionBucketSnapshot& k : buckets) {
    size_t skip = 0;
    while (skip + 1 < k.stack.size() && IsProfilerFrame(sym.FunctionName(k.stack[skip]))) ++skip;
    const std::vector<uint64_t> locs = sym.Locations(std::span(k.stack).subspan(skip));
    const int64_t v[] = {std::llround(k.count * scale), std::llround(k.delay_ns * scale)};
    b.AddSample(locs, v);
  }
}

}  // namespace libdump::samplers

namespace libdump {

void SetBlockProfileRate(int64_t ns) {
  if (ns < 0) ns = 0;
  samplers::g_block_rate.store(ns, std::memory_order_relaxed);
  if (ns > 0) {
    samplers::BlockTable();
    samplers::WarmWaitStackCapture();
    samplers::g_wait_profiling.fetch_or(samplers::kBlockProfiling, std::memory_order_relaxed);
  } else {
    samplers::g_wait_profiling.fetch_and(~samplers::kBlockProfiling, std::memory_order_relaxed);
  }
}

int64_t BlockProfileRate() { return samplers::g_block_rate.load(std::memory_order_relaxed); }

bool WriteBlockProfile(int fd) {
  pprof::ProfileBuilder b = samplers::NewContentionProfileBuilder(1);
  // The profile's own work (symbolizing allocates, opens files) is not the
  // program's blocking.
  samplers::t_wait.in_profiler = true;
  samplers::BuildContentionProfile(b, samplers::BlockTable().Snapshot(), 1);
  samplers::t_wait.in_profiler = false;
  return b.WriteGzip(fd);
}

void ResetBlockProfile() { samplers::BlockTable().Clear(); }

}  // namespace libdump
