// A span's remote frees: threads that do not own a span publish the slots
// they free into its remote words (span.h), and its owner collects them into
// its live bits. Declared here, below the thread caches, the central free
// lists and the remote batches that all call them; defined in thread_cache.cc
// beside the frees and refills that inline them.
#pragma once

#include <cstdint>

namespace libdump::internal {

struct Span;

// Folds remote frees into live bits. The caller owns the span (or holds its
// orphan list's lock).
// force: also when no remote free was announced (one may have been published
// after the last announcement was consumed).
void CollectRemote(Span* s, bool force = false);

// Sets `bits` (freed slots) in s->remote[w]; s is not touched afterwards.
void PublishRemote(Span* s, uint32_t w, uint64_t bits);

}  // namespace libdump::internal
