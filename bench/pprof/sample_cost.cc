// Cost of one heap sample in the profiler (the allocator's sample hook for
// an allocation, and the free counted through the token the allocator
// keeps), with the stack captured by the frame-pointer walk the hook uses
// and, for comparison, by libunwind's unw_backtrace (what the hook used
// before). Prints CPU ns per sample and the ratio. Six frames deep, one
// bucket: the warm, common case.
#include <libunwind.h>
#include <time.h>

#include <cstdint>
#include <cstdio>

#include "samplers/unwind/allocation_stack_capture.h"
#include "samplers/heap/heap_bucket_table.h"
#include "samplers/heap/heap_profiler.h"
#include "libdump/interface/sampler_interface.h"

namespace {

using namespace libdump::samplers;
constexpr int kSamples = 200000;
constexpr int64_t kRate = 512 * 1024;

double CpuNs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

void* Address(int i) { return reinterpret_cast<void*>(uintptr_t{1} << 20 | static_cast<uintptr_t>(i) * 64); }

__attribute__((noipa)) double FramePointers() {
  const double t0 = CpuNs();
  for (int i = 0; i < kSamples; ++i) {
    libdump::internal::CountKeptSampleFree(OnSampledAllocation(Address(i), 64, true));
  }
  return (CpuNs() - t0) / kSamples;
}

__attribute__((noipa)) double Libunwind() {
  const double t0 = CpuNs();
  for (int i = 0; i < kSamples; ++i) {
    uintptr_t pcs[kMaxFrames];
    const int n = unw_backtrace(reinterpret_cast<void**>(pcs), static_cast<int>(kMaxFrames));
    libdump::internal::CountKeptSampleFree(GlobalHeapTable().RecordAlloc(Address(i), 64, kRate, pcs, static_cast<size_t>(n), false));
  }
  return (CpuNs() - t0) / kSamples;
}

__attribute__((noipa)) void Deep(int depth, double* fp, double* unw) {
  if (depth > 0) {
    Deep(depth - 1, fp, unw);
  } else {
    *fp = FramePointers();
    *unw = Libunwind();
  }
  asm volatile("" ::: "memory");  // not a tail call: each level keeps its frame
}

}  // namespace

int main() {
  PrepareSampleHook();
  double fp, unw;
  Deep(3, &fp, &unw);  // warm-up: buckets, libunwind's caches, the walk-end verdict
  Deep(3, &fp, &unw);
  std::printf("ns per sample: frame pointers %.1f, libunwind %.1f, ratio %.2f\n", fp, unw, fp / unw);
  return 0;
}
