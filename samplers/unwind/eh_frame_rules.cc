#include "samplers/unwind/eh_frame_rules.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace libdump::samplers {

// ---------------------------------------------------------------------------
// Parsing .eh_frame (built ahead of time: allocates, not signal-safe).
// ---------------------------------------------------------------------------
namespace {

constexpr uint8_t kPeOmit = 0xff;
constexpr int kRegRbp = 6, kRegRsp = 7, kRegRa = 16;

// Bounded reads from a module's mapped image.
class Cursor {
 public:
  Cursor(const std::vector<UnwindRange>& readable, uintptr_t p, uintptr_t end)
      : readable_(readable), p_(p), end_(end) {}
  bool ok() const { return ok_; }
  uintptr_t pos() const { return p_; }
  void Seek(uintptr_t p) { p_ = p; }
  bool AtEnd() const { return !ok_ || p_ >= end_; }

  template <typename T>
  T Read() {
    T v{};
    if (!ok_ || p_ + sizeof(T) > end_ || p_ + sizeof(T) < p_ || !Readable(p_, sizeof(T))) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, reinterpret_cast<const void*>(p_), sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = Read<uint8_t>();
      if (!ok_) return 0;
      v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    ok_ = false;
    return 0;
  }
  int64_t Sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b;
    do {
      b = Read<uint8_t>();
      if (!ok_ || shift >= 64) {
        ok_ = false;
        return 0;
      }
      v |= int64_t{b & 0x7f} << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(int64_t{1} << shift);
    return v;
  }
  // A DW_EH_PE-encoded pointer; datarel is relative to base.
  uint64_t Encoded(uint8_t enc, uintptr_t datarel_base = 0) {
    const uintptr_t at = p_;
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case 0x00: v = Read<uint64_t>(); break;                                       // absptr
      case 0x01: v = Uleb(); break;                                                 // uleb128
      case 0x02: v = Read<uint16_t>(); break;                                       // udata2
      case 0x03: v = Read<uint32_t>(); break;                                       // udata4
      case 0x04: v = Read<uint64_t>(); break;                                       // udata8
      case 0x09: v = static_cast<uint64_t>(Sleb()); break;                          // sleb128
      case 0x0a: v = static_cast<uint64_t>(int64_t{Read<int16_t>()}); break;        // sdata2
      case 0x0b: v = static_cast<uint64_t>(int64_t{Read<int32_t>()}); break;        // sdata4
      case 0x0c: v = static_cast<uint64_t>(Read<int64_t>()); break;                 // sdata8
      default: ok_ = false; return 0;
    }
    switch (enc & 0x70) {
      case 0x00: break;
      case 0x10: v += at; break;             // pcrel
      case 0x30: v += datarel_base; break;   // datarel
      default: ok_ = false; return 0;
    }
    return v;
  }
  void Skip(uint64_t n) {
    if (n > end_ - p_) ok_ = false; else p_ += n;
  }

 private:
  bool Readable(uintptr_t p, size_t n) {
    if (p >= hit_.lo && p + n <= hit_.hi) return true;  // the range of the last read
    for (const UnwindRange& r : readable_) {
      if (p >= r.lo && p + n <= r.hi) {
        hit_ = r;
        return true;
      }
    }
    return false;
  }
  const std::vector<UnwindRange>& readable_;
  UnwindRange hit_{1, 0};
  uintptr_t p_, end_;
  bool ok_ = true;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = 1;
  uint64_t ra_reg = kRegRa;
  uint8_t fde_enc = 0;
  bool has_aug_data = false;
  uintptr_t insns = 0, insns_end = 0;
};

// One register's rule, as far as the table cares.
struct RegRule {
  enum Kind : uint8_t { kSame, kOffset, kOther, kUndefined } kind = kSame;
  int64_t off = 0;
  bool operator==(const RegRule&) const = default;
};

struct CfaState {
  int cfa_reg = kRegRsp;
  int64_t cfa_off = 8;
  enum : uint8_t { kRegOff, kExpr, kPltExpr } cfa_kind = kRegOff;
  uint8_t plt_threshold = 0;
  RegRule rbp, ra;
  bool operator==(const CfaState&) const = default;
};

UnwindRule ToRule(const CfaState& s) {
  UnwindRule r;
  if (s.cfa_kind == CfaState::kPltExpr) {
    r.kind = UnwindRule::kPlt;
    r.cfa = s.plt_threshold;
    return r;
  }
  r.kind = UnwindRule::kUnsupported;
  if (s.cfa_kind != CfaState::kRegOff || (s.cfa_reg != kRegRsp && s.cfa_reg != kRegRbp)) return r;
  if (s.ra.kind == RegRule::kUndefined) {
    r.kind = UnwindRule::kEnd;
    return r;
  }
  if (s.cfa_off < 8 || s.cfa_off % 8 != 0 || s.cfa_off > 0xfff8) return r;
  if (s.ra.kind != RegRule::kOffset || s.ra.off != -8) return r;
  if (s.rbp.kind == RegRule::kSame) {
    r.fp_slot = UnwindRule::kFpSame;
  } else if (s.rbp.kind == RegRule::kOffset && s.rbp.off < 0 && s.rbp.off % 8 == 0 && -s.rbp.off / 8 < 255) {
    r.fp_slot = static_cast<uint8_t>(-s.rbp.off / 8);
  } else {
    r.fp_slot = UnwindRule::kFpLost;
  }
  r.kind = s.cfa_reg == kRegRsp ? UnwindRule::kSp : UnwindRule::kFp;
  r.cfa = static_cast<uint16_t>(s.cfa_off);
  return r;
}

// The expression the linker gives a lazy-binding PLT (binutils' x86-64
// elf_x86_64_eh_frame_plt): CFA = rsp + 8 + ((rip & 15) >= N) * 8.
bool IsPltExpression(Cursor& c, uint64_t len, uint8_t* threshold) {
  const uintptr_t at = c.pos();
  uint8_t e[11];
  if (len != sizeof e) return false;
  for (uint8_t& b : e) b = c.Read<uint8_t>();
  c.Seek(at);
  // breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus
  const bool match = c.ok() && e[0] == 0x77 && e[1] == 8 && e[2] == 0x80 && e[3] == 0 && e[4] == 0x3f &&
                     e[5] == 0x1a && e[6] >= 0x30 && e[6] <= 0x3f && e[7] == 0x2a && e[8] == 0x33 && e[9] == 0x24 &&
                     e[10] == 0x22;
  if (match) *threshold = static_cast<uint8_t>(e[6] - 0x30);
  return match;
}

// Runs a CFA program from loc, emitting (pc, state) before each advance.
// initial: the CIE's state (for DW_CFA_restore). Returns false if an
// instruction is malformed (the rows so far stand).
template <typename Emit>
bool RunCfa(Cursor& c, const Cie& cie, const CfaState& initial, CfaState& s, uint64_t& loc, uint64_t end,
            Emit emit) {
  constexpr int kMaxStack = 16;
  CfaState stack[kMaxStack];
  int depth = 0;
  auto set_reg = [&](uint64_t reg, RegRule rule) {
    if (reg == kRegRbp) s.rbp = rule;
    if (reg == cie.ra_reg) s.ra = rule;
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kRegRbp) s.rbp = initial.rbp;
    if (reg == cie.ra_reg) s.ra = initial.ra;
  };
  auto advance = [&](uint64_t delta) {
    emit(loc, s);
    loc += delta * cie.code_align;
    return loc < end;
  };
  while (!c.AtEnd()) {
    const uint8_t op = c.Read<uint8_t>();
    const uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1: if (!advance(low)) return true; continue;
      case 2: set_reg(low, {RegRule::kOffset, static_cast<int64_t>(c.Uleb()) * cie.data_align}); continue;
      case 3: restore(low); continue;
      default: break;
    }
    switch (op) {
      case 0x00: break;  // nop
      case 0x01: {       // set_loc
        const uint64_t to = c.Encoded(cie.fde_enc);
        if (to < loc) return false;
        emit(loc, s);
        loc = to;
        if (loc >= end) return true;
        break;
      }
      case 0x02: if (!advance(c.Read<uint8_t>())) return true; break;
      case 0x03: if (!advance(c.Read<uint16_t>())) return true; break;
      case 0x04: if (!advance(c.Read<uint32_t>())) return true; break;
      case 0x05: {  // offset_extended
        const uint64_t r = c.Uleb();
        set_reg(r, {RegRule::kOffset, static_cast<int64_t>(c.Uleb()) * cie.data_align});
        break;
      }
      case 0x06: restore(c.Uleb()); break;                                  // restore_extended
      case 0x07: set_reg(c.Uleb(), {RegRule::kUndefined, 0}); break;      // undefined
      case 0x09: {                                                          // register
        const uint64_t r = c.Uleb();
        c.Uleb();
        set_reg(r, {RegRule::kOther, 0});
        break;
      }
      case 0x08: set_reg(c.Uleb(), {RegRule::kSame, 0}); break;            // same_value
      case 0x0a:                                                            // remember_state
        if (depth == kMaxStack) return false;
        stack[depth++] = s;
        break;
      case 0x0b:  // restore_state (the CFA too: GCC relies on it)
        if (depth == 0) return false;
        s = stack[--depth];
        break;
      case 0x0c:  // def_cfa
        s.cfa_reg = static_cast<int>(c.Uleb());
        s.cfa_off = static_cast<int64_t>(c.Uleb());
        s.cfa_kind = CfaState::kRegOff;
        break;
      case 0x0d: s.cfa_reg = static_cast<int>(c.Uleb()); s.cfa_kind = CfaState::kRegOff; break;
      case 0x0e: s.cfa_off = static_cast<int64_t>(c.Uleb()); break;
      case 0x0f: {  // def_cfa_expression
        const uint64_t len = c.Uleb();
        s.cfa_kind = IsPltExpression(c, len, &s.plt_threshold) ? CfaState::kPltExpr : CfaState::kExpr;
        c.Skip(len);
        break;
      }
      case 0x10: case 0x16: {  // expression, val_expression
        const uint64_t r = c.Uleb();
        c.Skip(c.Uleb());
        set_reg(r, {RegRule::kOther, 0});
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t r = c.Uleb();
        set_reg(r, {RegRule::kOffset, c.Sleb() * cie.data_align});
        break;
      }
      case 0x12:  // def_cfa_sf
        s.cfa_reg = static_cast<int>(c.Uleb());
        s.cfa_off = c.Sleb() * cie.data_align;
        s.cfa_kind = CfaState::kRegOff;
        break;
      case 0x13: s.cfa_off = c.Sleb() * cie.data_align; break;  // def_cfa_offset_sf
      case 0x14: case 0x15: {                                    // val_offset(_sf)
        const uint64_t r = c.Uleb();
        if (op == 0x14) c.Uleb(); else c.Sleb();
        set_reg(r, {RegRule::kOther, 0});
        break;
      }
      case 0x2e: c.Uleb(); break;  // GNU_args_size
      case 0x2f: {                 // GNU_negative_offset_extended
        const uint64_t r = c.Uleb();
        set_reg(r, {RegRule::kOffset, -static_cast<int64_t>(c.Uleb()) * cie.data_align});
        break;
      }
      default: return false;  // an opcode this parser does not know
    }
  }
  return c.ok();
}

bool ParseCie(const std::vector<UnwindRange>& readable, uintptr_t at, Cie* cie, CfaState* initial) {
  Cursor c(readable, at, ~uintptr_t{0});
  uint64_t len = c.Read<uint32_t>();
  if (len == 0xffffffff) len = c.Read<uint64_t>();
  const uintptr_t body = c.pos();
  if (!c.ok() || len == 0 || len > (uintptr_t{1} << 30)) return false;
  Cursor b(readable, body, body + len);
  if (b.Read<uint32_t>() != 0) return false;  // the CIE id in .eh_frame
  const uint8_t version = b.Read<uint8_t>();
  if (version != 1 && version != 3) return false;
  char aug[8];
  size_t na = 0;
  for (char ch; (ch = static_cast<char>(b.Read<uint8_t>())) != 0 && b.ok();) {
    if (na + 1 == sizeof aug) return false;
    aug[na++] = ch;
  }
  aug[na] = 0;
  cie->code_align = b.Uleb();
  cie->data_align = b.Sleb();
  cie->ra_reg = version == 1 ? b.Read<uint8_t>() : b.Uleb();
  size_t i = 0;
  if (aug[0] == 'z') {
    cie->has_aug_data = true;
    const uint64_t n = b.Uleb();
    const uintptr_t aug_end = b.pos() + n;
    for (i = 1; i < na; ++i) {
      switch (aug[i]) {
        case 'R': cie->fde_enc = b.Read<uint8_t>(); break;
        case 'P': {
          const uint8_t enc = b.Read<uint8_t>();
          b.Encoded(enc & 0x7f);  // the personality routine; indirect bit irrelevant
          break;
        }
        case 'L': b.Read<uint8_t>(); break;
        case 'S': case 'B': break;
        default: i = na; break;  // unknown: the length lets the rest be skipped
      }
    }
    b.Seek(aug_end);
  } else if (na != 0) {
    return false;  // an augmentation without 'z' cannot be skipped
  }
  if (!b.ok()) return false;
  cie->insns = b.pos();
  cie->insns_end = body + len;
  // The initial instructions set the state every FDE starts from.
  CfaState s;
  s.ra = {RegRule::kSame, 0};
  uint64_t loc = 0;
  Cursor ic(readable, cie->insns, cie->insns_end);
  if (!RunCfa(ic, *cie, s, s, loc, ~uint64_t{0}, [](uint64_t, const CfaState&) {})) return false;
  *initial = s;
  return true;
}

// Appends one FDE's rows; fde: the address of its length field.
bool ParseFde(const std::vector<UnwindRange>& readable, uintptr_t fde, uintptr_t eh_frame_hdr,
              std::unordered_map<uintptr_t, std::pair<Cie, CfaState>>& cies, std::vector<UnwindRow>* rows) {
  Cursor c(readable, fde, ~uintptr_t{0});
  uint64_t len = c.Read<uint32_t>();
  if (len == 0xffffffff) len = c.Read<uint64_t>();
  const uintptr_t body = c.pos();
  if (!c.ok() || len == 0 || len > (uintptr_t{1} << 30)) return false;
  Cursor b(readable, body, body + len);
  const uint32_t cie_ptr = b.Read<uint32_t>();
  if (!b.ok() || cie_ptr == 0) return false;  // a CIE, not an FDE
  const uintptr_t cie_at = body - cie_ptr;
  auto it = cies.find(cie_at);
  if (it == cies.end()) {
    Cie cie;
    CfaState init;
    if (!ParseCie(readable, cie_at, &cie, &init)) return false;
    it = cies.emplace(cie_at, std::make_pair(cie, init)).first;
  }
  const Cie& cie = it->second.first;
  const CfaState& initial = it->second.second;
  const uint64_t start = b.Encoded(cie.fde_enc, eh_frame_hdr);
  const uint64_t range = b.Encoded(cie.fde_enc & 0x0f);
  if (cie.has_aug_data) b.Skip(b.Uleb());
  if (!b.ok() || range == 0 || start + range < start) return false;
  CfaState s = initial;
  uint64_t loc = start;
  const size_t first = rows->size();
  auto emit = [&](uint64_t pc, const CfaState& st) {
    const UnwindRule r = ToRule(st);
    if (rows->size() > first && rows->back().pc == pc) {
      rows->back().rule = r;  // an advance of 0
      return;
    }
    if (rows->size() > first) {
      const UnwindRule& p = rows->back().rule;
      if (p.kind == r.kind && p.cfa == r.cfa && p.fp_slot == r.fp_slot) return;
    }
    rows->push_back({pc, r});
  };
  const bool ok = RunCfa(b, cie, initial, s, loc, start + range, emit);
  if (loc < start + range) emit(loc, s);
  if (!ok) {
    // A program this parser cannot follow: the rows it could not reach are
    // unknown, not guessed.
    rows->push_back({loc < start + range ? loc : start + range - 1, UnwindRule{UnwindRule::kUnsupported}});
  }
  rows->push_back({start + range, UnwindRule{}});  // the FDE's end: a gap until the next
  return true;
}

}  // namespace

bool ParseModuleUnwindRows(uintptr_t eh_frame_hdr, const std::vector<UnwindRange>& readable,
                           std::vector<UnwindRow>* rows) {
  Cursor h(readable, eh_frame_hdr, ~uintptr_t{0});
  const uint8_t version = h.Read<uint8_t>();
  const uint8_t ptr_enc = h.Read<uint8_t>();
  const uint8_t count_enc = h.Read<uint8_t>();
  const uint8_t table_enc = h.Read<uint8_t>();
  if (!h.ok() || version != 1 || ptr_enc == kPeOmit) return false;
  const uintptr_t eh_frame = h.Encoded(ptr_enc, eh_frame_hdr);
  if (!h.ok()) return false;
  std::unordered_map<uintptr_t, std::pair<Cie, CfaState>> cies;
  std::vector<UnwindRow> all;
  if (count_enc != kPeOmit && table_enc == 0x3b) {  // datarel sdata4 pairs, sorted by pc
    const uint64_t count = h.Encoded(count_enc, eh_frame_hdr);
    if (!h.ok() || count > (uint64_t{1} << 26)) return false;
    for (uint64_t i = 0; i < count; ++i) {
      h.Read<int32_t>();  // the initial location: the FDE says it again
      const uintptr_t fde = eh_frame_hdr + static_cast<uintptr_t>(static_cast<intptr_t>(h.Read<int32_t>()));
      if (!h.ok()) return false;
      ParseFde(readable, fde, eh_frame_hdr, cies, &all);
    }
  } else {
    // No search table: walk .eh_frame to its zero terminator.
    Cursor e(readable, eh_frame, ~uintptr_t{0});
    for (int guard = 0; guard < (1 << 22); ++guard) {
      const uintptr_t at = e.pos();
      uint64_t len = e.Read<uint32_t>();
      if (!e.ok() || len == 0) break;
      if (len == 0xffffffff) len = e.Read<uint64_t>();
      const uintptr_t body = e.pos();
      const uint32_t id = e.Read<uint32_t>();
      if (!e.ok()) break;
      if (id != 0) ParseFde(readable, at, eh_frame_hdr, cies, &all);
      e.Seek(body);
      e.Skip(len);
    }
    std::stable_sort(all.begin(), all.end(), [](const UnwindRow& a, const UnwindRow& b) { return a.pc < b.pc; });
  }
  // Rows in pc order, one per pc: where an FDE's end marker and the next
  // FDE's start coincide, the start wins.
  rows->clear();
  for (const UnwindRow& r : all) {
    if (!rows->empty() && rows->back().pc == r.pc) {
      if (r.rule.kind != UnwindRule::kNone) rows->back() = r;
      continue;
    }
    if (!rows->empty() && rows->back().pc > r.pc) continue;  // overlapping FDEs: the first stands
    rows->push_back(r);
  }
  return true;
}

}  // namespace libdump::samplers
