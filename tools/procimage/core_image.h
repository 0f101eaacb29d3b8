// A process image from an x86-64 ELF core file (the kernel's, or gdb's
// gcore). The file is mapped read-only and read in place (large reads by
// pread): a core of any size costs its page cache, not the heap. Mappings are its PT_LOADs and NT_FILE
// entries, threads its NT_PRSTATUS notes; memory the core left out of
// file-backed mappings (the kernel and gcore omit unmodified ones) is read
// from the mapped file when its build-id is the one the core recorded.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "process_image.h"

namespace libdump::procimage {

// A file that is not a core this reader takes: "core.1234:18: e_machine is
// 183 (AArch64), not x86-64 (62)". what() is the whole line.
class CoreError : public std::runtime_error {
 public:
  CoreError(const std::string& file, uint64_t offset, const std::string& what);
  uint64_t offset() const { return offset_; }

 private:
  uint64_t offset_;
};

struct CoreOptions {
  // The executable's file, when it is not at the path the core names (a core
  // from another machine, a rebuilt tree). Its build-id is still checked.
  std::string executable;
  // Replacement files (--binary FILE), each used for the module of its
  // build-id.
  std::vector<std::string> binaries;
  // false: no file on disk is opened (the fuzz target, which must not read
  // the host's files a hostile core names).
  bool use_disk = true;
};

class CoreImage final : public ProcessImage {
 public:
  // Throws CoreError when the file is not a core of an x86-64 process (or
  // cannot be read). A truncated core opens: what is past the end is absent
  // and listed in Damage().
  static std::unique_ptr<CoreImage> Open(const std::string& path, const CoreOptions& options = {});
  // The same over bytes in memory, named `name` in messages.
  static std::unique_ptr<CoreImage> FromBytes(const std::string& name, std::string bytes, const CoreOptions& options = {});
  ~CoreImage() override;
  CoreImage(const CoreImage&) = delete;
  CoreImage& operator=(const CoreImage&) = delete;

  std::string Describe() const override { return "core file " + name_; }
  const std::vector<ImageMapping>& Mappings() const override { return mappings_; }
  const std::vector<ImageThread>& Threads() const override { return threads_; }
  const std::vector<ImageModule>& Modules() const override { return modules_; }
  size_t Read(uint64_t addr, void* out, size_t n) const override;
  int Pid() const override { return pid_; }
  std::string Command() const override { return command_; }
  std::vector<std::string> Damage() const override { return damage_; }

  // The command line NT_PRPSINFO keeps (its first 80 bytes).
  const std::string& Arguments() const { return arguments_; }

 private:
  // A PT_LOAD: `held` bytes from `offset` are in the file (less than filesz
  // when the file is truncated).
  struct Segment {
    uint64_t vaddr = 0, memsz = 0, offset = 0, held = 0;
  };

  struct Load {
    Segment segment;
    bool readable, writable, executable;
  };

  CoreImage(std::string name, const CoreOptions& options);
  void Parse();
  void BuildMappings(std::vector<ImageMapping> files, std::vector<Load> loads);
  // Sets the executable bit of file mappings the core gave no flags for
  // from the module's file.
  void TakeFlagsFromFiles();
  void OpenFiles();
  size_t ReadCore(uint64_t addr, void* out, size_t n) const;
  size_t ReadFile(size_t mapping, uint64_t addr, void* out, size_t n) const;
  std::string At(uint64_t offset) const;  // "NAME:OFFSET"

  std::string name_;
  CoreOptions options_;
  std::string owned_;  // FromBytes's bytes
  int core_fd_ = -1;   // Open's file, for large reads
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;

  std::vector<Segment> segments_;  // by vaddr, disjoint
  std::vector<ImageMapping> mappings_;
  std::vector<int> mapping_fd_;  // per mapping: the matching file to read left-out bytes from, or -1
  std::vector<int> fds_;         // the files opened, closed by the destructor
  std::vector<ImageThread> threads_;
  std::vector<ImageModule> modules_;
  std::vector<std::string> damage_;
  int pid_ = 0;
  std::string command_, arguments_;
};

}  // namespace libdump::procimage
