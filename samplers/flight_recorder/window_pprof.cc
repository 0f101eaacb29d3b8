#include "samplers/flight_recorder/window_pprof.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "libdump/format/pprof_profile.h"
#include "samplers/flight_recorder/flight_recorder.h"
#include "samplers/flight_recorder/flight_recorder_clock.h"
#include "samplers/flight_recorder/window_events.h"
#include "samplers/symbolize/pprof_symbolizer.h"
#include "samplers/common/bucket_snapshot.h"

namespace libdump::samplers::flight {

bool WriteWindowPprof(Window& w, uint32_t* order, int64_t period, int fd) {
  std::unordered_map<std::vector<uintptr_t>, uint64_t, StackVectorHash> counts;
  int64_t oldest = Ticks(), newest = 0;
  w.snapshotting().store(true, std::memory_order_seq_cst);
  const size_t n = w.Pin(order);
  for (size_t k = 0; k < n; ++k) {
    ForEachEvent(w, order[k], [&](const EventHeader& e, const uint8_t* p) {
      oldest = std::min(oldest, e.ts);
      newest = std::max(newest, e.ts);
      if (e.type != kCpuSample) return;
      std::vector<uintptr_t> key(e.aux);
      std::memcpy(key.data(), p + 8, 8 * key.size());
      counts[key] += Get64(p);
    });
  }
  w.Unpin();
  w.snapshotting().store(false, std::memory_order_release);
  pprof::ProfileBuilder b({{"samples", "count"}, {"cpu", "nanoseconds"}}, {"cpu", "nanoseconds"}, period);
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  const int64_t realtime = int64_t{rt.tv_sec} * 1000000000 + rt.tv_nsec;
  const ClockMap clock = CurrentClockMap();
  const int64_t span = newest > oldest ? clock.Ns(newest) - clock.Ns(oldest) : 0;
  b.set_time_nanos(realtime - (NowNs() - clock.Ns(oldest)));
  b.set_duration_nanos(span);
  b.AddComment("libdump flight recorder window");
  ProfileSymbolizer sym(b);
  for (const auto& [stack, count] : counts) {
    const std::vector<uint64_t> locs = sym.Locations(stack);
    const int64_t v[] = {static_cast<int64_t>(count), static_cast<int64_t>(count) * period};
    b.AddSample(locs, v);
  }
  return b.WriteGzip(fd);
}

}  // namespace libdump::samplers::flight
