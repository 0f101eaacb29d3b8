#include "thread_unwinder.h"

#include <elfutils/libdwfl.h>

#include <cstdio>
#include <cstring>

#include "platform/capture/symbol_tables.h"

namespace libdump::coretodump {

namespace {

using procimage::ImageThread;

// user_regs_struct index of each x86-64 DWARF register 0..16 (rax, rdx, rcx,
// rbx, rsi, rdi, rbp, rsp, r8..r15, rip).
constexpr int kDwarfToUser[17] = {10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16};
constexpr unsigned kDwarfSp = 7;

ThreadUnwinder* Self(void* arg) { return static_cast<ThreadUnwinder*>(arg); }

pid_t NextThread(Dwfl*, void* arg, void** thread_argp) {
  ThreadUnwinder* u = Self(arg);
  if (u->next_thread >= u->threads().size()) return 0;
  const ImageThread& t = u->threads()[u->next_thread++];
  *thread_argp = const_cast<ImageThread*>(&t);
  return t.tid;
}

bool GetThread(Dwfl*, pid_t tid, void* arg, void** thread_argp) {
  for (const ImageThread& t : Self(arg)->threads()) {
    if (t.tid == tid) {
      *thread_argp = const_cast<ImageThread*>(&t);
      return true;
    }
  }
  return false;
}

bool MemoryRead(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
  return Self(arg)->image().ReadValue(addr, result);
}

bool SetInitialRegisters(Dwfl_Thread* thread, void* thread_arg) {
  const auto* t = static_cast<const ImageThread*>(thread_arg);
  Dwarf_Word regs[17];
  for (int i = 0; i < 17; ++i) regs[i] = t->regs[kDwarfToUser[i]];
  if (!dwfl_thread_state_registers(thread, 0, 17, regs)) return false;
  dwfl_thread_state_register_pc(thread, t->pc());
  return true;
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    .next_thread = NextThread,
    .get_thread = GetThread,
    .memory_read = MemoryRead,
    .set_initial_registers = SetInitialRegisters,
    .detach = nullptr,
    .thread_detach = nullptr,
};

struct FrameWalk {
  ThreadUnwinder* unwinder;
  std::vector<std::pair<uint64_t, uint64_t>>* frames;  // (sp, pc)
  size_t max;
};

int OnFrame(Dwfl_Frame* state, void* arg) {
  auto* w = static_cast<FrameWalk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  Dwarf_Word sp = 0;
  if (!dwfl_frame_pc(state, &pc, &activation) || dwfl_frame_reg(state, kDwarfSp, &sp) != 0) return DWARF_CB_ABORT;
  if (pc == 0) return DWARF_CB_ABORT;
  // A frame that does not move up the stack is a broken unwind: stop there.
  if (!w->frames->empty() && sp <= w->frames->back().first) return DWARF_CB_ABORT;
  w->frames->push_back({sp, pc});
  return w->frames->size() >= w->max ? DWARF_CB_ABORT : DWARF_CB_OK;
}

}  // namespace

ThreadUnwinder::ThreadUnwinder(const procimage::ProcessImage& image, UnwinderOptions options)
    : image_(image), options_(std::move(options)) {
  debuginfo_path_ = "+:.debug:/usr/lib/debug";
  if (!options_.debug_dir.empty()) debuginfo_path_ += ":" + options_.debug_dir;
  debuginfo_path_ptr_ = debuginfo_path_.data();
  auto* cb = new Dwfl_Callbacks{};
  cb->find_elf = dwfl_build_id_find_elf;
  cb->find_debuginfo = dwfl_standard_find_debuginfo;
  cb->section_address = dwfl_offline_section_address;
  cb->debuginfo_path = &debuginfo_path_ptr_;
  callbacks_ = cb;  // dwfl keeps a pointer to it
  dwfl_ = dwfl_begin(cb);
  if (dwfl_ == nullptr) return;
  dwfl_report_begin(dwfl_);
  int reported = 0;
  for (const procimage::ImageModule& m : image_.Modules()) {
    const std::string file = options_.module_file ? options_.module_file(m) : m.path;
    if (file.empty()) {
      problems_.push_back(m.path + ": no file to read, its frames are not unwound or named");
      continue;
    }
    if (dwfl_report_elf(dwfl_, m.path.c_str(), file.c_str(), -1, m.load_bias, false) == nullptr) {
      problems_.push_back(file + ": " + dwfl_errmsg(-1));
      continue;
    }
    ++reported;
  }
  dwfl_report_end(dwfl_, nullptr, nullptr);
  const pid_t pid = image_.Threads().empty() ? 1 : image_.Threads()[0].tid;
  attached_ = reported > 0 && dwfl_attach_state(dwfl_, nullptr, pid, &kThreadCallbacks, this);
}

ThreadUnwinder::~ThreadUnwinder() {
  if (dwfl_ != nullptr) dwfl_end(dwfl_);
  delete static_cast<Dwfl_Callbacks*>(callbacks_);
}

std::string ThreadUnwinder::NameOf(uint64_t pc, UnwoundFrame& f) {
  char buf[64];
  Dwfl_Module* mod = dwfl_ != nullptr ? dwfl_addrmodule(dwfl_, pc) : nullptr;
  if (mod != nullptr) {
    GElf_Off offset = 0;
    GElf_Sym sym;
    const char* name = dwfl_module_addrinfo(mod, pc, &offset, &sym, nullptr, nullptr, nullptr);
    if (name != nullptr) {
      // "__libc_start_main@@GLIBC_2.34": the version is not the function's name.
      f.symbol.assign(name, std::strcspn(name, "@"));
      f.entry = pc - offset;
      return capture::Demangle(f.symbol);
    }
  }
  if (const procimage::ImageModule* m = image_.FindModule(pc)) {
    std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(pc - m->load_bias));
    return m->path + buf;
  }
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(pc));
  return buf;
}

std::vector<UnwoundFrame> ThreadUnwinder::Unwind(const ImageThread& t) {
  std::vector<std::pair<uint64_t, uint64_t>> raw;
  if (t.sp() == 0) return {};
  if (attached_) {
    FrameWalk w{this, &raw, options_.max_frames};
    dwfl_getthread_frames(dwfl_, t.tid, OnFrame, &w);
  }
  // Without an unwind (no modules, no CFI for the top pc) the registers still
  // give the top frame, so the stack has a frame to attribute its roots to.
  if (raw.empty() || raw[0].first != t.sp()) raw.insert(raw.begin(), {t.sp(), t.pc()});
  std::vector<UnwoundFrame> out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (i > 0 && raw[i].first <= raw[i - 1].first) break;
    UnwoundFrame f;
    f.sp = raw[i].first;
    f.pc = raw[i].second;
    f.entry = f.pc;
    // Above the top frame pcs are return addresses: name the call itself.
    f.name = NameOf(f.pc - (i > 0 ? 1 : 0), f);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace libdump::coretodump
