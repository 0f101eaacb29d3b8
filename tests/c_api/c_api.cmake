# include/libdump/libdump.h is C: a C program (c99, -pedantic -Werror) dumps
# its heap through it; readdump checks the dump holds the root and the
# finalizer it registered. Its malloc is libdump's: not under ASan.
if(TARGET libdump_runtime AND TARGET readdump)
  add_executable(c_api_test ${CMAKE_CURRENT_LIST_DIR}/c_api_test.c)
  set_target_properties(c_api_test PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(c_api_test PRIVATE -Wall -Wextra -pedantic -Werror)
  target_compile_definitions(c_api_test PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(c_api_test PRIVATE libdump_runtime)
  set(_c ${CMAKE_CURRENT_BINARY_DIR}/c_api)
  add_test(NAME c_api_heap_dump COMMAND sh -c
    "mkdir -p ${_c} && $<TARGET_FILE:c_api_test> ${_c}/c.dump && \
     $<TARGET_FILE:readdump> --records ${_c}/c.dump > ${_c}/records && \
     grep -q 'c_api_test root' ${_c}/records && grep -q '^finalizer' ${_c}/records")
  set_tests_properties(c_api_heap_dump PROPERTIES LABELS no_asan TIMEOUT 60)
endif()
