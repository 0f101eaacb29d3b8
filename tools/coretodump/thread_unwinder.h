// Unwinds the threads of a process image with elfutils' libdwfl: the
// modules are reported from their files on disk and the thread state comes
// from the image (registers of NT_PRSTATUS or PTRACE_GETREGS, memory through
// ProcessImage::Read), so cores and stopped live processes unwind alike.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "process_image.h"

struct Dwfl;  // elfutils' libdwfl

namespace libdump::coretodump {

struct UnwoundFrame {
  uint64_t sp = 0;     // the frame's stack pointer (the caller's CFA above the top frame)
  uint64_t pc = 0;     // where it is suspended (a return address above the top frame)
  uint64_t entry = 0;  // start of its function, pc when unknown
  std::string name;    // demangled, or "MODULE+0xOFFSET", or "0xPC"
  std::string symbol;  // the mangled symbol, empty when unknown
};

struct UnwinderOptions {
  // Extra directories for separate debug files (dwfl's debuginfo_path:
  // "+:/usr/lib/debug" plus these).
  std::string debug_dir;
  // The file to read for a module, "" when there is none: the module's own
  // path unless --binary names another.
  std::function<std::string(const procimage::ImageModule&)> module_file;
  size_t max_frames = 512;
};

class ThreadUnwinder {
 public:
  ThreadUnwinder(const procimage::ProcessImage& image, UnwinderOptions options);
  ~ThreadUnwinder();
  ThreadUnwinder(const ThreadUnwinder&) = delete;
  ThreadUnwinder& operator=(const ThreadUnwinder&) = delete;

  // The frames of one thread, top first, sp strictly increasing. At least
  // the top frame (from the registers) when sp is not 0.
  std::vector<UnwoundFrame> Unwind(const procimage::ImageThread& t);
  // Modules whose file could not be reported (missing, not ELF), one line each.
  const std::vector<std::string>& problems() const { return problems_; }

  // For libdwfl's callbacks.
  const procimage::ProcessImage& image() const { return image_; }
  const std::vector<procimage::ImageThread>& threads() const { return image_.Threads(); }
  size_t next_thread = 0;

 private:
  std::string NameOf(uint64_t pc, UnwoundFrame& f);

  const procimage::ProcessImage& image_;
  UnwinderOptions options_;
  std::string debuginfo_path_;
  char* debuginfo_path_ptr_ = nullptr;
  void* callbacks_ = nullptr;  // Dwfl_Callbacks, which has no tag to declare
  ::Dwfl* dwfl_ = nullptr;
  bool attached_ = false;
  std::vector<std::string> problems_;
};

}  // namespace libdump::coretodump
