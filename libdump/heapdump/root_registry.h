// Roots and finalizers the program registers (AddRoot, SetFinalizer).
//
// The dumper locks the registry before it stops the world and reads it while
// stopped, so no stopped thread can be holding the lock.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace libdump::heapdump {

using FinalizerFn = void (*)(void*);

class RootRegistry {
 public:
  static RootRegistry& Instance();

  void AddRoot(const void* slot, std::string description);
  bool RemoveRoot(const void* slot);
  void SetFinalizer(void* obj, FinalizerFn fn);

  // Held by the dumper from before the stop until after the resume.
  std::mutex& mutex() { return mu_; }
  // In a forked child: the mutex is freed (its holder stayed in the parent),
  // and maps that a thread of the parent was changing are dropped, leaked.
  static void ResetAfterForkIfCreated();
  // Only with mutex() held.
  const std::map<const void*, std::string>& roots() const { return roots_; }
  const std::map<void*, FinalizerFn>& finalizers() const { return finalizers_; }

 private:
  void ResetAfterFork();

  std::mutex mu_;
  std::map<const void*, std::string> roots_;  // slot -> description
  std::map<void*, FinalizerFn> finalizers_;
  bool changing_ = false;  // a writer is inside mu_ (a reader, the dumper, is not)
};

}  // namespace libdump::heapdump
