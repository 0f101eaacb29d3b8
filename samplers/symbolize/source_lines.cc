#include "samplers/symbolize/source_lines.h"

#include <dwarf.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <unistd.h>

namespace libdump::samplers {
namespace {

// The name of an inlined subroutine is on its abstract origin.
std::string InlinedName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name}) {
    if (dwarf_attr_integrate(die, at, &attr) != nullptr) {
      if (const char* s = dwarf_formstring(&attr)) return s;
    }
  }
  return "";
}

// The file a DW_AT_call_file index names in the unit's line table.
std::string CallFile(Dwarf_Die* cu, Dwarf_Die* inlined) {
  Dwarf_Attribute attr;
  Dwarf_Word index;
  if (dwarf_attr(inlined, DW_AT_call_file, &attr) == nullptr || dwarf_formudata(&attr, &index) != 0) return "";
  Dwarf_Files* files;
  size_t n;
  if (dwarf_getsrcfiles(cu, &files, &n) != 0 || index >= n) return "";
  const char* f = dwarf_filesrc(files, index, nullptr, nullptr);
  return f != nullptr ? f : "";
}

int64_t CallLine(Dwarf_Die* inlined) {
  Dwarf_Attribute attr;
  Dwarf_Word line;
  if (dwarf_attr(inlined, DW_AT_call_line, &attr) == nullptr || dwarf_formudata(&attr, &line) != 0) return 0;
  return static_cast<int64_t>(line);
}

// elfutils opens the modules and their debug files without O_CLOEXEC: mark
// them as they come, so a program that forks and execs while a profile is
// symbolized does not pass them on.
int CloseOnExec(int fd) {
  if (fd >= 0) fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
  return fd;
}

int FindElf(Dwfl_Module* mod, void** userdata, const char* name, Dwarf_Addr base, char** file_name, Elf** elfp) {
  return CloseOnExec(dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp));
}

int FindDebuginfo(Dwfl_Module* mod, void** userdata, const char* name, Dwarf_Addr base, const char* file_name,
                  const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  return CloseOnExec(dwfl_standard_find_debuginfo(mod, userdata, name, base, file_name, debuglink_file, debuglink_crc,
                                                  debuginfo_file_name));
}

}  // namespace

SourceLines::SourceLines() {
  static const Dwfl_Callbacks kCallbacks = {
      .find_elf = FindElf,
      .find_debuginfo = FindDebuginfo,
      .section_address = nullptr,
      .debuginfo_path = nullptr,
  };
  dwfl_ = dwfl_begin(&kCallbacks);
  if (dwfl_ == nullptr) return;
  if (dwfl_linux_proc_report(dwfl_, getpid()) != 0 || dwfl_report_end(dwfl_, nullptr, nullptr) != 0) {
    dwfl_end(dwfl_);
    dwfl_ = nullptr;
  }
}

SourceLines::~SourceLines() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
}

std::vector<SourceFrame> SourceLines::Lookup(uintptr_t addr) {
  std::vector<SourceFrame> frames;
  if (dwfl_ == nullptr) return frames;
  Dwfl_Module* mod = dwfl_addrmodule(dwfl_, addr);
  if (mod == nullptr) return frames;
  Dwfl_Line* l = dwfl_module_getsrc(mod, addr);
  if (l == nullptr) return frames;
  int line = 0;
  const char* file = dwfl_lineinfo(l, nullptr, &line, nullptr, nullptr, nullptr);
  SourceFrame cur{"", file != nullptr ? file : "", line};
  // The line table names the innermost inlined body; each enclosing
  // inlined_subroutine scope says where it was called from.
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, addr, &bias);
  Dwarf_Die* scopes = nullptr;
  const int n = cu != nullptr ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;
  for (int i = 0; i < n; ++i) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    cur.function = InlinedName(&scopes[i]);
    frames.push_back(cur);
    cur = SourceFrame{"", CallFile(cu, &scopes[i]), CallLine(&scopes[i])};
  }
  free(scopes);
  frames.push_back(cur);
  return frames;
}

}  // namespace libdump::samplers
