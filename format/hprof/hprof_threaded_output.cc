#include "libdump/format/hprof_threaded_output.h"

#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace libdump::format::hprof {

ThreadedFdOutput::ThreadedFdOutput(int fd) : fd_(fd), thread_([this] { Run(); }) {}

ThreadedFdOutput::~ThreadedFdOutput() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ThreadedFdOutput::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return busy_ || stop_; });
    if (!busy_) return;
    const uint8_t* p = data_;
    size_t n = n_;
    int error = error_;
    lock.unlock();
    while (n > 0 && error == 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno != EINTR) error = errno;
        continue;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    lock.lock();
    error_ = error;
    busy_ = false;
    cv_.notify_all();
  }
}

void ThreadedFdOutput::Wait(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [this] { return !busy_; });
  if (error_ != 0) throw std::system_error(error_, std::generic_category(), "write");
}

void ThreadedFdOutput::Sync() {
  std::unique_lock lock(mu_);
  Wait(lock);
}

void ThreadedFdOutput::Write(const uint8_t* data, size_t n) {
  std::unique_lock lock(mu_);
  Wait(lock);
  data_ = data;
  n_ = n;
  busy_ = true;
  cv_.notify_all();
}

void ThreadedFdOutput::WriteAt(uint64_t offset, const uint8_t* data, size_t n) {
  Sync();  // the bytes being rewritten may still be on their way
  FdOutput(fd_).WriteAt(offset, data, n);
}

}  // namespace libdump::format::hprof
