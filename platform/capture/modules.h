// Loaded modules (the executable and every shared object) as the dynamic
// loader reports them, captured before the world stops: afterwards nothing may
// call dl_iterate_phdr, whose lock a stopped thread may hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace libdump::capture {

struct Segment {
  uint64_t start = 0;  // absolute addresses
  uint64_t end = 0;
  uint64_t file_offset = 0;
  bool executable = false;
  bool writable = false;
};

struct Module {
  std::string path;      // as the loader knows it; the main executable resolved via /proc/self/exe
  uint64_t base = 0;     // load bias
  std::vector<Segment> segments;  // PT_LOAD
  uint64_t eh_frame_hdr = 0;      // PT_GNU_EH_FRAME, 0 if none
  uint64_t eh_frame_hdr_size = 0;
  std::string build_id;  // lower-case hex of NT_GNU_BUILD_ID, empty if none
  uint64_t relro_start = 0, relro_end = 0;  // PT_GNU_RELRO: read-only once relocated
};

// Lower-case hex of a build-id's bytes, at most its first 64 (a hostile
// note's length never makes a giant string); shared by the tools that read
// build-ids out of files and cores.
std::string BuildIdHex(const void* p, size_t n);

// Every module currently loaded.
std::vector<Module> LoadedModules();

// The module whose segments contain addr, or nullptr.
const Module* FindModule(const std::vector<Module>& modules, uint64_t addr);

}  // namespace libdump::capture
