// The CPU samples of the flight recorder's window as a pprof CPU profile.
#pragma once

#include <cstdint>

#include "samplers/flight_recorder/flight_recorder_buffer.h"

namespace libdump::samplers::flight {

// With the window pinned meanwhile (order: one entry per chunk); period:
// the nanoseconds of CPU time one sample stands for. Symbolizes, so
// allocates; the caller holds the writer lock.
bool WriteWindowPprof(Window& w, uint32_t* order, int64_t period, int fd);

}  // namespace libdump::samplers::flight
