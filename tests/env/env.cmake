# LIBDUMP_* variables end to end under LD_PRELOAD (platform/env/env_var.h):
# accepted spellings take effect, others are one stderr line. LD_PRELOAD of a
# malloc cannot run under ASan: no_asan.
if(TARGET libdump_runtime)
  add_test(NAME env_preload COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/env_preload_test.sh
    $<TARGET_FILE:libdump_runtime> ${CMAKE_CURRENT_BINARY_DIR}/env_preload)
  set_tests_properties(env_preload PROPERTIES LABELS no_asan TIMEOUT 120)
endif()
