# The typing pass's DWARF rule on a -g program under LD_PRELOAD (not under
# ASan: the sanitizer owns malloc there).
if(TARGET libdump_runtime AND TARGET libdump_typing)
  add_executable(dwarf_containers_prog ${CMAKE_CURRENT_LIST_DIR}/typing/dwarf_containers_prog.cc)
  target_compile_options(dwarf_containers_prog PRIVATE -g -O0)
  add_executable(dwarf_rule_check ${CMAKE_CURRENT_LIST_DIR}/typing/dwarf_rule_check.cc)
  target_link_libraries(dwarf_rule_check PRIVATE libdump_typing)
  add_test(NAME typing_dwarf_rule_containers
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/typing/dwarf_rule_test.sh ${PROJECT_BINARY_DIR}
            $<TARGET_FILE:dwarf_containers_prog> $<TARGET_FILE:dwarf_rule_check>)
  set_tests_properties(typing_dwarf_rule_containers PROPERTIES LABELS "no_asan" TIMEOUT 300)
endif()
