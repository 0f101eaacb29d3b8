// An hprof Output that writes to a file descriptor on a thread of its own, so
// that the converter fills the next buffer while the kernel copies the last
// one (writing a 1 GB file costs about as much CPU as converting it).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#include "libdump/format/hprof_writer.h"

namespace libdump::format::hprof {

class ThreadedFdOutput final : public Output {
 public:
  // The caller keeps fd open until this is destroyed.
  explicit ThreadedFdOutput(int fd);
  // Waits for the last write; its error, if any, is lost (Sync() first).
  ~ThreadedFdOutput() override;
  ThreadedFdOutput(const ThreadedFdOutput&) = delete;
  ThreadedFdOutput& operator=(const ThreadedFdOutput&) = delete;

  // Waits for the previous write (throwing its error), then starts this one
  // and returns: data must stay unchanged until the next call.
  void Write(const uint8_t* data, size_t n) override;
  void WriteAt(uint64_t offset, const uint8_t* data, size_t n) override;
  // Throws std::system_error for the first failed write.
  void Sync() override;

 private:
  void Run();
  void Wait(std::unique_lock<std::mutex>& lock);

  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  const uint8_t* data_ = nullptr;  // the write in progress
  size_t n_ = 0;
  bool busy_ = false;
  bool stop_ = false;
  int error_ = 0;  // errno of the first failed write
  std::thread thread_;
};

}  // namespace libdump::format::hprof
