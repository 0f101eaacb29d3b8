#include "vtable_classes.h"

#include <algorithm>

#include "demangle.h"

namespace libdump::coretodump {

namespace {
// Beyond this many distinct first words the cache of misses is dropped:
// memory stays bounded whatever the heap holds.
constexpr size_t kMaxCached = 1 << 20;
}  // namespace

bool VtableClasses::InModuleReadOnly(uint64_t addr, uint64_t n) const {
  const procimage::ImageMapping* m = image_.FindMapping(addr);
  return m != nullptr && m->readable && !m->writable && !m->IsAnonymous() && m->end - addr >= n;
}

std::string VtableClasses::ReadString(uint64_t addr) const {
  char buf[1024];
  const size_t n = image_.Read(addr, buf, sizeof buf);
  const char* end = std::find(buf, buf + n, '\0');
  if (end == buf + n) return {};
  return std::string(buf, static_cast<size_t>(end - buf));
}

bool VtableClasses::IsTypeInfoVtable(uint64_t ti_vptr) {
  auto [it, fresh] = ti_vtables_.try_emplace(ti_vptr, false);
  if (!fresh) return it->second;
  if (ti_vtables_.size() > kMaxCached) ti_vtables_.clear();
  uint64_t meta = 0, name = 0;
  if (ti_vptr < 8 || !image_.ReadValue(ti_vptr - 8, &meta) || !image_.ReadValue(meta + 8, &name)) return false;
  const std::string n = ReadString(name);
  const bool yes = n == "N10__cxxabiv117__class_type_infoE" || n == "N10__cxxabiv120__si_class_type_infoE" ||
                   n == "N10__cxxabiv121__vmi_class_type_infoE";
  ti_vtables_[ti_vptr] = yes;
  return yes;
}

std::string VtableClasses::ClassOf(uint64_t vptr) {
  // Past the offset-to-top and RTTI words, in read-only data of a module
  // (relocated vtables sit in RELRO, read-only too).
  if (vptr < 16 || (vptr & 7) != 0 || !InModuleReadOnly(vptr - 16, 24)) return {};
  uint64_t ti = 0, ti_vptr = 0, name = 0;
  if (!image_.ReadValue(vptr - 8, &ti) || (ti & 7) != 0 || !image_.ReadValue(ti, &ti_vptr) ||
      !image_.ReadValue(ti + 8, &name) || !IsTypeInfoVtable(ti_vptr)) {
    return {};
  }
  std::string mangled = ReadString(name);
  // A leading '*' marks a name compared by address (a class local to its unit).
  if (!mangled.empty() && mangled[0] == '*') mangled.erase(0, 1);
  if (mangled.empty()) return {};
  return DemangleTypeName(mangled);
}

bool VtableClasses::Note(uint64_t first_word, uint64_t object_size) {
  auto it = seen_.find(first_word);
  if (it == seen_.end()) {
    if (seen_.size() > kMaxCached) {
      // Keep the classes found; forget the misses.
      std::erase_if(seen_, [](const auto& kv) { return kv.second == 0; });
    }
    std::string name = ClassOf(first_word);
    uint32_t index = 0;
    if (!name.empty()) {
      classes_.push_back({first_word, std::move(name), object_size});
      index = static_cast<uint32_t>(classes_.size());
    }
    it = seen_.emplace(first_word, index).first;
  }
  if (it->second == 0) return false;
  PolymorphicClass& c = classes_[it->second - 1];
  c.size = std::min(c.size, object_size);
  return true;
}

}  // namespace libdump::coretodump
