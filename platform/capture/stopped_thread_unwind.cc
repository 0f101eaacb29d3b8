#include "platform/capture/stopped_thread_unwind.h"

#include <dlfcn.h>
#include <libunwind.h>

#include <algorithm>
#include <cstring>

// Exported by libunwind for its remote unwinders (libunwind-ptrace and
// libunwind-coredump call it the same way) but not declared in its headers.
extern "C" int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
                                                  unw_dyn_info_t* di, unw_proc_info_t* pi,
                                                  int need_unwind_info, void* arg);

namespace libdump::capture {

namespace {

// libunwind's remote interface, opened when the first unwinder is made
// rather than linked: a process that preloads libdump.so and never dumps,
// nearly every one, then loads neither libunwind nor the liblzma it needs at
// each exec. The unw_* names are macros for the _Ux86_64_* symbols.
struct UnwindApi {
  decltype(&unw_create_addr_space) create_addr_space;
  decltype(&unw_set_caching_policy) set_caching_policy;
  decltype(&unw_destroy_addr_space) destroy_addr_space;
  decltype(&unw_init_remote) init_remote;
  decltype(&unw_get_reg) get_reg;
  decltype(&unw_get_proc_info) get_proc_info;
  decltype(&unw_step) step;
  decltype(&_Ux86_64_dwarf_search_unwind_table) dwarf_search_unwind_table;
};

#define LIBDUMP_SYMBOL_NAME(macro) LIBDUMP_SYMBOL_NAME_OF(macro)
#define LIBDUMP_SYMBOL_NAME_OF(name) #name

template <typename F>
bool Bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  return *fn != nullptr;
}

// Opened once and never closed; null if libunwind is missing.
const UnwindApi* UnwindLibrary() {
  static const UnwindApi* const api = []() -> const UnwindApi* {
    void* lib = dlopen("libunwind-x86_64.so.8", RTLD_NOW | RTLD_LOCAL);
    static UnwindApi u;
    const bool ok =
        lib != nullptr && Bind(lib, LIBDUMP_SYMBOL_NAME(unw_create_addr_space), &u.create_addr_space) &&
        Bind(lib, LIBDUMP_SYMBOL_NAME(unw_set_caching_policy), &u.set_caching_policy) &&
        Bind(lib, LIBDUMP_SYMBOL_NAME(unw_destroy_addr_space), &u.destroy_addr_space) &&
        Bind(lib, LIBDUMP_SYMBOL_NAME(unw_init_remote), &u.init_remote) &&
        Bind(lib, LIBDUMP_SYMBOL_NAME(unw_get_reg), &u.get_reg) &&
        Bind(lib, LIBDUMP_SYMBOL_NAME(unw_get_proc_info), &u.get_proc_info) &&
        Bind(lib, LIBDUMP_SYMBOL_NAME(unw_step), &u.step) &&
        Bind(lib, "_Ux86_64_dwarf_search_unwind_table", &u.dwarf_search_unwind_table);
    return ok ? &u : nullptr;
  }();
  return api;
}

}  // namespace

void OpenUnwindLibrary() { UnwindLibrary(); }

namespace {

// Where a module's .eh_frame_hdr binary-search table lives.
struct UnwindTable {
  uint64_t text_start = 0, text_end = 0;
  uint64_t hdr = 0;        // the .eh_frame_hdr section: segbase for datarel entries
  uint64_t table = 0;      // first (initial location, FDE) pair
  uint64_t fde_count = 0;
};

constexpr uint8_t kPeOmit = 0xff, kPeUdata4 = 0x03, kPeSdata4 = 0x0b, kPePcrel = 0x10,
                  kPeDatarel = 0x30, kPeAbsptr = 0x00, kPeUdata8 = 0x04;

// Decodes the two encoded header fields (eh_frame_ptr, fde_count) of the formats
// linkers emit; anything else leaves the module without a table.
bool ReadEncoded(const MemoryMap& mem, uint64_t& p, uint8_t enc, uint64_t hdr, uint64_t* out) {
  if (enc == kPeOmit) return false;
  const uint64_t at = p;
  uint64_t v;
  switch (enc & 0x0f) {
    case kPeUdata4: case kPeSdata4: {
      if (!mem.Readable(p, 4)) return false;
      int32_t s; uint32_t u;
      std::memcpy(&u, reinterpret_cast<const void*>(p), 4);
      std::memcpy(&s, reinterpret_cast<const void*>(p), 4);
      v = (enc & 0x0f) == kPeSdata4 ? static_cast<uint64_t>(static_cast<int64_t>(s)) : u;
      p += 4;
      break;
    }
    case kPeAbsptr: case kPeUdata8:
      if (!mem.Readable(p, 8)) return false;
      std::memcpy(&v, reinterpret_cast<const void*>(p), 8);
      p += 8;
      break;
    default:
      return false;
  }
  switch (enc & 0x70) {
    case 0: break;
    case kPePcrel: v += at; break;
    case kPeDatarel: v += hdr; break;
    default: return false;
  }
  *out = v;
  return true;
}

bool TableFor(const Module& m, const MemoryMap& mem, UnwindTable* t) {
  if (m.eh_frame_hdr == 0 || !mem.Readable(m.eh_frame_hdr, 4)) return false;
  const auto* h = reinterpret_cast<const uint8_t*>(m.eh_frame_hdr);
  // version 1; the search table must be datarel sdata4 pairs for binary search.
  if (h[0] != 1 || h[3] != (kPeDatarel | kPeSdata4)) return false;
  uint64_t p = m.eh_frame_hdr + 4, eh_frame = 0, count = 0;
  if (!ReadEncoded(mem, p, h[1], m.eh_frame_hdr, &eh_frame)) return false;
  if (!ReadEncoded(mem, p, h[2], m.eh_frame_hdr, &count)) return false;
  t->hdr = m.eh_frame_hdr;
  t->table = p;
  t->fde_count = count;
  t->text_start = ~0ull;
  t->text_end = 0;
  for (const Segment& s : m.segments) {
    if (!s.executable) continue;
    t->text_start = std::min(t->text_start, s.start);
    t->text_end = std::max(t->text_end, s.end);
  }
  return t->text_end > t->text_start;
}

}  // namespace

struct StackUnwinder::Impl {
  const UnwindApi* unw = nullptr;  // null: libunwind is missing, no frames
  const MemoryMap* memory;
  std::vector<UnwindTable> tables;
  unw_addr_space_t as = nullptr;
  const greg_t* regs = nullptr;  // the context being unwound

  const UnwindTable* TableFor(uint64_t ip) const {
    for (const UnwindTable& t : tables) {
      if (ip >= t.text_start && ip < t.text_end) return &t;
    }
    return nullptr;
  }
};

namespace {

using Impl = StackUnwinder::Impl;

int FindProcInfo(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need_unwind_info,
                 void* arg) {
  auto* impl = static_cast<Impl*>(arg);
  const UnwindTable* t = impl->TableFor(ip);
  if (t == nullptr) return -UNW_ENOINFO;
  unw_dyn_info_t di;
  std::memset(&di, 0, sizeof di);
  di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
  di.start_ip = t->text_start;
  di.end_ip = t->text_end;
  di.u.rti.segbase = t->hdr;
  di.u.rti.table_data = t->table;
  di.u.rti.table_len = t->fde_count * 8 / sizeof(unw_word_t);  // in words, as libunwind counts
  return impl->unw->dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

// libunwind frees the table-format unwind info it hands out itself.
void PutUnwindInfo(unw_addr_space_t, unw_proc_info_t*, void*) {}

int GetDynInfoListAddr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

int AccessMem(unw_addr_space_t, unw_word_t addr, unw_word_t* val, int write, void* arg) {
  auto* impl = static_cast<Impl*>(arg);
  if (write || !impl->memory->Readable(addr, sizeof(unw_word_t))) return -UNW_EINVAL;
  std::memcpy(val, reinterpret_cast<const void*>(addr), sizeof *val);
  return 0;
}

// libunwind's x86-64 register numbers, in order, as indices into gregs.
constexpr int kGregOf[] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                           REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                           REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

int AccessReg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* val, int write, void* arg) {
  auto* impl = static_cast<Impl*>(arg);
  if (write || reg < 0 || reg > UNW_X86_64_RIP) return -UNW_EBADREG;
  *val = static_cast<unw_word_t>(impl->regs[kGregOf[reg]]);
  return 0;
}

int AccessFpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EBADREG; }
int Resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }
int GetProcName(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) {
  return -UNW_ENOINFO;  // names come from the symbolizer, outside the stop
}

}  // namespace

StackUnwinder::StackUnwinder(const std::vector<Module>& modules, const MemoryMap& memory)
    : impl_(new Impl) {
  impl_->unw = UnwindLibrary();
  if (impl_->unw == nullptr) return;
  impl_->memory = &memory;
  for (const Module& m : modules) {
    UnwindTable t;
    if (capture::TableFor(m, memory, &t)) impl_->tables.push_back(t);
  }
  unw_accessors_t acc;
  std::memset(&acc, 0, sizeof acc);
  acc.find_proc_info = FindProcInfo;
  acc.put_unwind_info = PutUnwindInfo;
  acc.get_dyn_info_list_addr = GetDynInfoListAddr;
  acc.access_mem = AccessMem;
  acc.access_reg = AccessReg;
  acc.access_fpreg = AccessFpreg;
  acc.resume = Resume;
  acc.get_proc_name = GetProcName;
  impl_->as = impl_->unw->create_addr_space(&acc, 0);
  // No cache: libunwind's caches take locks.
  if (impl_->as != nullptr) impl_->unw->set_caching_policy(impl_->as, UNW_CACHE_NONE);
}

StackUnwinder::~StackUnwinder() {
  if (impl_->as != nullptr) impl_->unw->destroy_addr_space(impl_->as);
  delete impl_;
}

size_t StackUnwinder::Unwind(const greg_t* regs, UnwoundFrame* out, size_t max) {
  if (impl_->as == nullptr || max == 0) return 0;
  impl_->regs = regs;
  const UnwindApi* unw = impl_->unw;
  unw_cursor_t cursor;
  if (unw->init_remote(&cursor, impl_->as, impl_) != 0) return 0;
  size_t n = 0;
  do {
    unw_word_t ip = 0, sp = 0;
    unw->get_reg(&cursor, UNW_REG_IP, &ip);
    unw->get_reg(&cursor, UNW_REG_SP, &sp);
    if (ip == 0) break;
    if (n > 0 && sp <= out[n - 1].sp) break;  // stacks grow down: a frame never repeats
    unw_proc_info_t pi;
    out[n] = {sp, ip, unw->get_proc_info(&cursor, &pi) == 0 ? pi.start_ip : 0};
    ++n;
  } while (n < max && unw->step(&cursor) > 0);
  return n;
}

}  // namespace libdump::capture
