// A ProcessImage over byte buffers a test builds, for the walkers' tests and
// fuzz target: hand-made heaps, damaged on purpose.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "process_image.h"

namespace libdump::heapwalk::testing {

class SyntheticImage : public procimage::ProcessImage {
 public:
  void AddMapping(uint64_t start, std::vector<uint8_t> bytes, std::string path, bool writable = true) {
    procimage::ImageMapping m;
    m.start = start, m.end = start + bytes.size();
    m.readable = m.present = true, m.writable = writable;
    m.path = std::move(path);
    const auto at = std::upper_bound(maps_.begin(), maps_.end(), start,
                                     [](uint64_t a, const procimage::ImageMapping& x) { return a < x.start; });
    bytes_.insert(bytes_.begin() + (at - maps_.begin()), std::move(bytes));
    maps_.insert(at, m);
  }
  void AddModule(procimage::ImageModule m) { modules_.push_back(std::move(m)); }
  void AddThread(procimage::ImageThread t) { threads_.push_back(t); }
  // The image's bytes at addr, for editing; nullptr when not mapped.
  uint8_t* At(uint64_t addr) {
    const procimage::ImageMapping* m = FindMapping(addr);
    return m ? bytes_[m - maps_.data()].data() + (addr - m->start) : nullptr;
  }
  template <class T>
  void Put(uint64_t addr, const T& v) {
    if (const procimage::ImageMapping* m = FindMapping(addr); m && addr + sizeof v <= m->end)
      std::memcpy(At(addr), &v, sizeof v);
  }

  std::string Describe() const override { return "a synthetic image"; }
  const std::vector<procimage::ImageMapping>& Mappings() const override { return maps_; }
  const std::vector<procimage::ImageThread>& Threads() const override { return threads_; }
  const std::vector<procimage::ImageModule>& Modules() const override { return modules_; }
  size_t Read(uint64_t addr, void* out, size_t n) const override {
    size_t done = 0;
    while (done < n) {
      const procimage::ImageMapping* m = FindMapping(addr + done);
      if (m == nullptr) break;
      const size_t k = std::min<uint64_t>(n - done, m->end - (addr + done));
      std::memcpy(static_cast<uint8_t*>(out) + done, bytes_[m - maps_.data()].data() + (addr + done - m->start), k);
      done += k;
    }
    return done;
  }

 private:
  std::vector<procimage::ImageMapping> maps_;
  std::vector<std::vector<uint8_t>> bytes_;
  std::vector<procimage::ImageThread> threads_;
  std::vector<procimage::ImageModule> modules_;
};

}  // namespace libdump::heapwalk::testing
