// The calling process as a ProcessImage, read in place (process_vm_readv on
// itself), for the unwinder's tests: its mappings and modules from
// /proc/self/maps, one thread whose registers the caller captured.
#pragma once

#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "process_image.h"

namespace libdump::coretodump::testing {

class SelfImage final : public procimage::ProcessImage {
 public:
  // uc: registers from getcontext() in the frame to unwind from.
  explicit SelfImage(const ucontext_t& uc) {
    FILE* f = std::fopen("/proc/self/maps", "r");
    char line[4096];
    while (f != nullptr && std::fgets(line, sizeof line, f)) {
      unsigned long long start, end, off;
      char perms[8], path[4096] = "";
      if (std::sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &start, &end, perms, &off, path) < 4) continue;
      procimage::ImageMapping m;
      m.start = start;
      m.end = end;
      m.readable = perms[0] == 'r';
      m.writable = perms[1] == 'w';
      m.executable = perms[2] == 'x';
      m.path = path;
      m.file_offset = off;
      m.present = m.readable;
      maps_.push_back(m);
    }
    if (f != nullptr) std::fclose(f);
    std::map<std::string, procimage::ImageModule> mods;
    for (const auto& m : maps_) {
      if (m.path.empty() || m.path[0] != '/') continue;
      auto [it, fresh] = mods.try_emplace(m.path);
      procimage::ImageModule& mod = it->second;
      if (fresh) {
        mod.path = m.path;
        mod.file = m.path;
        mod.file_matches = true;
        mod.start = m.start;
        // Position-independent files link at 0: the first mapping is the bias.
        mod.load_bias = m.start;
      }
      mod.end = m.end;
    }
    for (auto& [path, mod] : mods) modules_.push_back(mod);
    procimage::ImageThread t;
    t.tid = gettid();
    // ucontext's gregs into user_regs_struct's order (r15 ... gs).
    const greg_t* g = uc.uc_mcontext.gregs;
    const int from[] = {REG_R15, REG_R14, REG_R13, REG_R12, REG_RBP, REG_RBX, REG_R11, REG_R10, REG_R9,
                        REG_R8,  REG_RAX, REG_RCX, REG_RDX, REG_RSI, REG_RDI};
    for (int i = 0; i < 15; ++i) t.regs[i] = static_cast<uint64_t>(g[from[i]]);
    t.regs[16] = static_cast<uint64_t>(g[REG_RIP]);
    t.regs[19] = static_cast<uint64_t>(g[REG_RSP]);
    threads_.push_back(t);
  }

  std::string Describe() const override { return "this process"; }
  const std::vector<procimage::ImageMapping>& Mappings() const override { return maps_; }
  const std::vector<procimage::ImageThread>& Threads() const override { return threads_; }
  const std::vector<procimage::ImageModule>& Modules() const override { return modules_; }
  size_t Read(uint64_t addr, void* out, size_t n) const override {
    iovec local{out, n}, remote{reinterpret_cast<void*>(addr), n};
    const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    return got < 0 ? 0 : static_cast<size_t>(got);
  }

 private:
  std::vector<procimage::ImageMapping> maps_;
  std::vector<procimage::ImageThread> threads_;
  std::vector<procimage::ImageModule> modules_;
};

}  // namespace libdump::coretodump::testing
