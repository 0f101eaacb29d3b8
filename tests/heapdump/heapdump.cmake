# WriteHeapDump in unmodified programs, through LD_PRELOAD (not under ASan:
# the sanitizer owns malloc there).
if(TARGET libdump_runtime AND TARGET readdump)
  add_test(NAME heapdump_on_signal_python3
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/heapdump_signal.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(heapdump_on_signal_python3 PROPERTIES LABELS "no_asan" TIMEOUT 120)
  add_test(NAME heapdump_on_oom_python3
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/heapdump_oom.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(heapdump_on_oom_python3 PROPERTIES LABELS "no_asan" TIMEOUT 120)
endif()

# Forks while dumps are requested, in the parent and in the children, with
# and without the profilers (issue 30: a forked child parked forever).
# Bounded: 6 s of forking each; bench/fork/run.sh runs it in rounds, for longer.
if(TARGET libdump_runtime AND TARGET libdump_prof_preload AND TARGET readdump)
  add_executable(fork_dump_program ${CMAKE_CURRENT_LIST_DIR}/fork_dump_program.cc)
  target_link_libraries(fork_dump_program PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  foreach(mode plain profilers)
    add_test(NAME heapdump_fork_stress_${mode}
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/fork_dump_stress.sh ${PROJECT_BINARY_DIR}
              $<TARGET_FILE:fork_dump_program> 6 ${mode})
    set_tests_properties(heapdump_fork_stress_${mode} PROPERTIES LABELS "integration;no_asan" TIMEOUT 300)
  endforeach()
endif()

# Outputs in a shared directory: planted links and partial files refused,
# mode 0600, and a burst of 200 dump signals with nothing replaced.
if(TARGET libdump_runtime AND TARGET libdump_prof_preload AND TARGET readdump)
  add_test(NAME heapdump_output_safety COMMAND ${CMAKE_CURRENT_LIST_DIR}/output_safety.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(heapdump_output_safety PROPERTIES LABELS "integration;no_asan" TIMEOUT 300)
endif()

# Every frame, type and thread name of a signal dump is exact, byte for byte,
# names of 256 bytes and more included (issue 35).
if(TARGET libdump_runtime AND TARGET readdump)
  add_executable(dump_names_program ${CMAKE_CURRENT_LIST_DIR}/dump_names_program.cc)
  target_link_libraries(dump_names_program PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  add_test(NAME heapdump_names_exact
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/heapdump_names.sh ${PROJECT_BINARY_DIR} $<TARGET_FILE:dump_names_program> 10)
  set_tests_properties(heapdump_names_exact PROPERTIES LABELS "integration;no_asan" TIMEOUT 300)
endif()
