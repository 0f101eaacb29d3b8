# coretodump (docs/COREDUMP.md) end to end: a glibc malloc program's core
# and live attach against its own bookkeeping; the typing tests' container
# program on glibc against the same under the preload; bad input. gcore is
# gdb's (scripts/setup.sh test_packages). Not under ASan: the programs must
# run on glibc's own malloc, which the sanitizer replaces.
if(TARGET coretodump AND TARGET readdump)
  add_executable(coredump_glibc_program ${CMAKE_CURRENT_LIST_DIR}/glibc_heap_program.c)
  target_compile_options(coredump_glibc_program PRIVATE -g -O1)
  target_link_libraries(coredump_glibc_program PRIVATE Threads::Threads)
  add_test(NAME coredump_glibc
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/coredump_glibc.sh ${PROJECT_BINARY_DIR} $<TARGET_FILE:coredump_glibc_program>)
  set_tests_properties(coredump_glibc PROPERTIES LABELS "no_asan" TIMEOUT 300)
  add_test(NAME coredump_bad_input
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/coredump_bad_input.sh ${PROJECT_BINARY_DIR} $<TARGET_FILE:coredump_glibc_program>)
  set_tests_properties(coredump_bad_input PROPERTIES LABELS "no_asan" TIMEOUT 300)
  add_executable(coredump_polymorphic_program ${CMAKE_CURRENT_LIST_DIR}/polymorphic_program.cc)
  target_compile_options(coredump_polymorphic_program PRIVATE -O1)
  add_test(NAME coredump_polymorphic
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/coredump_polymorphic.sh ${PROJECT_BINARY_DIR} $<TARGET_FILE:coredump_polymorphic_program>)
  set_tests_properties(coredump_polymorphic PROPERTIES LABELS "no_asan" TIMEOUT 300)
  if(TARGET libdump_runtime)
    # The typing tests' program, built as tests/typing builds it (-g -O1).
    add_executable(coredump_containers_program ${PROJECT_SOURCE_DIR}/tests/typing/containers_program.cc)
    target_compile_options(coredump_containers_program PRIVATE -g -O1)
    add_test(NAME coredump_typing_containers
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/coredump_typing.sh ${PROJECT_BINARY_DIR} $<TARGET_FILE:coredump_containers_program>)
    set_tests_properties(coredump_typing_containers PROPERTIES LABELS "no_asan" TIMEOUT 300)
  endif()
endif()
