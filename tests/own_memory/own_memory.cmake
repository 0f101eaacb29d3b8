# libdump's own memory (its dump writer, symbolizer, buffers: docs/FORMAT.md,
# typeinfo flag 8) stays out of the answers about the program: the example's
# dump and the typing test program's (under LD_PRELOAD, so not under the
# sanitizers, which own malloc there).
# typing_containers_program comes from tests/typing/typing.cmake, included
# after this file, under the same condition.
if(TARGET libdump_runtime AND TARGET readdump AND TARGET dumptohprof AND TARGET heap_dump_example)
  add_test(NAME own_memory_out_of_the_answers
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/own_memory_test.sh ${PROJECT_BINARY_DIR}
      $<TARGET_FILE:heap_dump_example> $<TARGET_FILE:typing_containers_program>)
  set_tests_properties(own_memory_out_of_the_answers PROPERTIES LABELS "no_asan" TIMEOUT 300)
endif()
