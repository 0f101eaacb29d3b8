// The libdump heap: allocation, statistics and enumeration of live objects.
//
// When libdump.so is preloaded (or linked in), malloc/new already allocate
// here; these functions are for programs that want to use the heap directly
// or look at it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace libdump {

void* Allocate(size_t size);                     // malloc
void* AllocateZeroed(size_t n, size_t size);     // calloc
void* AllocateAligned(size_t align, size_t size); // align: a power of two
void* Reallocate(void* p, size_t size);          // realloc; p may be null
void Free(void* p);                              // free; p may be null
size_t UsableSize(const void* p);                // malloc_usable_size

// Like Go's runtime.MemStats. Byte counts are in slot bytes (what the
// objects occupy), not the sizes requested. libdump's own small objects
// (its profilers' tables, a dump's buffers) are not counted in the first
// five: they live in spans of their own, counted in spans and span_bytes.
struct HeapStats {
  uint64_t bytes_in_use;           // live objects
  uint64_t total_allocated_bytes;  // cumulative
  uint64_t mallocs;                // cumulative allocations
  uint64_t frees;                  // cumulative frees
  uint64_t live_objects;           // mallocs - frees
  uint64_t spans;                  // spans in use (small and large)
  uint64_t span_bytes;             // bytes of the spans in use
  uint64_t arenas;                 // arenas reserved
  uint64_t bytes_reserved;         // address space of all arenas
  uint64_t bytes_free_committed;   // empty pages kept committed for reuse
  uint64_t bytes_returned;         // empty pages given back with madvise (or never touched)
  uint64_t metadata_bytes;         // span, heap and side-table metadata
};
// Sums per-thread counters without locking: a consistent snapshot only while
// other threads are quiet.
HeapStats GetHeapStats();

// [lo, hi): from the lowest arena start to the highest arena end; {0, 0}
// before the first allocation.
struct HeapRange {
  uintptr_t lo;
  uintptr_t hi;
};
HeapRange GetHeapRange();

struct ObjectInfo {
  uintptr_t addr;
  size_t size;       // slot size: what the object may use
  uint32_t type_id;  // registered type (typed.h), 0 if untyped
  uint32_t count;    // array length for make_array, 1 for make, 0 if untyped
  bool sampled;      // picked by heap-profile sampling
};

// Visits every live object in address order. Holds the page heap lock, so
// the visitor must not allocate or free. Objects allocated or freed by other
// threads during the walk may or may not be seen; all others are seen
// exactly once. For a walk with the world stopped see
// libdump/heap_walk.h (ForEachObject).
using ObjectVisitor = void (*)(const ObjectInfo& object, void* context);
void WalkHeap(ObjectVisitor visit, void* context);
template <class F>
void WalkHeap(F&& f) {
  WalkHeap([](const ObjectInfo& o, void* c) { (*static_cast<F*>(c))(o); }, static_cast<void*>(&f));
}

// If addr points into a live object (its start or inside it), fills *out and
// returns true. O(1): a page map lookup, a bitmap test and, for a slot
// holding the free lists' key, a search of the calling thread's list and
// the class's transfer cache (docs/ALLOCATOR.md). Among running threads a
// slot another thread freed onto its own list reads as live until that
// thread gives it back; with the world stopped (WriteHeapDump) every answer
// is exact.
bool FindObject(const void* addr, ObjectInfo* out);

// Heap-profile sampling: one allocation about every `bytes` allocated bytes is
// marked sampled (0, the default, turns sampling off). Applies to each
// thread from its next sample on.
void SetSampleInterval(int64_t bytes);
bool IsSampled(const void* p);

// Transparent huge pages for the heap's arenas (docs/ALLOCATOR.md): kAuto,
// the default, keeps the first 32 MiB of the heap in small pages. Overrides
// LIBDUMP_HUGEPAGES=0|1|auto; applies to arenas mapped from then on.
enum class HugePages { kOff, kOn, kAuto };
void SetHugePages(HugePages mode);

// Gives every empty committed page back to the OS now (madvise), like
// tcmalloc's ReleaseMemoryToSystem; malloc_trim(pad) does the same down to
// pad bytes. Returns the bytes released. Pages of a huge-page region go only
// once the whole region is free.
uint64_t ReleaseFreeMemory();

// Empty pages are released as they stay unused (a decay, docs/ALLOCATOR.md),
// but only while the program allocates: one that stops keeps what it freed
// last, up to a cap. With this on, a thread ("libdump-release") runs the
// decay every 100 ms instead, as jemalloc's background_thread does. Off by
// default, since a thread the program did not create can break one that must
// stay single-threaded (unshare(CLONE_NEWUSER), for one);
// LIBDUMP_BACKGROUND_RELEASE=1 turns it on at start. A forked child runs
// without it until it turns it on. False if the thread cannot be created.
bool SetBackgroundRelease(bool on);

}  // namespace libdump
