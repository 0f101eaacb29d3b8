#include "root_registry.h"

#include <atomic>
#include <new>

namespace libdump::heapdump {

namespace {
std::atomic<RootRegistry*> g_instance{nullptr};
}  // namespace

RootRegistry& RootRegistry::Instance() {
  static RootRegistry* r = [] {
    auto* made = new RootRegistry;  // never destroyed: dumps may run during exit
    g_instance.store(made, std::memory_order_release);
    return made;
  }();
  return *r;
}

void RootRegistry::ResetAfterForkIfCreated() {
  // Not Instance(): creating it allocates, and this runs among the fork's
  // child handlers, maybe before the allocator's.
  if (RootRegistry* r = g_instance.load(std::memory_order_acquire)) r->ResetAfterFork();
}

void RootRegistry::AddRoot(const void* slot, std::string description) {
  std::lock_guard<std::mutex> l(mu_);
  changing_ = true;
  roots_[slot] = std::move(description);
  changing_ = false;
}

bool RootRegistry::RemoveRoot(const void* slot) {
  std::lock_guard<std::mutex> l(mu_);
  changing_ = true;
  const bool removed = roots_.erase(slot) != 0;
  changing_ = false;
  return removed;
}

void RootRegistry::SetFinalizer(void* obj, FinalizerFn fn) {
  std::lock_guard<std::mutex> l(mu_);
  changing_ = true;
  if (fn == nullptr) finalizers_.erase(obj);
  else finalizers_[obj] = fn;
  changing_ = false;
}

void RootRegistry::ResetAfterFork() {
  if (changing_) {
    // Half-inserted nodes cannot be trusted or freed: new, empty maps.
    new (&roots_) std::map<const void*, std::string>;
    new (&finalizers_) std::map<void*, FinalizerFn>;
    changing_ = false;
  }
  new (&mu_) std::mutex;
}

}  // namespace libdump::heapdump
