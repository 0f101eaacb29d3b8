#include "dump_environment.h"

#include <sched.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>

#include "platform/env/env_var.h"
#include "libdump/heap_dump.h"
#include "parallel_zstd_sink.h"

namespace libdump::heapdump {

int ZstdLevelFromEnvironment() {
  const char* v = env::Get("LIBDUMP_HEAPDUMP_ZSTD_LEVEL");
  if (v == nullptr) return kDefaultZstdLevel;
  const char* digits = *v == '-' ? v + 1 : v;
  uint64_t n = 0;
  if (env::ParseUint(digits, &n) && n <= 19) {
    const int level = *v == '-' ? -static_cast<int>(n) : static_cast<int>(n);
    if (level >= -5) return level;
  }
  env::Warn("LIBDUMP_HEAPDUMP_ZSTD_LEVEL", v, "is not a zstd level (-5 to 19)", "1");
  return kDefaultZstdLevel;
}

int DumpThreadsFromEnvironment() {
  int cpus = 1;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = std::max(1, CPU_COUNT(&set));
  cpus = std::min(cpus, ParallelZstdSink::kMaxWorkers);
  return static_cast<int>(env::GetUint("LIBDUMP_HEAPDUMP_THREADS", static_cast<uint64_t>(cpus), 1,
                                       ParallelZstdSink::kMaxWorkers));
}

bool ForkSnapshotFromEnvironment(bool zstd) {
  const char* v = env::Get("LIBDUMP_HEAPDUMP_MODE");
  if (v == nullptr) return zstd;
  if (strcasecmp(v, "fork") == 0) return true;
  if (strcasecmp(v, "stop") == 0) return false;
  env::Warn("LIBDUMP_HEAPDUMP_MODE", v, "is not fork or stop", zstd ? "fork (compressed dumps)" : "stop (raw dumps)");
  return zstd;
}

}  // namespace libdump::heapdump

namespace libdump {

HeapDumpOptions HeapDumpOptionsFromEnvironment(bool zstd) {
  HeapDumpOptions o;
  o.zstd = zstd;
  o.zstd_level = heapdump::ZstdLevelFromEnvironment();
  o.fork_snapshot = heapdump::ForkSnapshotFromEnvironment(zstd);
  return o;
}

}  // namespace libdump
