#include "large_cache.h"

#include "lock.h"
#include "page_heap.h"

namespace libdump::internal {

void DrainLargeCache(LargeCache& lc) {
  if (lc.bytes == 0) return;
  LockGuard g(g_page_heap.mutex());
  for (Span*& head : lc.head) {
    while (Span* s = head) {
      head = s->next;
      s->next = nullptr;
      g_page_heap.Free(s);
    }
  }
  lc.bytes = 0;
}

}  // namespace libdump::internal
