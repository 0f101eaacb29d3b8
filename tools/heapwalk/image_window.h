// Reads words of a process image through a small window, so that walking
// millions of chunk headers costs a few large reads instead of one virtual
// call (and, for a core file, one pread) per header. The window is a fixed
// 64 KiB whatever the image says.
#pragma once

#include <cstdint>
#include <vector>

#include "process_image.h"

namespace libdump::heapwalk {

class ImageWindow {
 public:
  explicit ImageWindow(const procimage::ProcessImage& image) : image_(image), buf_(kSize) {}
  // The 8 bytes at addr; false when any is missing from the image.
  bool Word(uint64_t addr, uint64_t* out);

 private:
  static constexpr size_t kSize = 64 << 10;
  const procimage::ProcessImage& image_;
  std::vector<uint8_t> buf_;
  uint64_t base_ = 0;
  size_t len_ = 0;
};

}  // namespace libdump::heapwalk
