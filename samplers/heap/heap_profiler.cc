#include "samplers/heap/heap_profiler.h"

#include <errno.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <span>
#include <sstream>
#include <string_view>
#include <tuple>

#include "samplers/unwind/allocation_stack_capture.h"
#include "samplers/flight_recorder/flight_recorder.h"
#include "samplers/common/own_allocations.h"
#include "libdump/interface/sampler_interface.h"
#include "samplers/symbolize/pprof_symbolizer.h"
#include "samplers/unwind/unwind_table.h"
#include "samplers/unwind/unwind_watch.h"

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

namespace {

// Each bucket's estimates, less those of the same bucket (stack, size, rate)
// in before, when given: a delta profile. The profilers' own samples go.
std::vector<std::pair<const HeapBucketSnapshot*, HeapEstimate>> Estimates(
    const std::vector<HeapBucketSnapshot>& buckets, const std::vector<HeapBucketSnapshot>* before) {
  using Key = std::tuple<uint64_t, int64_t, const std::vector<uintptr_t>&>;
  std::map<Key, const HeapBucketSnapshot*> old;
  if (before != nullptr) {
    for (const HeapBucketSnapshot& k : *before) old.emplace(Key{k.size, k.rate, k.stack}, &k);
  }
  std::vector<std::pair<const HeapBucketSnapshot*, HeapEstimate>> out;
  for (const HeapBucketSnapshot& k : buckets) {
    if (IsOwnAllocation(k)) continue;  // the profilers' own (own_allocations.h)
    HeapEstimate e = Unbias(k);
    if (const auto it = old.find(Key{k.size, k.rate, k.stack}); it != old.end()) {
      const HeapEstimate o = Unbias(*it->second);
      e = {e.alloc_objects - o.alloc_objects, e.alloc_space - o.alloc_space, e.inuse_objects - o.inuse_objects,
           e.inuse_space - o.inuse_space};
      if (e.alloc_objects == 0 && e.inuse_objects == 0) continue;  // unchanged
    }
    out.push_back({&k, e});
  }
  return out;
}

// The stack without the allocator's frames on top.
std::span<const uintptr_t> CallerStack(const HeapBucketSnapshot& k, const ProfileSymbolizer& sym) {
  size_t skip = 0;
  while (skip + 1 < k.stack.size() && IsAllocatorFrame(sym.FunctionName(k.stack[skip]))) ++skip;
  return std::span(k.stack).subspan(skip);
}

}  // namespace

void BuildHeapProfile(pprof::ProfileBuilder& b, const std::vector<HeapBucketSnapshot>& buckets,
                      const std::vector<HeapBucketSnapshot>* before) {
  ProfileSymbolizer sym(b);
  for (const auto& [k, e] : Estimates(buckets, before)) {
    const std::vector<uint64_t> locs = sym.Locations(CallerStack(*k, sym));
    const int64_t v[] = {std::llround(e.alloc_objects), std::llround(e.alloc_space), std::llround(e.inuse_objects),
                         std::llround(e.inuse_space)};
    // Go labels heap samples with the object size, for -tagfocus=bytes=...
    const pprof::Label size_label{"bytes", "", static_cast<int64_t>(k->size), "bytes"};
    b.AddSample(locs, v, std::span(&size_label, 1));
  }
}

std::string HeapProfileText(const std::vector<HeapBucketSnapshot>& buckets, int64_t rate) {
  // Go's legacy form keeps sampled counts, which the reader unbiases with
  // the header's rate (heap/2*rate) by the record's mean size. A record
  // here holds one size, so the counts that unbias to the estimates are
  // exact for buckets sampled at the header's rate (the usual case: one
  // rate per run) and rounded for any other.
  pprof::ProfileBuilder dummy({{"x", "count"}}, {"x", "count"}, 1);
  ProfileSymbolizer sym(dummy);
  struct Line {
    int64_t inuse, inuse_bytes, alloc, alloc_bytes;
    std::span<const uintptr_t> stack;
  };
  std::vector<Line> lines;
  Line total{0, 0, 0, 0, {}};
  for (const auto& [k, e] : Estimates(buckets, nullptr)) {
    const double p = rate > 1 && k->size > 0
                         ? -std::expm1(-static_cast<double>(k->size) / static_cast<double>(rate))
                         : 1;
    const int64_t alloc = std::llround(e.alloc_objects * p), inuse = std::llround(e.inuse_objects * p);
    if (alloc == 0 && inuse == 0) continue;
    const int64_t size = static_cast<int64_t>(k->size);
    lines.push_back({inuse, inuse * size, alloc, alloc * size, CallerStack(*k, sym)});
    total.inuse += inuse;
    total.inuse_bytes += inuse * size;
    total.alloc += alloc;
    total.alloc_bytes += alloc * size;
  }
  std::ostringstream out;
  out << "heap profile: " << total.inuse << ": " << total.inuse_bytes << " [" << total.alloc << ": "
      << total.alloc_bytes << "] @ heap/" << 2 * rate << "\n";
  for (const Line& l : lines) {
    out << l.inuse << ": " << l.inuse_bytes << " [" << l.alloc << ": " << l.alloc_bytes << "] @";
    for (uintptr_t pc : l.stack) out << " 0x" << std::hex << pc << std::dec;
    out << "\n";
    for (uintptr_t pc : l.stack) {
      const std::string fn = sym.FunctionName(pc);
      out << "#\t0x" << std::hex << pc - 1 << std::dec << "\t" << (fn.empty() ? "?" : fn) << "\n";
    }
    out << "\n";
  }
  // The reader maps addresses to modules, as for gperftools' heap profiles.
  out << "\nMAPPED_LIBRARIES:\n";
  if (std::FILE* f = std::fopen("/proc/self/maps", "re")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.write(buf, static_cast<std::streamsize>(n));
    std::fclose(f);
  }
  return out.str();
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
