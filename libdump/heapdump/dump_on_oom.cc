// A heap dump when an allocation fails, like HotSpot's
// -XX:+HeapDumpOnOutOfMemoryError: opt-in (LIBDUMP_HEAPDUMP_ON_OOM=1 with
// LIBDUMP_HEAPDUMP_PATH, or SetHeapDumpOnOutOfMemory), once per process,
// written by the thread whose request failed before malloc returns null or
// operator new throws. The allocator calls the hook outside its locks and
// critical sections, so the dump can stop the world from there.
//
// The dump needs memory of its own (symbol tables, scratch mappings, the
// writer's buffer), which a process that hit RLIMIT_AS or the commit limit
// no longer has. Arming maps a reserve of address space (writable, so that
// strict overcommit charges it too, but never touched: it costs no RAM) and
// the dump starts by giving it back. Should the dump still fail, it says so;
// the failed request fails as it would have anyway.
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <new>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "allocator_hooks.h"
#include "dump_to_path.h"
#include "dump_environment.h"
#include "platform/env/env_var.h"
#include "heap_walk.h"
#include "libdump/heap_dump.h"

namespace libdump {
namespace {

constexpr size_t kReserve = 64 << 20;

// Not on the heap that just ran out.
char g_pattern[4096];
HeapDumpOptions g_options;
std::atomic<bool> g_armed{false};
void* g_reserve = nullptr;

void ReleaseReserve() {
  if (g_reserve != nullptr) munmap(g_reserve, kReserve);
  g_reserve = nullptr;
}

void OnOutOfMemory(size_t requested) {
  // Once: a second failure, including one inside this dump, only fails.
  if (!g_armed.exchange(false)) return;
  ReleaseReserve();
  char why[64];
  std::snprintf(why, sizeof why, "on out of memory (%zu bytes requested)", requested);
  // Compressed on this thread: a worker process is one more copy of the
  // page tables, which the kernel may refuse or kill at this moment.
  HeapDumpOptions options = g_options;
  options.threads = 1;
  // The hook runs inside malloc: nothing may propagate out of it.
  try {
    heapdump::DumpToPath(g_pattern, options, why);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "libdump: heap dump %s failed: %s\n", why, std::strerror(ENOMEM));
  }
}

__attribute__((constructor)) void InstallFromEnvironment() {
  if (!env::GetBool("LIBDUMP_HEAPDUMP_ON_OOM", false)) return;
  HeapDumpOptions options;
  options.zstd = env::GetBool("LIBDUMP_HEAPDUMP_ZSTD", false);
  // The level as on a signal; the mode is always stop, whatever
  // LIBDUMP_HEAPDUMP_MODE says: a fork under memory pressure may fail.
  options.zstd_level = heapdump::ZstdLevelFromEnvironment();
  SetHeapDumpOnOutOfMemory(env::Get("LIBDUMP_HEAPDUMP_PATH"), options);
}

}  // namespace

bool SetHeapDumpOnOutOfMemory(const char* path_pattern, const HeapDumpOptions& options) {
  if (path_pattern == nullptr) path_pattern = heapdump::kDefaultDumpPath;
  if (std::strlen(path_pattern) >= sizeof g_pattern) return false;
  g_armed.store(false);
  std::strcpy(g_pattern, path_pattern);
  g_options = options;
  if (g_reserve == nullptr) {
    void* p = mmap(nullptr, kReserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    g_reserve = p == MAP_FAILED ? nullptr : p;
  }
  internal::SetOutOfMemoryHook(&OnOutOfMemory);
  g_armed.store(true);
  return true;
}

void ClearHeapDumpOnOutOfMemory() {
  g_armed.store(false);
  internal::SetOutOfMemoryHook(nullptr);
  ReleaseReserve();
}

}  // namespace libdump
