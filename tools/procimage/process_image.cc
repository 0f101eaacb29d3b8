#include "process_image.h"

#include <algorithm>

namespace libdump::procimage {

const ImageMapping* ProcessImage::FindMapping(uint64_t addr) const {
  const auto& maps = Mappings();
  auto it = std::upper_bound(maps.begin(), maps.end(), addr,
                             [](uint64_t a, const ImageMapping& m) { return a < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

const ImageModule* ProcessImage::FindModule(uint64_t addr) const {
  for (const auto& m : Modules())
    if (addr >= m.start && addr < m.end) return &m;
  return nullptr;
}

}  // namespace libdump::procimage
