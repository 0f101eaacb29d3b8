#include "samplers/flight_recorder/flight_recorder_names.h"

#include <atomic>
#include <cstring>

#include "samplers/flight_recorder/flight_recorder_buffer.h"

namespace libdump::samplers::flight {
namespace {

// Static storage: nothing to allocate, and bss pages cost nothing until a
// name is written to them.
char g_bytes[kInternedBytes];
std::atomic<uint32_t> g_used_bytes{0};
std::atomic<uint32_t> g_next_id{1};
// (offset << 8 | length) + 1 of each id, published with release; 0 until then.
std::atomic<uint64_t> g_entry[kMaxInterned];

}  // namespace

uint32_t Intern(const char* name) {
  const size_t len = strnlen(name, kMaxName);
  // Counters past their capacity stop moving (they overshoot by at most
  // the threads interning at that moment), so they never wrap.
  if (g_next_id.load(std::memory_order_relaxed) >= kMaxInterned ||
      g_used_bytes.load(std::memory_order_relaxed) + len > kInternedBytes) {
    return 0;
  }
  const uint32_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  if (id >= kMaxInterned) return 0;
  const uint32_t off = g_used_bytes.fetch_add(static_cast<uint32_t>(len), std::memory_order_relaxed);
  if (off + len > kInternedBytes) return 0;
  std::memcpy(g_bytes + off, name, len);
  g_entry[id].store(((uint64_t{off} << 8) | len) + 1, std::memory_order_release);
  return id;
}

std::string_view InternedName(uint32_t id) {
  if (id == 0 || id >= kMaxInterned) return {};
  const uint64_t e = g_entry[id].load(std::memory_order_acquire);
  if (e == 0) return {};
  return {g_bytes + ((e - 1) >> 8), static_cast<size_t>((e - 1) & 0xff)};
}

}  // namespace libdump::samplers::flight
