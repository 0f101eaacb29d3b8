// A process's memory, threads and modules as a heap walker and the dump
// emitter see them, whether they come from an ELF core file or from a live
// process stopped under ptrace. Everything downstream (heap walkers, the
// dump emitter) reads through this interface only, so a new source of images
// needs no change there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace libdump::procimage {

// One mapping of the address space (a PT_LOAD of the core, a line of
// /proc/PID/maps).
struct ImageMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  bool readable = false, writable = false, executable = false;
  // File and offset it maps (NT_FILE, /proc/PID/maps); empty for anonymous.
  std::string path;
  uint64_t file_offset = 0;
  // The bytes of [start, end) can be read: dumped in the core (p_filesz
  // covers them), readable in the live process, or read from the mapped file
  // when the core left out an unmodified file-backed mapping.
  bool present = false;
  // The kernel's names for special mappings: "[stack]", "[heap]", "[vdso]".
  bool IsAnonymous() const { return path.empty() || path[0] == '['; }
};

// x86-64 registers in the order of the kernel's user_regs_struct (r15 ... gs),
// as NT_PRSTATUS and PTRACE_GETREGS give them.
struct ImageThread {
  int tid = 0;
  std::string name;  // comm, when known (NT_PRPSINFO for the first thread, /proc/PID/task/TID/comm)
  uint64_t regs[27] = {};
  uint64_t pc() const { return regs[16]; }       // rip
  uint64_t sp() const { return regs[19]; }       // rsp
  uint64_t fs_base() const { return regs[21]; }  // the thread pointer: glibc's TCB
};

// An ELF file mapped into the image: the executable and each shared object.
struct ImageModule {
  std::string path;
  uint64_t start = 0;        // lowest mapped address of the file
  uint64_t end = 0;          // highest mapped address of the file
  uint64_t load_bias = 0;    // start less the link-time address of that mapping
  std::string build_id;      // lower-case hex of NT_GNU_BUILD_ID, empty if unknown
  // The file on disk matches what the image mapped (same build-id, or no
  // build-id on either side); false when it is missing or differs.
  bool file_matches = false;
  // The file on disk that matched: path itself, or a replacement given for
  // it (a --binary FILE of the same build-id, an explicit executable), or
  // /proc/PID/map_files/... for a live process whose file was replaced.
  // Empty when none matched. Read it for symbols and DWARF.
  std::string file;
  bool executable = false;  // the program's own file (it holds AT_ENTRY)
};

class ProcessImage {
 public:
  virtual ~ProcessImage() = default;

  // "core file core.1234", "process 1234": for messages.
  virtual std::string Describe() const = 0;
  virtual const std::vector<ImageMapping>& Mappings() const = 0;  // by start address
  virtual const std::vector<ImageThread>& Threads() const = 0;
  virtual const std::vector<ImageModule>& Modules() const = 0;

  // Copies up to n bytes at addr into out and returns how many it copied:
  // fewer when the range leaves present memory. Never throws.
  virtual size_t Read(uint64_t addr, void* out, size_t n) const = 0;

  // The process's id and command name (comm) when the image knows them.
  virtual int Pid() const { return 0; }
  virtual std::string Command() const { return {}; }
  // What the image could not read, one line each ("core.1234:1048576: PT_LOAD
  // of 0x7f..-0x7f.. past the end of the file"), for the caller to print.
  virtual std::vector<std::string> Damage() const { return {}; }

  // The mapping containing addr, or nullptr.
  const ImageMapping* FindMapping(uint64_t addr) const;
  // The module whose file range contains addr, or nullptr.
  const ImageModule* FindModule(uint64_t addr) const;
  // Reads a whole value; false if any byte is missing.
  template <class T>
  bool ReadValue(uint64_t addr, T* out) const { return Read(addr, out, sizeof(T)) == sizeof(T); }
};

}  // namespace libdump::procimage
