// WriteHeapDump for the libdump heap: the allocator seen as a HeapSource, the
// public and C entry points, and the stop-the-world gate.
#include "libdump/heap_dump.h"

#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "allocator_hooks.h"
#include "arena.h"
#include "dump_environment.h"
#include "heap_dump_writer.h"
#include "heap_walk.h"
#include "libdump/heap.h"
#include "libdump/typed.h"
#include "own_memory.h"
#include "root_registry.h"
#include "platform/capture/stop_the_world.h"

namespace libdump {

// The heap profiler's record of sampled live objects, when libdump's samplers
// are in the process (include/libdump/profiler.h); weak, so that the runtime
// links without them.
void ForEachSampledAllocation(void (*visit)(void* ctx, uintptr_t addr, size_t size, const uintptr_t* pcs,
                                            size_t npcs),
                              void* ctx) __attribute__((weak));

namespace {

using namespace format;

// Type ids in the dump are the TypeInfo addresses: stable and unique, like
// the Type* of Go's dumps.
uint64_t DumpTypeId(uint32_t id) {
  const TypeInfo* t = FindType(id);
  return reinterpret_cast<uint64_t>(t);
}

class RuntimeHeap final : public heapdump::HeapSource {
 public:
  // Records are built here, before the stop: writing them then allocates nothing.
  void Prepare() override {
    // A child forked during its parent's dump starts with that dump's state.
    Finish();
    types_.clear();
    fields_.clear();
    own_.clear();
    for (uint32_t id = 1; id <= TypeCount(); ++id) {
      const TypeInfo* t = FindType(id);
      if (t == nullptr) continue;
      TypeRecord r{reinterpret_cast<uint64_t>(t), t->size, t->name, false, {}};
      TypeFieldsRecord f{r.addr, {}};
      for (size_t i = 0; i < t->nfields; ++i) {
        const FieldInfo& fi = t->fields[i];
        for (uint32_t k = 0; k < fi.count; ++k) {
          const uint64_t off = fi.offset + 8ull * k;
          r.fields.push_back({kFieldPtr, off});
          f.fields.push_back({off, kFieldPtr, 8, fi.count == 1 ? fi.name : std::string(fi.name) + "[" + std::to_string(k) + "]"});
        }
      }
      if (internal::IsOwnType(id)) own_.push_back({r.addr, kTypeOwn, 0, 0, 0});
      types_.push_back(std::move(r));
      fields_.push_back(std::move(f));
    }
    const HeapStats s = GetHeapStats();
    stats_.stats = {{"bytes_in_use", s.bytes_in_use},
                    {"total_allocated_bytes", s.total_allocated_bytes},
                    {"mallocs", s.mallocs},
                    {"frees", s.frees},
                    {"live_objects", s.live_objects},
                    {"spans", s.spans},
                    {"span_bytes", s.span_bytes},
                    {"arenas", s.arenas},
                    {"bytes_reserved", s.bytes_reserved},
                    {"bytes_free_committed", s.bytes_free_committed},
                    {"bytes_returned", s.bytes_returned},
                    {"metadata_bytes", s.metadata_bytes}};
  }

  void Range(uint64_t* start, uint64_t* end) override {
    const HeapRange r = GetHeapRange();
    *start = r.lo;
    *end = r.hi;
  }

  void ForEachObject(void (*fn)(const heapdump::HeapObject&, void*), void* arg) override {
    struct Ctx { void (*fn)(const heapdump::HeapObject&, void*); void* arg; } ctx{fn, arg};
    internal::ForEachObject(
        Cached(),
        [](const ObjectInfo& o, void* c) {
          auto* x = static_cast<Ctx*>(c);
          heapdump::HeapObject h;
          h.addr = o.addr;
          h.size = o.size;
          h.type = o.type_id ? DumpTypeId(o.type_id) : 0;
          h.kind = o.type_id && o.count > 1 ? kObjArray : kObjRegular;
          x->fn(h, x->arg);
        },
        &ctx);
  }

  uint64_t FindObject(uint64_t addr) override {
    ObjectInfo o;
    return internal::FindObject(Cached(), reinterpret_cast<const void*>(addr), &o) ? o.addr : 0;
  }

  void Finish() override {
    cached_.Clear();
    cached_taken_ = false;
  }

  void WriteTypes(Writer& w) override {
    for (size_t i = 0; i < types_.size(); ++i) {
      w.Type(types_[i]);
      w.TypeFields(fields_[i]);
    }
    for (const TypeInfoRecord& r : own_) w.TypeInfo(r);
  }

  internal::OwnComponent SetOwnComponent(internal::OwnComponent c) override { return internal::SetOwnComponent(c); }

  bool IsOwnObject(uint64_t addr) override {
    ObjectInfo o;
    return internal::FindObject(Cached(), reinterpret_cast<const void*>(addr), &o) && internal::IsOwnType(o.type_id);
  }

  void AddressTable(uint64_t* start, uint64_t* end) override {
    *start = reinterpret_cast<uint64_t>(&internal::g_arenas);
    *end = *start + sizeof internal::g_arenas;
  }

  void WriteMemStats(Writer& w) override { w.MemStats(stats_); }

  void WriteAllocStacks(Writer& w) override {
    if (ForEachSampledAllocation == nullptr) return;
    // A thread stopped halfway through the profiler's update of a free may
    // leave a record for an object that is gone: only live objects' stacks.
    struct Ctx { RuntimeHeap* heap; Writer* w; } ctx{this, &w};
    ForEachSampledAllocation(
        [](void* c, uintptr_t addr, size_t size, const uintptr_t* pcs, size_t n) {
          auto* x = static_cast<Ctx*>(c);
          if (x->heap->FindObject(addr) == addr) x->w->AllocStack(addr, size, {pcs, n});
        },
        &ctx);
  }

 private:
  // The slots cached outside the central lists, taken once the world is
  // stopped (at the first question) and dropped when it resumes.
  const internal::CachedSlots& Cached() {
    if (!cached_taken_) {
      cached_.Take(/*every_heap=*/true);
      cached_taken_ = true;
    }
    return cached_;
  }

  internal::CachedSlots cached_;
  bool cached_taken_ = false;
  std::vector<TypeRecord> types_;
  std::vector<TypeFieldsRecord> fields_;
  std::vector<TypeInfoRecord> own_;  // libdump's own components' types
  MemStatsRecord stats_;
};

// A thread inside the allocator is stopped when it leaves it, so the walk
// never meets a half-done allocation or a held allocator lock.
void InstallGate() {
  static std::once_flag once;
  std::call_once(once, [] {
    capture::SetStopGate({&internal::InAllocator});
    internal::SetSectionExitHook(&capture::StopIfRequested);
  });
}

}  // namespace

int WriteHeapDump(int fd, const HeapDumpOptions& options) {
  InstallGate();
  // In static storage, not on the heap it describes; never destroyed, as a
  // dump may run during exit. Reused: its records keep their capacity.
  alignas(RuntimeHeap) static unsigned char storage[sizeof(RuntimeHeap)];
  static RuntimeHeap* heap = new (storage) RuntimeHeap;
  heapdump::DumpOptions o;
  o.zstd = options.zstd;
  o.zstd_level = options.zstd_level;
  o.seed_only = options.seed_only;
  o.fork_snapshot = options.fork_snapshot;
  o.threads = options.threads > 0 ? options.threads : heapdump::DumpThreadsFromEnvironment();
  return heapdump::WriteHeapDump(*heap, fd, o).error;
}

void AddRoot(const void* slot, const char* description) {
  const internal::OwnScope own(internal::OwnComponent::kRootRegistry);
  heapdump::RootRegistry::Instance().AddRoot(slot, description ? description : "");
}

void RemoveRoot(const void* slot) { heapdump::RootRegistry::Instance().RemoveRoot(slot); }

void SetFinalizer(void* obj, void (*fn)(void*)) {
  const internal::OwnScope own(internal::OwnComponent::kRootRegistry);
  heapdump::RootRegistry::Instance().SetFinalizer(obj, fn);
}

}  // namespace libdump

extern "C" int libdump_write_heap_dump(int fd, int flags) {
  libdump::HeapDumpOptions o;
  o.zstd = (flags & LIBDUMP_DUMP_ZSTD) != 0;
  o.seed_only = (flags & LIBDUMP_DUMP_SEED_ONLY) != 0;
  o.fork_snapshot = (flags & LIBDUMP_DUMP_FORK) != 0;
  return libdump::WriteHeapDump(fd, o);
}
extern "C" void libdump_add_root(const void* slot, const char* d) { libdump::AddRoot(slot, d); }
extern "C" void libdump_remove_root(const void* slot) { libdump::RemoveRoot(slot); }
extern "C" void libdump_set_finalizer(void* obj, void (*fn)(void*)) { libdump::SetFinalizer(obj, fn); }
