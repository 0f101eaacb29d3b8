// A process image from a running process, stopped under ptrace while it is
// read: every thread seized and interrupted (PTRACE_SEIZE, PTRACE_INTERRUPT),
// registers from PTRACE_GETREGS, mappings from /proc/PID/maps, memory by
// process_vm_readv (or /proc/PID/mem). Every thread is let go when the image
// is destroyed or Detach() is called, and on every error path of Attach: the
// target is never left stopped by this process. A process that exits while
// it is read gives short reads; the caller finishes with what it has.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "process_image.h"

namespace libdump::procimage {

// "process 1234: no such process"; what() is the whole line.
class LiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LiveOptions {
  std::string executable;             // the executable's file, replacing its path
  std::vector<std::string> binaries;  // replacements matched by build-id
};

// The mappings of a /proc/PID/maps file, in its order (by address); false
// when it cannot be read.
bool ReadMapsFile(const std::string& path, std::vector<ImageMapping>* out);

class LiveImage final : public ProcessImage {
 public:
  // Stops every thread of pid. Throws LiveError, with every thread it had
  // stopped let go, when pid does not exist, may not be traced (EPERM) or is
  // already traced.
  static std::unique_ptr<LiveImage> Attach(int pid, const LiveOptions& options = {});
  ~LiveImage() override;
  LiveImage(const LiveImage&) = delete;
  LiveImage& operator=(const LiveImage&) = delete;

  // Lets every thread go now; later calls do nothing. Reads after it see the
  // running process.
  void Detach();
  bool attached() const { return attached_; }
  // How long the target has been stopped: from the first PTRACE_SEIZE to the
  // last PTRACE_DETACH (or to now while attached).
  std::chrono::nanoseconds StoppedFor() const;
  // The threads this image stopped, for DetachOnSignal (detach_on_signal.h).
  const std::vector<int>& StoppedThreads() const { return tids_; }

  std::string Describe() const override { return "process " + std::to_string(pid_); }
  const std::vector<ImageMapping>& Mappings() const override { return mappings_; }
  const std::vector<ImageThread>& Threads() const override { return threads_; }
  const std::vector<ImageModule>& Modules() const override { return modules_; }
  size_t Read(uint64_t addr, void* out, size_t n) const override;
  int Pid() const override { return pid_; }
  std::string Command() const override { return command_; }
  std::vector<std::string> Damage() const override { return damage_; }

 private:
  explicit LiveImage(int pid) : pid_(pid) {}
  void StopAll();
  void ReadThreads();
  void ReadMappings(const LiveOptions& options);
  [[noreturn]] void Fail(const std::string& what);

  int pid_;
  int mem_fd_ = -1;
  bool attached_ = false;
  bool parent_ = false;  // this process is the target's parent
  std::vector<int> tids_;     // seized, in the order they were
  std::vector<int> signals_;  // per tid: a signal it stopped with, given back at detach
  std::chrono::steady_clock::time_point stop_start_, stop_end_;
  std::vector<ImageMapping> mappings_;
  std::vector<ImageThread> threads_;
  std::vector<ImageModule> modules_;
  std::vector<std::string> damage_;
  std::string command_;
};

}  // namespace libdump::procimage
