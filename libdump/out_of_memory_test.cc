// The out-of-memory hook: provoked with RLIMIT_AS in a forked child, so the
// test process itself keeps its address space.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "allocator_hooks.h"
#include "heap_walk.h"
#include "libdump/heap.h"

namespace libdump::internal {
namespace {

struct HookRecord {
  int calls = 0;
  size_t requested = 0;
  bool in_allocator = false;
  size_t objects = 0;
  void* nested = reinterpret_cast<void*>(1);
};
HookRecord g_record;

void CountObject(const ObjectInfo&, void* n) { ++*static_cast<size_t*>(n); }

void Hook(size_t requested) {
  ++g_record.calls;
  g_record.requested = requested;
  g_record.in_allocator = InAllocator();
  // A stopped-world walk from here must not find an allocator lock held or
  // a span half made: it reads every span.
  g_record.objects = 0;
  ForEachObject(&CountObject, &g_record.objects);
  // A request failing inside the hook fails without calling it again.
  g_record.nested = Allocate(size_t{4} << 30);
}

size_t AddressSpaceBytes() {
  FILE* f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (f == nullptr || fscanf(f, "%lu", &pages) != 1) pages = 0;
  if (f != nullptr) fclose(f);
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Each failed check is one bit of the child's exit status.
int Child() {
  int failed = 0;
  void* keep = Allocate(100);  // an object the hook's walk must see
  SetOutOfMemoryHook(&Hook);
  // Room for page-map leaves and metadata, none for another 1 GiB arena.
  const rlim_t limit = AddressSpaceBytes() + (rlim_t{256} << 20);
  const rlimit rl{limit, limit};
  if (setrlimit(RLIMIT_AS, &rl) != 0) return 0x80;

  // A large request beyond every arena.
  const size_t big = size_t{2} << 30;
  errno = 0;
  if (Allocate(big) != nullptr || errno != ENOMEM) failed |= 1;
  if (g_record.calls != 1 || g_record.requested != big) failed |= 2;
  if (g_record.in_allocator || g_record.objects == 0 || g_record.nested != nullptr) failed |= 4;

  // Small requests until the arenas are used up (never touched: no RSS).
  const size_t small = 32768;
  size_t n = 0;
  while (Allocate(small) != nullptr && ++n < (size_t{1} << 22)) {
  }
  if (g_record.calls != 2 || g_record.requested != small) failed |= 8;
  if (g_record.in_allocator || g_record.objects <= n) failed |= 16;

  // Without a hook a failure is only a failure.
  SetOutOfMemoryHook(nullptr);
  if (Allocate(big) != nullptr || g_record.calls != 2) failed |= 32;
  Free(keep);
  return failed;
}

TEST(OutOfMemory, HookRunsOnceOutsideTheAllocatorBeforeNullIsReturned) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(Child());
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  // Bits: 1 large not null/ENOMEM, 2 large hook call, 4 hook context, 8 small
  // hook call, 16 small hook context, 32 hook cleared, 0x80 setrlimit.
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace libdump::internal
