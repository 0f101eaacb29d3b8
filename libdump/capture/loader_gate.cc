#include "loader_gate.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>

namespace libdump::capture {

namespace {

// Atomics and sched_yield, not a lock: a section may be entered from a
// sampled allocation anywhere, and its waits are short (one listing or one
// unwind, or one fork).
std::atomic<int> g_inside{0};
std::atomic<bool> g_forking{false};
thread_local int t_depth = 0;       // sections nest: a sampled allocation inside a listing
thread_local bool t_forking = false;  // this thread holds the gate shut

void ForkPrepare() {
  if (t_depth > 0) return;  // forking from inside a section: nothing to wait for but itself
  t_forking = true;
  g_forking.store(true, std::memory_order_seq_cst);
  while (g_inside.load(std::memory_order_seq_cst) != 0) sched_yield();
}

void ForkParent() {
  if (!t_forking) return;
  t_forking = false;
  g_forking.store(false, std::memory_order_release);
}

void ForkChild() {
  // The child has one thread, this one, and it is in no section.
  g_inside.store(t_depth, std::memory_order_relaxed);
  t_forking = false;
  g_forking.store(false, std::memory_order_release);
}

}  // namespace

LoaderSection::LoaderSection() {
  if (t_depth++ > 0 || t_forking) return;
  for (;;) {
    g_inside.fetch_add(1, std::memory_order_seq_cst);
    if (!g_forking.load(std::memory_order_seq_cst)) return;
    g_inside.fetch_sub(1, std::memory_order_seq_cst);
    while (g_forking.load(std::memory_order_acquire)) sched_yield();
  }
}

LoaderSection::~LoaderSection() {
  if (--t_depth > 0 || t_forking) return;
  g_inside.fetch_sub(1, std::memory_order_release);
}

void InstallLoaderGate() {
  static const int registered = pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  (void)registered;
}

}  // namespace libdump::capture
