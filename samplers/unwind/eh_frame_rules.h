// The unwind rules of x86-64 code as its modules' .eh_frame states them,
// reduced to what a signal handler needs to step one frame, and the parser
// that reads them out of a module's mapped image (ahead of time: it
// allocates and is not async-signal-safe). The CFI subset x86-64 compilers
// emit is small (docs/PROFILING.md).
//
// A rule says where the caller's registers are at a pc (x86-64):
//   CFA = rsp or rbp + offset; the return address at CFA - 8; the caller's
//   rbp unchanged or saved at CFA - 8k; the caller's rsp = CFA.
#pragma once

#include <cstdint>
#include <vector>

namespace libdump::samplers {

struct UnwindRule {
  enum Kind : uint8_t {
    kNone = 0,     // no FDE covers the pc (a gap, code without CFI)
    kUnsupported,  // a rule this table cannot express (an expression, another register)
    kSp,           // CFA = rsp + cfa
    kFp,           // CFA = rbp + cfa
    kPlt,          // a PLT entry: CFA = rsp + 8, + 8 when (pc & 15) >= cfa
    kEnd,          // the return address is undefined: the outermost frame (_start, clone)
  };
  static constexpr uint8_t kFpSame = 0;   // the caller's rbp is rbp
  static constexpr uint8_t kFpLost = 255;  // the caller's rbp cannot be found
  uint8_t kind = kNone;
  uint8_t fp_slot = kFpSame;  // else: saved at CFA - 8 * fp_slot
  uint16_t cfa = 0;           // CFA offset in bytes (kSp, kFp)
  bool StandardFrame() const { return kind == kFp && cfa == 16 && fp_slot == 2; }
};

// One module's rules, parsed from its .eh_frame_hdr (and the .eh_frame it
// points to) already mapped in memory: (pc, rule) in increasing pc order,
// absolute pcs. Reads only inside the readable ranges given (the module's
// loaded segments): a malformed table ends the parse, never the process.
// Returns false if the header is missing or malformed. For the builder and
// tests; not async-signal-safe.
struct UnwindRange {
  uintptr_t lo, hi;
};
struct UnwindRow {
  uintptr_t pc;
  UnwindRule rule;
};
bool ParseModuleUnwindRows(uintptr_t eh_frame_hdr, const std::vector<UnwindRange>& readable,
                           std::vector<UnwindRow>* rows);

}  // namespace libdump::samplers
