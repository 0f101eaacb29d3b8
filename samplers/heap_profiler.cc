#include "heap_profiler.h"

#include <errno.h>

#include <atomic>
#include <cmath>
#include <string_view>

#include "alloc_stack.h"
#include "flight_recorder.h"
#include "own_allocations.h"
#include "sampler_interface.h"
#include "symbolize.h"
#include "unwind_table.h"
#include "unwind_watch.h"

// libdump's allocator, when it is in the process. Weak so that the samplers
// link without it (CPU profiling alone, or another malloc).
namespace libdump {
void SetSampleInterval(int64_t bytes) __attribute__((weak));
namespace internal {
void SetSampleHooks(const SampleHooks* hooks) __attribute__((weak));
uintptr_t SampleTokenOf(const void* p) __attribute__((weak));
void ForEachKeptSampleToken(void (*visit)(void* ctx, uintptr_t addr, size_t size, uintptr_t token), void* ctx)
    __attribute__((weak));
}  // namespace internal
}  // namespace libdump

namespace libdump {
namespace samplers {
namespace {

constexpr int64_t kDefaultMemProfileRate = 512 * 1024;
// What every sample reads, in one line: the program usually evicts it
// between two samples.
struct alignas(64) HookState {
  std::atomic<int64_t> rate{kDefaultMemProfileRate};
  std::atomic<HeapProfileTable*> table{nullptr};  // set before the hook is
};
HookState g_hook;

// Frames of the allocator and of this profiler, which every sampled stack
// starts with and which say nothing about who allocated.
bool IsAllocatorFrame(std::string_view f) {
  for (std::string_view prefix : {"libdump::internal::", "libdump::samplers::", "operator new", "libdump::Allocate",
                                  "libdump::Reallocate", "__libc_", "__gnu_cxx::new_allocator"}) {
    if (f.starts_with(prefix)) return true;
  }
  for (std::string_view exact : {"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
                                 "memalign", "valloc", "pvalloc", "strdup", "strndup"}) {
    if (f == exact) return true;
  }
  return false;
}

bool IsOwnAllocation(const HeapBucketSnapshot& k) {
  return k.stack.size() == 1 && k.stack[0] == OwnAllocationMarker();
}

}  // namespace

// Named in heap dumps; its address marks the profilers' own samples.
__attribute__((noipa)) void ProfilerOwnAllocation() { asm volatile("" ::: "memory"); }

uintptr_t OwnAllocationMarker() { return reinterpret_cast<uintptr_t>(&ProfilerOwnAllocation) + 1; }

pprof::ProfileBuilder NewHeapProfileBuilder(HeapProfileKind kind, int64_t rate) {
  pprof::ProfileBuilder b({{"alloc_objects", "count"},
                           {"alloc_space", "bytes"},
                           {"inuse_objects", "count"},
                           {"inuse_space", "bytes"}},
                          {"space", "bytes"}, rate);
  b.set_default_sample_type(kind == HeapProfileKind::kAllocs ? "alloc_space" : "inuse_space");
  return b;
}

void BuildHeapProfile(pprof::ProfileBuilder& b, const std::vector<HeapBucketSnapshot>& buckets) {
  ProfileSymbolizer sym(b);
  for (const HeapBucketSnapshot& k : buckets) {
    if (IsOwnAllocation(k)) continue;  // the profilers' own (own_allocations.h)
    size_t skip = 0;
    while (skip + 1 < k.stack.size() && IsAllocatorFrame(sym.FunctionName(k.stack[skip]))) ++skip;
    const std::vector<uint64_t> locs = sym.Locations(std::span(k.stack).subspan(skip));
    const HeapEstimate e = Unbias(k);
    const int64_t v[] = {std::llround(e.alloc_objects), std::llround(e.alloc_space), std::llround(e.inuse_objects),
                         std::llround(e.inuse_space)};
    // Go labels heap samples with the object size, for -tagfocus=bytes=...
    const pprof::Label size_label{"bytes", "", static_cast<int64_t>(k.size), "bytes"};
    b.AddSample(locs, v, std::span(&size_label, 1));
  }
}

uintptr_t OnSampledAllocation(void* p, size_t size, bool keeps_token) {
  HeapProfileTable* t = g_hook.table.load(std::memory_order_acquire);
  if (!keeps_token) t->PrefetchLive(p);
  uintptr_t pcs[kMaxFrames];
  size_t n;
  if (InOwnAllocationScope()) {
    pcs[0] = OwnAllocationMarker();
    n = 1;
  } else {
    n = CaptureAllocationStack(pcs, kMaxFrames);
    flight::RecordAllocation(p, size, pcs, n);  // one relaxed load when no recorder runs
  }
  return t->RecordAlloc(p, size, g_hook.rate.load(std::memory_order_relaxed), pcs, n, !keeps_token);
}

void OnSampledFree(void* p, size_t) {
  HeapProfileTable* t = g_hook.table.load(std::memory_order_acquire);
  t->PrefetchLive(p);
  t->RecordFree(p);
}

void PrepareSampleHook() {
  OwnAllocationScope own;
  // The rules the walk unwinds frameless callers of the allocator with, for
  // the modules loaded now and, through the watching thread, later.
  UnwindTables::Refresh();
  WatchModulesForUnwindTables();
  g_hook.table.store(&GlobalHeapTable(), std::memory_order_release);
  WarmStackCapture();
}

}  // namespace samplers

void SetMemProfileRate(int64_t bytes) {
  if (bytes < 0) bytes = 0;
  samplers::g_hook.rate.store(bytes, std::memory_order_relaxed);
  if (SetSampleInterval != nullptr && internal::SetSampleHooks != nullptr) SetSampleInterval(bytes);
}

int64_t MemProfileRate() { return samplers::g_hook.rate.load(std::memory_order_relaxed); }

bool InstallHeapProfiler() {
  if (SetSampleInterval == nullptr || internal::SetSampleHooks == nullptr) return false;
  samplers::PrepareSampleHook();
  static constexpr internal::SampleHooks kHooks{samplers::OnSampledAllocation, samplers::OnSampledFree};
  internal::SetSampleHooks(&kHooks);
  SetSampleInterval(samplers::g_hook.rate.load());
  return true;
}

bool WriteHeapProfile(int fd, HeapProfileKind kind) {
  samplers::OwnAllocationScope own;  // symbolization
  pprof::ProfileBuilder b = samplers::NewHeapProfileBuilder(kind, MemProfileRate());
  samplers::BuildHeapProfile(b, samplers::GlobalHeapTable().Snapshot());
  return b.WriteGzip(fd);
}

size_t SampledAllocationStack(const void* p, uintptr_t* pcs, size_t max) {
  if (internal::SampleTokenOf != nullptr) {
    if (const uintptr_t token = internal::SampleTokenOf(p)) {
      return samplers::HeapProfileTable::StackOfToken(token, pcs, max);
    }
  }
  return samplers::GlobalHeapTable().StackOf(p, pcs, max);
}

void ForEachSampledAllocation(void (*visit)(void* ctx, uintptr_t addr, size_t size, const uintptr_t* pcs,
                                            size_t npcs),
                              void* ctx) {
  samplers::HeapProfileTable* t = samplers::GlobalHeapTableIfCreated();
  if (t == nullptr) return;
  t->ForEachLive(visit, ctx);
  // The samples whose bucket the allocator keeps are not in the table.
  if (internal::ForEachKeptSampleToken == nullptr) return;
  struct Ctx {
    void (*to)(void* ctx, uintptr_t addr, size_t size, const uintptr_t* pcs, size_t npcs);
    void* ctx;
  } c{visit, ctx};
  internal::ForEachKeptSampleToken(
      [](void* x, uintptr_t addr, size_t size, uintptr_t token) {
        const Ctx* c = static_cast<const Ctx*>(x);
        size_t depth;
        const uintptr_t* pcs = samplers::HeapProfileTable::TokenStack(token, &depth);
        c->to(c->ctx, addr, size, pcs, depth);
      },
      &c);
}

}  // namespace libdump
