// Spans of a size class that no thread owns: those left by exited threads
// that still hold live objects. A thread short of a span adopts one of them
// before asking the page heap for fresh pages; a thread that frees into one,
// and allocates its class too, takes it over (Reclaim).
#pragma once

#include "lock.h"
#include "span.h"

namespace libdump::internal {

struct ThreadHeap;

// Takes an owned span that still holds live objects.
void Abandon(Span* s);
// An orphan of the class with room, now owned by h; frees orphans that have
// emptied on the way. Null if none.
Span* Adopt(ThreadHeap* h, int size_class);

// Orphan s, now owned by h (in no list); false if s is no longer an orphan.
bool Reclaim(ThreadHeap* h, Span* s);

// Hands an empty small span back to the page heap.
void ReleaseSmallSpan(Span* s);

void CentralForkPrepare();
void CentralForkParent();
void CentralForkChild();

}  // namespace libdump::internal
