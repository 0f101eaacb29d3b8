# The libdump heap on real programs: each runs with and without
# LD_PRELOAD=libdump.so and must behave the same. Not under ASan (a
# preloaded malloc cannot coexist with ASan's).
if(TARGET libdump_runtime)
  add_executable(alloc_mt_program ${CMAKE_CURRENT_LIST_DIR}/alloc_mt_program.cc)
  target_link_libraries(alloc_mt_program PRIVATE Threads::Threads)
  foreach(case python gxx sqlite git mt)
    add_test(NAME alloc_preload_${case}
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/preload_real_programs.sh $<TARGET_FILE:libdump_runtime> ${case}
              $<TARGET_FILE:alloc_mt_program>)
    set_tests_properties(alloc_preload_${case} PROPERTIES LABELS "integration;no_asan" TIMEOUT 600)
  endforeach()
  # The page heap is zero-initialized, so it lies in .bss: one non-zero
  # default put its 526 KB in .data, where the kernel maps file pages 16 at a
  # time on first touch (92 KB resident in a process that allocates nothing).
  add_test(NAME alloc_page_heap_in_bss COMMAND sh -c
    "nm $<TARGET_FILE:libdump_runtime> | grep -q ' [bB] _ZN7libdump8internal11g_page_heapE$'")
endif()

# Blocks of every size class and large, 4 threads, cross-thread frees and
# realloc chains, with heap dumps and forks; every block's contents checked
# after each dump (30 s; bench/alloc/stress.sh runs it for 10 minutes).
# no_asan: the program runs under LD_PRELOAD=libdump.so, which cannot take
# over malloc from ASan's runtime.
if(TARGET libdump_runtime)
  add_executable(alloc_stress_program ${CMAKE_CURRENT_LIST_DIR}/alloc_stress_program.cc)
  target_link_libraries(alloc_stress_program PRIVATE Threads::Threads)
  target_compile_options(alloc_stress_program PRIVATE -fno-builtin-malloc -fno-builtin-free)
  add_test(NAME alloc_stress_dumps_forks
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/alloc_stress.sh ${PROJECT_BINARY_DIR} $<TARGET_FILE:alloc_stress_program> 30)
  set_tests_properties(alloc_stress_dumps_forks PROPERTIES LABELS "integration;no_asan" TIMEOUT 600)
endif()
