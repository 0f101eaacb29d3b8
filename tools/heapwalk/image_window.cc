#include "image_window.h"

#include <cstring>

namespace libdump::heapwalk {

bool ImageWindow::Word(uint64_t addr, uint64_t* out) {
  if (addr < base_ || addr - base_ + 8 > len_) {
    if (addr > UINT64_MAX - kSize) return image_.ReadValue(addr, out);
    // Half the window behind addr: free lists run downwards as often as up.
    base_ = (addr > kSize / 2 ? addr - kSize / 2 : 0) & ~uint64_t{4095};
    len_ = image_.Read(base_, buf_.data(), kSize);
    if (addr - base_ + 8 > len_) return image_.ReadValue(addr, out);  // straddles a hole
  }
  std::memcpy(out, buf_.data() + (addr - base_), 8);
  return true;
}

}  // namespace libdump::heapwalk
