#include "samplers/unwind/dwarf_unwind.h"

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

#include "samplers/unwind/unwind_table.h"

extern "C" void* __libc_stack_end;  // glibc: the initial thread's stack top

namespace libdump::samplers {
namespace {

constexpr uintptr_t kPage = 4096;
// A frame larger than this is taken as a corrupt chain (code built without
// frame pointers uses rbp as a general register).
constexpr uintptr_t kMaxFrameSize = uintptr_t{1} << 20;
// The thread's own stack is trusted only this far above the stack pointer:
// glibc's default stack (RLIMIT_STACK, 8 MiB on Debian). A stack pointer
// further from the thread pointer is on some other stack (a fiber's).
constexpr uintptr_t kMaxTrusted = uintptr_t{8} << 20;
// CFA = rbp + 16, the caller's rbp at CFA - 16: the frame-pointer step.
constexpr UnwindRule kStandard{UnwindRule::kFp, 2, 16};

// Fallbacks are rare and counted process-wide; DWARF steps are common and
// counted per thread, so that no sample adds to a line every thread writes.
// initial-exec: the general TLS model may call __tls_get_addr, which can
// allocate, from a signal handler or the allocator.
std::atomic<uint64_t> g_no_rule{0}, g_unsupported{0}, g_unknown_module{0};
thread_local uint64_t t_dwarf_steps __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

StackReader::StackReader(uintptr_t sp) : lo_(sp), hi_(sp) {
#if defined(__x86_64__)
  uintptr_t tp;
  asm("mov %%fs:0, %0" : "=r"(tp));
#else
  const uintptr_t tp = 0;
#endif
  const uintptr_t main_top = reinterpret_cast<uintptr_t>(__libc_stack_end);
  if (sp < tp && tp - sp <= kMaxTrusted) {
    hi_ = tp;
  } else if (sp < main_top && main_top - sp <= kMaxTrusted) {
    hi_ = main_top;
  }
}

__attribute__((no_sanitize_address)) bool StackReader::ReadSlow(uintptr_t addr, uintptr_t* out) {
  if ((addr & (sizeof(uintptr_t) - 1)) != 0) return false;
  // Aligned: the word is inside one page. The first read in a page goes
  // through process_vm_readv, which fails with EFAULT instead of faulting;
  // later reads in the page are plain loads.
  const uintptr_t page = addr & ~(kPage - 1);
  if (page == verified_page_) {
    *out = *reinterpret_cast<const uintptr_t*>(addr);
    return true;
  }
  if (self_ == 0) self_ = getpid();  // not cached across calls: fork changes it
  iovec local{out, sizeof *out};
  iovec remote{reinterpret_cast<void*>(addr), sizeof *out};
  if (process_vm_readv(self_, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(sizeof *out)) return false;
  verified_page_ = page;
  return true;
}

size_t UnwindStack(uintptr_t pc, uintptr_t sp, uintptr_t fp, bool exact_pc, const UnwindPolicy& policy,
                   StackReader& reader, uintptr_t* out, size_t max, UnwindEnd* end) {
  UnwindEnd ignored;
  if (end == nullptr) end = &ignored;
  *end = UnwindEnd::kFull;
  size_t n = 0, lookups = policy.max_lookups;
  UnwindTables::Reader pin(false);  // pinned at the first lookup, for the rest of the walk
  while (n < max) {
    if (lookups == 0) {
      // Past the frames that take rules: the frame-pointer chain, one
      // record per frame, each above the last and less than 1 MiB away.
      while (n < max) {
        uintptr_t ra, caller_fp;
        if (fp < sp || fp - sp > kMaxFrameSize || !reader.ReadRecord(fp, &caller_fp, &ra) || ra < kPage) {
          *end = UnwindEnd::kBroken;
          return n;
        }
        out[n++] = ra;
        if (caller_fp == 0) {
          *end = UnwindEnd::kOutermost;  // glibc starts threads with rbp 0
          return n;
        }
        sp = fp + 16;
        fp = caller_fp;
      }
      return n;
    }
    --lookups;
    const UnwindLookup l = UnwindTables::CachedLookup(exact_pc ? pc : pc - 1, pin);
    UnwindRule rule = l.rule;
    switch (l.rule.kind) {
      case UnwindRule::kSp:
      case UnwindRule::kFp:
      case UnwindRule::kPlt:
        break;
      case UnwindRule::kEnd:
        *end = UnwindEnd::kOutermost;
        return n;
      case UnwindRule::kNone:
        (l.module_known ? g_no_rule : g_unknown_module).fetch_add(1, std::memory_order_relaxed);
        rule = kStandard;  // the frame-pointer step, then the chain
        lookups = 0;
        break;
      default:
        g_unsupported.fetch_add(1, std::memory_order_relaxed);
        rule = kStandard;
        lookups = 0;
        break;
    }
    if (rule.StandardFrame()) {
      // The frame-pointer step: one record, two words.
      if (policy.stop_at_standard_frame) lookups = 0;
      uintptr_t ra, caller_fp;
      if (fp < sp || fp - sp > kMaxFrameSize || !reader.ReadRecord(fp, &caller_fp, &ra) || ra < kPage) {
        *end = UnwindEnd::kBroken;
        return n;
      }
      out[n++] = ra;
      if (caller_fp == 0) {
        *end = UnwindEnd::kOutermost;  // glibc starts threads with rbp 0
        return n;
      }
      pc = ra;
      sp = fp + 16;
      fp = caller_fp;
      exact_pc = false;
      continue;
    }
    uintptr_t cfa;
    switch (rule.kind) {
      case UnwindRule::kSp: cfa = sp + rule.cfa; break;
      case UnwindRule::kPlt: cfa = sp + 8 + ((pc & 15) >= rule.cfa ? 8 : 0); break;
      default: cfa = fp + rule.cfa; break;
    }
    // The caller's frame sits strictly above this one, not far away; with
    // the standard rule, fp is this frame's base, at or above sp.
    if (cfa <= sp || cfa - sp > kMaxFrameSize || (rule.kind == UnwindRule::kFp && fp < sp)) {
      *end = UnwindEnd::kBroken;
      return n;
    }
    uintptr_t ra, caller_fp = fp;
    if (!reader.Read(cfa - 8, &ra)) {
      *end = UnwindEnd::kBroken;
      return n;
    }
    if (rule.kind != UnwindRule::kPlt && rule.fp_slot != UnwindRule::kFpSame) {
      if (rule.fp_slot == UnwindRule::kFpLost || !reader.Read(cfa - 8 * uintptr_t{rule.fp_slot}, &caller_fp)) {
        caller_fp = 0;  // the chain cannot continue; rules may
      }
    }
    if (ra < kPage) {  // not a return address: a record that was never one
      *end = UnwindEnd::kBroken;
      return n;
    }
    ++t_dwarf_steps;
    out[n++] = ra;
    pc = ra;
    sp = cfa;
    fp = caller_fp;
    exact_pc = false;
  }
  return n;
}

DwarfUnwindStats GetDwarfUnwindStats() {
  return {t_dwarf_steps, g_no_rule.load(std::memory_order_relaxed),
          g_unsupported.load(std::memory_order_relaxed), g_unknown_module.load(std::memory_order_relaxed)};
}

}  // namespace libdump::samplers
