#include "root_registry.h"

namespace libdump::heapdump {

RootRegistry& RootRegistry::Instance() {
  static RootRegistry* r = new RootRegistry;  // never destroyed: dumps may run during exit
  return *r;
}

void RootRegistry::AddRoot(const void* slot, std::string description) {
  std::lock_guard<std::mutex> l(mu_);
  roots_[slot] = std::move(description);
}

bool RootRegistry::RemoveRoot(const void* slot) {
  std::lock_guard<std::mutex> l(mu_);
  return roots_.erase(slot) != 0;
}

void RootRegistry::SetFinalizer(void* obj, FinalizerFn fn) {
  std::lock_guard<std::mutex> l(mu_);
  if (fn == nullptr) finalizers_.erase(obj);
  else finalizers_[obj] = fn;
}

}  // namespace libdump::heapdump
