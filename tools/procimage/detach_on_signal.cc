#include "detach_on_signal.h"

#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace libdump::procimage {
namespace {

// What the handler reads: set before it is armed, cleared before the array
// is freed. Plain atomics of plain types: nothing the handler touches locks.
std::atomic<const int*> g_tids{nullptr};
std::atomic<size_t> g_count{0};
std::atomic<long> g_tracer{0};
// The handlers the guard replaced, by signal: the one that was there runs
// next (an output file's, which removes its temporary), then the default.
struct sigaction g_previous[NSIG];

// Only system calls: ptrace, gettid, tgkill, getpid, sigaction and raise
// are all async-signal-safe.
void OnSignal(int sig) {
  const int saved = errno;
  const long tracer = g_tracer.load();
  if (syscall(SYS_gettid) != tracer) {
    // Only the tracer may detach: the signal goes to it.
    syscall(SYS_tgkill, getpid(), tracer, sig);
    errno = saved;
    return;
  }
  const int* tids = g_tids.load();
  const size_t n = g_count.load();
  for (size_t i = 0; tids != nullptr && i < n; ++i) syscall(SYS_ptrace, PTRACE_DETACH, tids[i], 0, 0);
  // The previous handler back (the default when there was none): the
  // signal, blocked while this runs, is delivered again as soon as the
  // handler returns, and the tool ends as it would have without the guard.
  sigaction(sig, &g_previous[sig], nullptr);
  raise(sig);
  errno = saved;
}

}  // namespace

DetachOnSignal::DetachOnSignal(const std::vector<int>& tids, std::initializer_list<int> signals) : signals_(signals) {
  int* copy = new int[tids.size() + 1];
  for (size_t i = 0; i < tids.size(); ++i) copy[i] = tids[i];
  g_count.store(tids.size());
  g_tids.store(copy);
  g_tracer.store(syscall(SYS_gettid));
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  previous_.resize(signals_.size());
  for (size_t i = 0; i < signals_.size(); ++i) {
    // An ignored signal stays ignored (a background job's SIGINT): it ends
    // nothing, so there is nothing to detach before.
    sigaction(signals_[i], nullptr, &previous_[i]);
    if (previous_[i].sa_handler == SIG_IGN) continue;
    if (signals_[i] > 0 && signals_[i] < NSIG) g_previous[signals_[i]] = previous_[i];
    sigaction(signals_[i], &sa, nullptr);
  }
}

DetachOnSignal::~DetachOnSignal() {
  for (size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &previous_[i], nullptr);
  const int* tids = g_tids.exchange(nullptr);
  g_count.store(0);
  delete[] tids;
}

}  // namespace libdump::procimage
