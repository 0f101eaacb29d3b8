// A module heap_profiler_test dlopens after the heap profiler has started:
// one frameless function (hand-written, so that no build flag gives it a
// frame pointer) that calls the allocation function it is given. It leaves
// rbp alone, as strdup does, so the frame-pointer chain skips its caller;
// only the module's unwind rules (its CFI below) find it.
//
// void* libdump_test_frameless_alloc(void* (*alloc)(size_t), size_t n)
asm(R"(
  .text
  .p2align 4
  .globl libdump_test_frameless_alloc
  .type libdump_test_frameless_alloc, @function
libdump_test_frameless_alloc:
  .cfi_startproc
  sub $24, %rsp
  .cfi_adjust_cfa_offset 24
  mov %rdi, %rax
  mov %rsi, %rdi
  call *%rax
  add $24, %rsp
  .cfi_adjust_cfa_offset -24
  ret
  .cfi_endproc
  .size libdump_test_frameless_alloc, .-libdump_test_frameless_alloc
)");
