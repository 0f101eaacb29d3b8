// Reading a pinned window (flight_recorder_buffer.h): a chunk's events in
// the order they were appended, and the 8-byte fields of their payloads.
#pragma once

#include <cstdint>
#include <cstring>

#include "samplers/flight_recorder/flight_recorder_buffer.h"

namespace libdump::samplers::flight {

inline uint64_t Get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

template <class F>
void ForEachEvent(const Window& w, uint32_t chunk, F&& f) {
  const ChunkHeader& h = w.header(chunk);
  const uint32_t used = h.used.load(std::memory_order_acquire);
  const uint8_t* d = w.data(chunk);
  for (uint32_t off = 0; off + sizeof(EventHeader) <= used;) {
    const auto* e = reinterpret_cast<const EventHeader*>(d + off);
    if (e->size < sizeof(EventHeader) || off + e->size > used) return;
    f(*e, reinterpret_cast<const uint8_t*>(e + 1));
    off += e->size;
  }
}

}  // namespace libdump::samplers::flight
