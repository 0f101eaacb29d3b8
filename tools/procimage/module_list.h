// The modules of an image: one per ELF file its mappings name, with the
// range, load bias and build-id the image shows, and the file on disk that
// matches it (for a core's left-out mappings and for symbols). Shared by the
// core and the live image, which differ only in where a file's bytes are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "process_image.h"

namespace libdump::procimage {

struct ModuleOptions {
  // The image's own bytes (never a file fallback): the headers the process
  // mapped, to learn the build-id the process ran with.
  std::function<size_t(uint64_t addr, void* out, size_t n)> read_image;
  // The file for a mapping's path, when it is not the path itself (a live
  // process's /proc/PID/map_files/START-END). Empty: the path.
  std::function<std::string(const ImageMapping&)> disk_path;
  uint64_t entry = 0;       // AT_ENTRY: the executable is the module holding it
  std::string command;      // comm, to find the executable when entry is 0
  std::string executable;   // the executable's file, replacing its path
  std::vector<std::string> binaries;  // replacements matched by build-id
  bool use_disk = true;     // false: no file on disk is read (the fuzz target)
};

struct ModuleList {
  std::vector<ImageModule> modules;  // by start address
  std::vector<std::string> damage;   // one line per module whose file is missing or differs
};

ModuleList BuildModules(const std::vector<ImageMapping>& mappings, const ModuleOptions& options);

}  // namespace libdump::procimage
