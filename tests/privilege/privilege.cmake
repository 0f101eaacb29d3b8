# Privilege drops (setpriv, su-style, seteuid) under the preload with every
# libdump thread running. Needs root (skipped otherwise); preloads
# uninstrumented programs: not ASan.
if(TARGET libdump_runtime)
  add_executable(privilege_drop_program ${CMAKE_CURRENT_LIST_DIR}/privilege_drop_program.cc)
  target_link_libraries(privilege_drop_program PRIVATE Threads::Threads)
  add_test(NAME privilege_drop_under_preload
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/privilege_drop.sh $<TARGET_FILE:libdump_runtime>
            $<TARGET_FILE:privilege_drop_program> ${CMAKE_CURRENT_BINARY_DIR}/privilege_drop)
  set_tests_properties(privilege_drop_under_preload PROPERTIES LABELS "integration;no_asan" TIMEOUT 180
    SKIP_RETURN_CODE 77)
endif()
