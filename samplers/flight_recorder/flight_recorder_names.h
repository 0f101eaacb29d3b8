// Region names interned once per call site (libdump::trace::Name): a
// region then records a 4-byte id instead of copying its name twice. The
// table is process-wide, append-only and lock-free (two bump counters over
// static storage), so the crash handler reads it as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace libdump::samplers::flight {

inline constexpr uint32_t kMaxInterned = 4096;
inline constexpr size_t kInternedBytes = 128 * 1024;

// The id of a copy of name (at most kMaxName bytes), >= 1; 0 when the
// table is full (the caller then records the name itself). A name interned
// twice gets two ids.
uint32_t Intern(const char* name);
// The name of id; "" if there is none (yet). Async-signal-safe.
std::string_view InternedName(uint32_t id);

}  // namespace libdump::samplers::flight
