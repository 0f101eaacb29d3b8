// An in-memory ProcessImage for tests: mappings with their bytes, threads
// and modules set by hand.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "process_image.h"

namespace libdump::coretodump::testing {

class FakeImage final : public procimage::ProcessImage {
 public:
  // Adds a mapping (kept by start address); present mappings hold zeros
  // until Put.
  procimage::ImageMapping& Map(uint64_t start, uint64_t end, const char* perms, std::string path = {},
                               bool present = true) {
    procimage::ImageMapping m;
    m.start = start;
    m.end = end;
    m.readable = perms[0] == 'r';
    m.writable = perms[1] == 'w';
    m.executable = perms[2] == 'x';
    m.path = std::move(path);
    m.present = present;
    auto it = std::upper_bound(maps_.begin(), maps_.end(), start,
                               [](uint64_t a, const procimage::ImageMapping& x) { return a < x.start; });
    const size_t i = static_cast<size_t>(it - maps_.begin());
    maps_.insert(it, m);
    bytes_.insert(bytes_.begin() + static_cast<ptrdiff_t>(i), std::string(present ? end - start : 0, '\0'));
    return maps_[i];
  }
  void Put(uint64_t addr, const void* p, size_t n) {
    for (size_t i = 0; i < maps_.size(); ++i) {
      if (addr >= maps_[i].start && addr + n <= maps_[i].end && maps_[i].present) {
        std::memcpy(bytes_[i].data() + (addr - maps_[i].start), p, n);
        return;
      }
    }
    throw std::logic_error("FakeImage::Put outside present memory");
  }
  void PutWord(uint64_t addr, uint64_t v) { Put(addr, &v, 8); }
  void PutString(uint64_t addr, const std::string& s) { Put(addr, s.c_str(), s.size() + 1); }

  std::vector<procimage::ImageThread> threads;
  std::vector<procimage::ImageModule> modules;

  std::string Describe() const override { return "fake image"; }
  const std::vector<procimage::ImageMapping>& Mappings() const override { return maps_; }
  const std::vector<procimage::ImageThread>& Threads() const override { return threads; }
  const std::vector<procimage::ImageModule>& Modules() const override { return modules; }
  size_t Read(uint64_t addr, void* out, size_t n) const override {
    size_t done = 0;
    while (done < n) {
      const procimage::ImageMapping* m = FindMapping(addr + done);
      if (m == nullptr || !m->present) break;
      const size_t i = static_cast<size_t>(m - maps_.data());
      const size_t k = std::min<uint64_t>(n - done, m->end - (addr + done));
      std::memcpy(static_cast<char*>(out) + done, bytes_[i].data() + (addr + done - m->start), k);
      done += k;
    }
    return done;
  }

 private:
  std::vector<procimage::ImageMapping> maps_;
  std::vector<std::string> bytes_;
};

}  // namespace libdump::coretodump::testing
