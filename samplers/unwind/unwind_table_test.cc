#include "samplers/unwind/unwind_table.h"

#include <dlfcn.h>
#include <sys/auxv.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

// Functions whose CFI the tests know instruction by instruction: labels
// mark the instructions after each step of the prologue.
extern "C" char unwind_test_fp[], unwind_test_fp_pushed[], unwind_test_fp_framed[];
extern "C" char unwind_test_frameless[], unwind_test_frameless_pushed[], unwind_test_frameless_sub[],
    unwind_test_frameless_popping[], unwind_test_no_cfi[];
asm(R"(
  .text
  .p2align 4
  .globl unwind_test_fp, unwind_test_fp_pushed, unwind_test_fp_framed
unwind_test_fp:
  .cfi_startproc
  push %rbp
unwind_test_fp_pushed:
  .cfi_def_cfa_offset 16
  .cfi_offset %rbp, -16
  mov %rsp, %rbp
unwind_test_fp_framed:
  .cfi_def_cfa_register %rbp
  nop
  pop %rbp
  .cfi_def_cfa %rsp, 8
  ret
  .cfi_endproc

  .p2align 4
  .globl unwind_test_frameless, unwind_test_frameless_pushed, unwind_test_frameless_sub
  .globl unwind_test_frameless_popping
unwind_test_frameless:
  .cfi_startproc
  push %rbx
unwind_test_frameless_pushed:
  .cfi_adjust_cfa_offset 8
  .cfi_offset %rbx, -16
  sub $24, %rsp
unwind_test_frameless_sub:
  .cfi_adjust_cfa_offset 24
  nop
  add $24, %rsp
unwind_test_frameless_popping:
  .cfi_adjust_cfa_offset -24
  pop %rbx
  .cfi_adjust_cfa_offset -8
  ret
  .cfi_endproc

  .p2align 4
  .globl unwind_test_no_cfi
unwind_test_no_cfi:
  nop
  ret
)");

namespace libdump::samplers {
namespace {

uintptr_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

UnwindRule RuleAt(const void* p) {
  const UnwindLookup l = UnwindTables::Lookup(Addr(p));
  EXPECT_TRUE(l.module_known);
  return l.rule;
}

class UnwindTableTest : public ::testing::Test {
 protected:
  void SetUp() override { UnwindTables::Refresh(); }
  UnwindTables::Reader reader_;
};

TEST_F(UnwindTableTest, FramePointerPrologue) {
  UnwindRule r = RuleAt(unwind_test_fp);
  EXPECT_EQ(r.kind, UnwindRule::kSp);
  EXPECT_EQ(r.cfa, 8);
  EXPECT_EQ(r.fp_slot, UnwindRule::kFpSame);
  r = RuleAt(unwind_test_fp_pushed);
  EXPECT_EQ(r.kind, UnwindRule::kSp);
  EXPECT_EQ(r.cfa, 16);
  EXPECT_EQ(r.fp_slot, 2);  // rbp at CFA - 16
  r = RuleAt(unwind_test_fp_framed);
  EXPECT_TRUE(r.StandardFrame());
  r = RuleAt(unwind_test_fp_framed + 2);  // after pop %rbp: back to the entry rule
  EXPECT_EQ(r.kind, UnwindRule::kSp);
  EXPECT_EQ(r.cfa, 8);
}

TEST_F(UnwindTableTest, FramelessFunction) {
  EXPECT_EQ(RuleAt(unwind_test_frameless).cfa, 8);
  EXPECT_EQ(RuleAt(unwind_test_frameless_pushed).cfa, 16);
  const UnwindRule r = RuleAt(unwind_test_frameless_sub);
  EXPECT_EQ(r.kind, UnwindRule::kSp);
  EXPECT_EQ(r.cfa, 40);
  EXPECT_EQ(r.fp_slot, UnwindRule::kFpSame);  // rbx is saved, rbp untouched
  EXPECT_EQ(RuleAt(unwind_test_frameless_popping).cfa, 16);
}

TEST_F(UnwindTableTest, CodeWithoutCfiHasNoRule) {
  EXPECT_EQ(RuleAt(unwind_test_no_cfi).kind, UnwindRule::kNone);
  EXPECT_FALSE(UnwindTables::Lookup(0x1000).module_known);
}

TEST_F(UnwindTableTest, LibcAndTheVdsoAreCovered) {
  // libc's functions keep no frame pointer: at entry the CFA is rsp + 8.
  void* fn = dlsym(RTLD_DEFAULT, "getpid");
  ASSERT_NE(fn, nullptr);
  const UnwindRule r = RuleAt(fn);
  EXPECT_EQ(r.kind, UnwindRule::kSp);
  EXPECT_EQ(r.cfa, 8);
  const uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
  ASSERT_NE(vdso, 0u);
  // The vDSO's text: its first executable segment.
  const auto* eh = reinterpret_cast<const ElfW(Ehdr)*>(vdso);
  const auto* ph = reinterpret_cast<const ElfW(Phdr)*>(vdso + eh->e_phoff);
  uintptr_t text = 0;
  for (int i = 0; i < eh->e_phnum; ++i) {
    if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) text = vdso + ph[i].p_vaddr - ph[0].p_vaddr;
  }
  ASSERT_NE(text, 0u);
  EXPECT_TRUE(UnwindTables::Lookup(text).module_known);
  EXPECT_GT(UnwindTables::Rows(), 10000u);
}

// A snapshot replaced by Refresh is freed only once no lookup may read it.
TEST(UnwindTables, DlopenAddsAModuleAndOldSnapshotsWaitForReaders) {
  UnwindTables::Refresh();
  ASSERT_TRUE(UnwindTables::Reclaim());
  const size_t before = UnwindTables::Modules();
  EXPECT_FALSE(UnwindTables::Stale());
  void* h = dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) GTEST_SKIP() << "no libresolv.so.2";
  const bool loaded_new = UnwindTables::Stale();
  {
    UnwindTables::Reader pinned;
    EXPECT_TRUE(UnwindTables::Refresh() || !loaded_new);
    if (loaded_new) {
      EXPECT_EQ(UnwindTables::Modules(), before + 1);
      EXPECT_FALSE(UnwindTables::Reclaim());  // this thread may still read the old one
    }
  }
  EXPECT_TRUE(UnwindTables::Reclaim());
  dlclose(h);
  if (loaded_new) {
    EXPECT_TRUE(UnwindTables::Stale());
    EXPECT_TRUE(UnwindTables::Refresh());
    EXPECT_EQ(UnwindTables::Modules(), before);
    EXPECT_TRUE(UnwindTables::Reclaim());
  }
}

// A hand-made .eh_frame_hdr + .eh_frame: a PLT-like FDE whose last rule is
// the linker's PLT expression.
struct Image {
  std::vector<uint8_t> bytes;
  size_t hdr = 0;
  uintptr_t pc = 0;  // the FDE's first pc
};

void Put32(std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }

Image MakeImage() {
  Image im;
  std::vector<uint8_t>& b = im.bytes;
  b.resize(128 + 64);
  // .eh_frame_hdr at 0: version, eh_frame_ptr pcrel|sdata4, count udata4,
  // table datarel|sdata4.
  b[0] = 1, b[1] = 0x1b, b[2] = 0x03, b[3] = 0x3b;
  const size_t eh_frame = 32;
  Put32(b, 4, static_cast<uint32_t>(eh_frame - 4));
  Put32(b, 8, 1);
  // CIE at 32: length 20, id 0, version 1, "zR", code 1, data -8, ra 16,
  // aug length 1, R = pcrel|sdata4; def_cfa rsp 8; offset r16 cfa-8.
  const uint8_t cie[] = {20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0};
  std::memcpy(&b[eh_frame], cie, sizeof cie);
  const size_t fde = eh_frame + sizeof cie;  // 56
  // FDE: length, CIE pointer, pc_begin (pcrel), range, aug length 0;
  // def_cfa_offset 16; advance 6; def_cfa_offset 24; advance 10;
  // def_cfa_expression (the PLT's); nops.
  const uint8_t insns[] = {0x0e, 16, 0x46, 0x0e, 24, 0x4a, 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a,
                           0x33, 0x24, 0x22, 0, 0, 0, 0, 0};
  const size_t body = 4 + 4 + 4 + 1 + sizeof insns;  // id, begin, range, aug length, insns
  const size_t len = (body + 3) & ~size_t{3};
  Put32(b, fde, static_cast<uint32_t>(len));
  Put32(b, fde + 4, static_cast<uint32_t>(fde + 4 - eh_frame));
  const uintptr_t base = reinterpret_cast<uintptr_t>(b.data());
  im.pc = base + 0x100000;
  Put32(b, fde + 8, static_cast<uint32_t>(im.pc - (base + fde + 8)));
  Put32(b, fde + 12, 32);
  b[fde + 16] = 0;
  std::memcpy(&b[fde + 17], insns, sizeof insns);
  // The search table's one entry (datarel from the header).
  Put32(b, 12, static_cast<uint32_t>(im.pc - base));
  Put32(b, 16, static_cast<uint32_t>(fde));
  return im;
}

TEST(UnwindRows, PltExpressionAndAdvances) {
  Image im = MakeImage();
  const uintptr_t base = reinterpret_cast<uintptr_t>(im.bytes.data());
  std::vector<UnwindRow> rows;
  ASSERT_TRUE(ParseModuleUnwindRows(base, {{base, base + im.bytes.size()}}, &rows));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].pc, im.pc);
  EXPECT_EQ(rows[0].rule.kind, UnwindRule::kSp);
  EXPECT_EQ(rows[0].rule.cfa, 16);
  EXPECT_EQ(rows[1].pc, im.pc + 6);
  EXPECT_EQ(rows[1].rule.cfa, 24);
  EXPECT_EQ(rows[2].pc, im.pc + 16);
  EXPECT_EQ(rows[2].rule.kind, UnwindRule::kPlt);
  EXPECT_EQ(rows[2].rule.cfa, 11);
  EXPECT_EQ(rows[3].pc, im.pc + 32);
  EXPECT_EQ(rows[3].rule.kind, UnwindRule::kNone);
}

// Corrupt tables end the parse, never the process, and never read outside
// the readable range (ASan checks the reads: the image is its own heap
// block). Fixed seed; single bytes anywhere, and runs of garbage.
TEST(UnwindRows, CorruptTablesAreSafe) {
  const Image clean = MakeImage();
  std::mt19937 rng(27);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> b = clean.bytes;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<uint8_t>(rng());
    // The search table's datarel pointers are relative to the image: keep
    // them meaningful half the time, garbage otherwise.
    const uintptr_t base = reinterpret_cast<uintptr_t>(b.data());
    std::vector<UnwindRow> rows;
    ParseModuleUnwindRows(base, {{base, base + b.size()}}, &rows);
    for (size_t r = 1; r < rows.size(); ++r) ASSERT_LT(rows[r - 1].pc, rows[r].pc);
  }
}

}  // namespace
}  // namespace libdump::samplers
