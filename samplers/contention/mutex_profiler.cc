// The mutex profile (Go's runtime.SetMutexProfileFraction and pprof
// "mutex"): the delay of contended pthread mutex and rwlock acquisitions,
// charged to the stack that released the lock while others waited.
//
// On average one contended acquisition in `fraction` is sampled, when it
// starts waiting. A sampled waiter registers (the lock's address, when it
// began) in a small table; every release of a lock with sampled waiters
// charges the delay they accumulated since the previous release (or since
// they began) to the releasing stack and restarts their clocks. So the
// whole wait is split among the holders that caused it: a lock held 300 ms
// by A and then 100 ms by B while C waits charges A 300 ms and B 100 ms
// (Go 1.22 charges its runtime-internal locks the same way; Go's sync.Mutex
// charges the whole wait to the one Unlock that ends it, which hides A
// behind B). Each contention counts once, on the stack of the release that
// ended it. Values are multiplied by the fraction when written, as Go does.
//
// What is not seen: a release inside pthread_cond_wait (glibc unlocks there
// without the interposed call; the next interposed release of the lock
// charges that time instead), a waiter that registers just after the
// holder's release check (its time before the next release is dropped), and
// the wake-up latency after the last release (Go drops it too).
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <new>

#include "samplers/unwind/allocation_stack_capture.h"
#include "samplers/contention/block_profiler.h"
#include "libdump/profiler.h"
#include "samplers/interpose/wait_state.h"

namespace libdump::samplers {
namespace {

std::atomic<int> g_fraction{0};

// Sampled waiters per address hash: what a release reads first.
constexpr size_t kWaiterHashes = 256;
std::atomic<uint32_t> g_waiters_by_hash[kWaiterHashes];

size_t AddressHash(const void* p) {
  uint64_t x = reinterpret_cast<uintptr_t>(p) * 0x9e3779b97f4a7c15ULL;
  return static_cast<size_t>(x >> 56);
}

struct Slot {
  const void* lock;  // null: free
  int64_t waiters;
  int64_t base_sum;     // sum of the waiters' clock starts
  int64_t last_charge;  // when the lock was last released with them waiting
  ContentionTable::Bucket* last_release;
};
// A few locks have sampled waiters at a time; a waiter that finds its
// window full is not sampled after all.
constexpr size_t kSlots = 256, kProbe = 8;
Slot g_slots[kSlots];
std::atomic<bool> g_slots_lock{false};

void LockSlots() {
  while (g_slots_lock.exchange(true, std::memory_order_acquire)) {
    while (g_slots_lock.load(std::memory_order_relaxed)) sched_yield();
  }
}
void UnlockSlots() { g_slots_lock.store(false, std::memory_order_release); }

// Under the slots' lock. Searches the whole window: slots are freed in any
// order, so an empty one does not end a probe.
Slot* FindSlot(const void* lock, bool claim) {
  const size_t h = AddressHash(lock);
  Slot* free_slot = nullptr;
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = g_slots[(h + i) % kSlots];
    if (s.lock == lock) return &s;
    if (s.lock == nullptr && free_slot == nullptr) free_slot = &s;
  }
  if (!claim || free_slot == nullptr) return nullptr;
  *free_slot = Slot{lock, 0, 0, 0, nullptr};
  return free_slot;
}

}  // namespace

ContentionTable& MutexTable() {
  alignas(ContentionTable) static unsigned char storage[sizeof(ContentionTable)];
  static ContentionTable* t = [] {
    ContentionTable* made = new (storage) ContentionTable;
    pthread_atfork(
        [] {
          LockSlots();
          MutexTable().Lock();
        },
        [] {
          MutexTable().Unlock();
          UnlockSlots();
        },
        [] {
          MutexTable().Unlock();
          UnlockSlots();
        });
    return made;
  }();
  return *t;
}

bool MutexMayHaveWaiters(const void* lock) {
  return g_waiters_by_hash[AddressHash(lock)].load(std::memory_order_relaxed) != 0;
}

bool MutexWaitBegin(const void* lock, int64_t* t0_ptr) {
  const int fraction = g_fraction.load(std::memory_order_relaxed);
  if (fraction <= 0 || WaitRandom() % static_cast<uint64_t>(fraction) != 0) return false;
  if (*t0_ptr == 0) *t0_ptr = WaitClockNs();  // the block profile did not read it
  const int64_t t0 = *t0_ptr;
  LockSlots();
  Slot* s = FindSlot(lock, true);
  if (s != nullptr) {
    ++s->waiters;
    s->base_sum += t0;
    g_waiters_by_hash[AddressHash(lock)].fetch_add(1, std::memory_order_relaxed);
  }
  UnlockSlots();
  return s != nullptr;
}

void MutexWaitEnd(const void* lock, int64_t t0, int64_t) {
  LockSlots();
  if (Slot* s = FindSlot(lock, false)) {
    s->base_sum -= t0 > s->last_charge ? t0 : s->last_charge;
    if (s->last_release != nullptr) MutexTable().Add(s->last_release, 1, 0);
    if (--s->waiters == 0) s->lock = nullptr;
    g_waiters_by_hash[AddressHash(lock)].fetch_sub(1, std::memory_order_relaxed);
  }
  UnlockSlots();
}

void MutexRelease(const void* lock) {
  LockSlots();
  Slot* s = FindSlot(lock, false);
  if (s != nullptr && s->waiters > 0) {
    // The stack is taken under the slots' lock: rare (a sampled waiter is
    // waiting on this very lock), and it keeps the charge and the restart of
    // the clocks one step.
    uintptr_t pcs[kMaxFrames];
    const size_t n = CaptureAllocationStack(pcs, kMaxFrames);
    const int64_t now = WaitClockNs();
    const int64_t delay = s->waiters * now - s->base_sum;
    s->base_sum = s->waiters * now;
    s->last_charge = now;
    s->last_release = MutexTable().Record(pcs, n, 0, static_cast<double>(delay > 0 ? delay : 0));
  }
  UnlockSlots();
}

}  // namespace libdump::samplers

namespace libdump {

int SetMutexProfileFraction(int n) {
  const int old = samplers::g_fraction.load(std::memory_order_relaxed);
  if (n < 0) return old;
  samplers::g_fraction.store(n, std::memory_order_relaxed);
  if (n > 0) {
    samplers::MutexTable();
    samplers::WarmWaitStackCapture();
    samplers::g_wait_profiling.fetch_or(samplers::kMutexProfiling, std::memory_order_relaxed);
  } else {
    samplers::g_wait_profiling.fetch_and(~samplers::kMutexProfiling, std::memory_order_relaxed);
  }
  return old;
}

bool WriteMutexProfile(int fd) {
  const int fraction = samplers::g_fraction.load(std::memory_order_relaxed);
  const int64_t scale = fraction > 0 ? fraction : 1;
  pprof::ProfileBuilder b = samplers::NewContentionProfileBuilder(scale);
  samplers::t_wait.in_profiler = true;
  samplers::BuildContentionProfile(b, samplers::MutexTable().Snapshot(), static_cast<double>(scale));
  samplers::t_wait.in_profiler = false;
  return b.WriteGzip(fd);
}

void ResetMutexProfile() { samplers::MutexTable().Clear(); }

}  // namespace libdump
