// Lets a live image's threads go when the tool gets a terminating signal
// (SIGINT, SIGTERM, SIGHUP, SIGQUIT), then dies of the signal as it would
// have. The kernel also detaches a dead tracer's tracees, whatever killed it
// (SIGKILL included, which no handler sees); the guard makes the detach come
// first, before anything else the tool's death runs, and holds for signals
// the tool would otherwise survive stopped (a handler of its own that
// returns). One guard at a time.
#pragma once

#include <csignal>
#include <initializer_list>
#include <vector>

namespace libdump::procimage {

class DetachOnSignal {
 public:
  // tids: the threads to let go (LiveImage::StoppedThreads()), copied. Must
  // be made on the thread that attached: only the tracing thread may detach,
  // so a signal taken on another thread is passed to it.
  explicit DetachOnSignal(const std::vector<int>& tids,
                          std::initializer_list<int> signals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT});
  ~DetachOnSignal();  // the previous handlers back
  DetachOnSignal(const DetachOnSignal&) = delete;
  DetachOnSignal& operator=(const DetachOnSignal&) = delete;

 private:
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
};

}  // namespace libdump::procimage
