#include "allocator.h"
#include "arena.h"
#include "libdump/heap.h"
#include "page_heap.h"

namespace libdump {

using namespace internal;

HeapStats GetHeapStats() {
  HeapStats st{};
  uint64_t mallocs[kNumClasses] = {}, frees[kNumClasses] = {};
  uint64_t large_bytes_allocated = 0, large_bytes_freed = 0;
  for (ThreadHeap* h = AllHeaps(); h != nullptr; h = h->next_all) {
    for (int c = 1; c < kNumClasses; ++c) {
      mallocs[c] += ClassMallocs(h->cache[c]);
      frees[c] += ClassFrees(h->cache[c]);
    }
    st.mallocs += h->large_mallocs.load(std::memory_order_relaxed);
    st.frees += h->large_frees.load(std::memory_order_relaxed);
    large_bytes_allocated += h->large_bytes_allocated.load(std::memory_order_relaxed);
    large_bytes_freed += h->large_bytes_freed.load(std::memory_order_relaxed);
  }
  st.frees += HeaplessFrees();
  large_bytes_freed += HeaplessFreeBytes();  // small and large frees by threads past exit
  uint64_t in_use = large_bytes_allocated;
  st.total_allocated_bytes = large_bytes_allocated;
  for (int c = 1; c < kNumClasses; ++c) {
    st.mallocs += mallocs[c];
    st.frees += frees[c];
    st.total_allocated_bytes += mallocs[c] * g_classes[c].size;
    in_use += mallocs[c] * g_classes[c].size;
    in_use -= frees[c] * g_classes[c].size;
  }
  st.bytes_in_use = in_use - large_bytes_freed;
  st.live_objects = st.mallocs - st.frees;
  st.spans = g_page_heap.in_use_spans();
  st.span_bytes = g_page_heap.in_use_bytes();
  st.arenas = g_arenas.count();
  st.bytes_reserved = g_arenas.reserved_bytes();
  st.bytes_free_committed = g_page_heap.free_committed_bytes();
  st.bytes_returned = g_page_heap.returned_bytes();
  st.metadata_bytes = MetaBytes();
  return st;
}

}  // namespace libdump
