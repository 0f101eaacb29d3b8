# go tool pprof and npm's pprof-format read what libdump's profilers write
# (CPU, heap, allocs).
if(TARGET libdump_samplers AND TARGET libdump_heap)
  add_executable(pprof_profile_writer ${CMAKE_CURRENT_LIST_DIR}/pprof/profile_writer.cc)
  target_link_libraries(pprof_profile_writer PRIVATE libdump_samplers $<LINK_LIBRARY:WHOLE_ARCHIVE,libdump_heap>)
  add_test(NAME pprof_go_tool_reads_profiles
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/pprof/go_pprof_check.sh $<TARGET_FILE:pprof_profile_writer>
            ${CMAKE_CURRENT_BINARY_DIR}/pprof_go_check)
  set_tests_properties(pprof_go_tool_reads_profiles PROPERTIES LABELS integration TIMEOUT 300)
  # The same profiles, decoded by npm's pprof-format (tests/pprof/pprof-format).
  add_test(NAME pprof_format_reads_profiles
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/pprof/pprof_format_check.sh $<TARGET_FILE:pprof_profile_writer>
            ${CMAKE_CURRENT_BINARY_DIR}/pprof_format_check)
  set_tests_properties(pprof_format_reads_profiles PROPERTIES LABELS integration TIMEOUT 120)
endif()
# The preload's profiles of a process tree (bash children, a dash one that
# ends with _exit, a killed one). Preloads uninstrumented programs: not ASan.
if(TARGET libdump_runtime AND TARGET libdump_prof_preload)
  add_test(NAME pprof_preload_children
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/pprof/preload_children.sh $<TARGET_FILE:libdump_runtime>
            $<TARGET_FILE:libdump_prof_preload> ${CMAKE_CURRENT_BINARY_DIR}/pprof_preload_children)
  set_tests_properties(pprof_preload_children PROPERTIES LABELS "integration;no_asan" TIMEOUT 300)
endif()
# Callers of frameless code (memcpy, strlen) in go tool pprof -top, and no
# heap samples for a program that allocates nothing (the profilers' own
# allocations left out). Counts assume uninstrumented code: not ASan.
if(TARGET libdump_samplers AND TARGET libdump_runtime AND TARGET libdump_prof_preload)
  add_executable(pprof_attribution_program ${CMAKE_CURRENT_LIST_DIR}/pprof/attribution_program.cc)
  target_link_libraries(pprof_attribution_program PRIVATE libdump_samplers Threads::Threads)
  add_executable(pprof_noalloc_program ${CMAKE_CURRENT_LIST_DIR}/pprof/noalloc_program.cc)
  add_test(NAME pprof_attribution_and_no_self_allocations
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/pprof/attribution_check.sh $<TARGET_FILE:pprof_attribution_program>
            $<TARGET_FILE:pprof_noalloc_program> $<TARGET_FILE:libdump_runtime> $<TARGET_FILE:libdump_prof_preload>
            ${CMAKE_CURRENT_BINARY_DIR}/pprof_attribution_check)
  set_tests_properties(pprof_attribution_and_no_self_allocations PROPERTIES LABELS "integration;no_asan" TIMEOUT 300
    RUN_SERIAL TRUE)
endif()
