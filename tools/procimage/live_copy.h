// A live process's memory copied once while it is stopped, so that the heap
// walk and the dump's payload reads that follow need not keep it stopped:
// the target is stopped only for one pass over its memory, as for gcore.
//
// The copy covers every readable mapping that is writable or anonymous (the
// heap, stacks, modules' data); what is left out (text, read-only data of
// files) does not change while the process runs and is read from it
// afterwards. The copy lives in an unlinked temporary file, mapped: page
// cache the kernel can write back and reclaim, not the tool's own memory,
// so a large process needs disk (or tmpfs) space rather than RAM.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "live_image.h"

namespace libdump::procimage {

class LiveCopy final : public ProcessImage {
 public:
  // Copies live's memory into a temporary file in dir, then lets live's
  // threads go. Throws LiveError (live let go) when dir takes no temporary
  // file; memory it could not copy (no space left, a mapping gone) is listed
  // by Damage().
  static std::unique_ptr<LiveCopy> Take(std::unique_ptr<LiveImage> live, const std::string& dir);
  ~LiveCopy() override;
  LiveCopy(const LiveCopy&) = delete;
  LiveCopy& operator=(const LiveCopy&) = delete;

  std::chrono::nanoseconds StoppedFor() const { return live_->StoppedFor(); }
  uint64_t CopiedBytes() const { return bytes_; }

  std::string Describe() const override { return live_->Describe(); }
  const std::vector<ImageMapping>& Mappings() const override { return live_->Mappings(); }
  const std::vector<ImageThread>& Threads() const override { return live_->Threads(); }
  const std::vector<ImageModule>& Modules() const override { return live_->Modules(); }
  size_t Read(uint64_t addr, void* out, size_t n) const override;
  int Pid() const override { return live_->Pid(); }
  std::string Command() const override { return live_->Command(); }
  std::vector<std::string> Damage() const override;

 private:
  explicit LiveCopy(std::unique_ptr<LiveImage> live) : live_(std::move(live)) {}
  void Copy(const std::string& dir);

  // One copied mapping: [start, start + copied) sits at offset in the file;
  // the rest of [start, end) could not be read.
  struct Region {
    uint64_t start, end, offset, copied;
  };
  std::unique_ptr<LiveImage> live_;
  std::vector<Region> regions_;  // by start
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  std::vector<std::string> damage_;
};

}  // namespace libdump::procimage
