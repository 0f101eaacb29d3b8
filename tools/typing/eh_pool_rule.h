// libstdc++'s emergency exception pool: the block libsupc++ allocates at
// start-up (eh_alloc.cc) so that a throw still works when malloc fails,
// 72,704 bytes in GCC 12 (64 objects of 1 KiB and 64 dependent
// exceptions). Every C++ program has one; a stripped libstdc++ leaves its
// holder (a static pool) without a symbol, so it would read as an unknown
// block "held by global (libstdc++.so.6)". Part of rule 3 (shapes): named
// only when its links prove it (docs/TYPING.md).
#pragma once

#include <cstdint>
#include <span>

#include "typing.h"

namespace libdump::typing {

inline constexpr const char* kEhPoolClass = "libstdc++ emergency exception pool";

// The pool at rest, as a payload shows it: one free entry spanning it, its
// header {size, next} with size within the allocation (allocator rounding
// at most 1/8 of it) and next null, and no other pointer in it (the pool's
// memory is used only when malloc fails, so a pool holding pointers is not
// at rest and is left unnamed).
bool IsEhPoolAtRest(std::span<const uint8_t> payload, uint64_t size, bool points_anywhere);

// Names the one heap block a data root of libstdc++.so holds when it is the
// pool at rest.
void ApplyEhPoolRule(Context& ctx);

}  // namespace libdump::typing
