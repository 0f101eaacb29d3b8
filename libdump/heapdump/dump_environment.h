// The settings of dumps the process starts by itself (a signal, an HTTP
// request, a failed allocation) and the compression workers of every dump,
// from LIBDUMP_HEAPDUMP_* (docs/ENVIRONMENT.md). A wrong value is reported on
// stderr once and the default used.
#pragma once

namespace libdump::heapdump {

// LIBDUMP_HEAPDUMP_ZSTD_LEVEL: -5 (fastest) to 19; kDefaultZstdLevel unset.
constexpr int kDefaultZstdLevel = 1;
int ZstdLevelFromEnvironment();

// LIBDUMP_HEAPDUMP_THREADS, or the CPUs sched_getaffinity allows (1 to 64).
int DumpThreadsFromEnvironment();

// LIBDUMP_HEAPDUMP_MODE=fork|stop; unset: fork for compressed dumps (the
// program stops only for the fork), stop for raw ones.
bool ForkSnapshotFromEnvironment(bool zstd);

}  // namespace libdump::heapdump
