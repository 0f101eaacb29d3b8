// A ProcessImage of the calling process at one instant, for the heap
// walkers' tests: every readable writable mapping (and libc's) is copied into
// memory obtained from a memfd, not from malloc, before anything is
// allocated, so what the walker allocates afterwards is not in what it walks.
// The test's other threads must not allocate while the copy is made.
#pragma once

#include <cstdint>
#include <vector>

#include "process_image.h"

namespace libdump::procimage::testing {

struct SnapshotThread {
  int tid = 0;
  uint64_t fs_base = 0;
  uint64_t sp = 0;
};

// The calling thread: its tid, its thread pointer and an address on its stack.
SnapshotThread ThisThread();

class SnapshotImage : public ProcessImage {
 public:
  explicit SnapshotImage(const std::vector<SnapshotThread>& threads);
  ~SnapshotImage() override;
  SnapshotImage(const SnapshotImage&) = delete;
  SnapshotImage& operator=(const SnapshotImage&) = delete;

  bool ok() const { return copy_ != nullptr; }
  std::string Describe() const override { return "a snapshot of this process"; }
  const std::vector<ImageMapping>& Mappings() const override { return mappings_; }
  const std::vector<ImageThread>& Threads() const override { return threads_; }
  const std::vector<ImageModule>& Modules() const override { return modules_; }
  size_t Read(uint64_t addr, void* out, size_t n) const override;

 private:
  struct Raw;
  std::vector<ImageMapping> mappings_;
  std::vector<const uint8_t*> copies_;  // per mapping, nullptr when not copied
  std::vector<ImageThread> threads_;
  std::vector<ImageModule> modules_;
  uint8_t* meta_ = nullptr;
  uint8_t* copy_ = nullptr;
  size_t meta_size_ = 0, copy_size_ = 0;
};

}  // namespace libdump::procimage::testing
