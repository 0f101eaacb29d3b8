# WriteHeapDump in unmodified programs, through LD_PRELOAD (not under ASan:
# the sanitizer owns malloc there).
if(TARGET libdump_runtime AND TARGET readdump)
  add_test(NAME heapdump_on_signal_python3
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/heapdump_signal.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(heapdump_on_signal_python3 PROPERTIES LABELS "no_asan" TIMEOUT 120)
  add_test(NAME heapdump_on_oom_python3
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/heapdump_oom.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(heapdump_on_oom_python3 PROPERTIES LABELS "no_asan" TIMEOUT 120)
endif()
