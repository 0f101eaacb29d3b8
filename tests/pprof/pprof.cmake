# go tool pprof and npm's pprof-format read what libdump's profilers write
# (CPU, heap, allocs, block, mutex).
if(TARGET libdump_samplers AND TARGET libdump_heap)
  add_executable(pprof_profile_writer ${CMAKE_CURRENT_LIST_DIR}/profile_writer.cc)
  target_link_libraries(pprof_profile_writer PRIVATE $<LINK_LIBRARY:WHOLE_ARCHIVE,libdump_pthread_interpose>
    libdump_samplers $<LINK_LIBRARY:WHOLE_ARCHIVE,libdump_heap>)
  add_test(NAME pprof_go_tool_reads_profiles
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/go_pprof_check.sh $<TARGET_FILE:pprof_profile_writer>
            ${CMAKE_CURRENT_BINARY_DIR}/pprof_go_check)
  set_tests_properties(pprof_go_tool_reads_profiles PROPERTIES LABELS integration TIMEOUT 300)
  # The same profiles, decoded by npm's pprof-format (tests/pprof/pprof-format).
  add_test(NAME pprof_format_reads_profiles
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/pprof_format_check.sh $<TARGET_FILE:pprof_profile_writer>
            ${CMAKE_CURRENT_BINARY_DIR}/pprof_format_check)
  set_tests_properties(pprof_format_reads_profiles PROPERTIES LABELS integration TIMEOUT 120)
endif()
# The preload's profiles of a process tree (bash children, a dash one that
# ends with _exit, a killed one). Preloads uninstrumented programs: not ASan.
if(TARGET libdump_runtime AND TARGET libdump_prof_preload)
  add_test(NAME pprof_preload_children
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/preload_children.sh $<TARGET_FILE:libdump_runtime>
            $<TARGET_FILE:libdump_prof_preload> ${CMAKE_CURRENT_BINARY_DIR}/pprof_preload_children)
  set_tests_properties(pprof_preload_children PROPERTIES LABELS "integration;no_asan" TIMEOUT 300)
endif()
# One preload (libdump.so) for dumps and every profile; libdumpprof.so alone
# says on stderr what it cannot do. Preloads bash: not ASan.
if(TARGET libdump_runtime AND TARGET libdump_prof_preload)
  add_test(NAME pprof_one_preload
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/one_preload.sh $<TARGET_FILE:libdump_runtime>
            $<TARGET_FILE:libdump_prof_preload> ${CMAKE_CURRENT_BINARY_DIR}/pprof_one_preload)
  set_tests_properties(pprof_one_preload PROPERTIES LABELS "integration;no_asan" TIMEOUT 120)
endif()
# Block and mutex profiles by the preloads' environment: at exit, at a
# SIGTERM exit, on LIBDUMP_PROFILE_SIGNAL. Preloads a program: not ASan.
if(TARGET libdump_runtime AND TARGET libdump_prof_preload)
  add_executable(pprof_lock_program ${CMAKE_CURRENT_LIST_DIR}/lock_program.cc)
  target_compile_options(pprof_lock_program PRIVATE -fno-omit-frame-pointer)
  target_link_libraries(pprof_lock_program PRIVATE Threads::Threads)
  add_test(NAME pprof_wait_profiles_preload
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/wait_profiles_preload.sh $<TARGET_FILE:libdump_runtime>
            $<TARGET_FILE:libdump_prof_preload> $<TARGET_FILE:pprof_lock_program>
            ${CMAKE_CURRENT_BINARY_DIR}/pprof_wait_profiles_preload)
  set_tests_properties(pprof_wait_profiles_preload PROPERTIES LABELS "integration;no_asan" TIMEOUT 120)
endif()
# /debug/pprof/ over HTTP, read by go tool pprof and curl. Preloads a
# program: not ASan.
if(TARGET libdump_runtime AND TARGET pprof_lock_program)
  add_test(NAME pprof_debug_server
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/debug_server.sh $<TARGET_FILE:libdump_runtime>
            $<TARGET_FILE:pprof_lock_program> ${CMAKE_CURRENT_BINARY_DIR}/pprof_debug_server)
  set_tests_properties(pprof_debug_server PROPERTIES LABELS "integration;no_asan" TIMEOUT 120)
endif()
# Callers of frameless code (memcpy, strlen) in go tool pprof -top, and no
# heap samples for a program that allocates nothing (the profilers' own
# allocations left out). Counts assume uninstrumented code: not ASan.
if(TARGET libdump_samplers AND TARGET libdump_runtime AND TARGET libdump_prof_preload)
  add_executable(pprof_attribution_program ${CMAKE_CURRENT_LIST_DIR}/attribution_program.cc)
  target_link_libraries(pprof_attribution_program PRIVATE libdump_samplers Threads::Threads)
  add_executable(pprof_noalloc_program ${CMAKE_CURRENT_LIST_DIR}/noalloc_program.cc)
  add_test(NAME pprof_attribution_and_no_self_allocations
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/attribution_check.sh $<TARGET_FILE:pprof_attribution_program>
            $<TARGET_FILE:pprof_noalloc_program> $<TARGET_FILE:libdump_runtime> $<TARGET_FILE:libdump_prof_preload>
            ${CMAKE_CURRENT_BINARY_DIR}/pprof_attribution_check)
  set_tests_properties(pprof_attribution_and_no_self_allocations PROPERTIES LABELS "integration;no_asan" TIMEOUT 300
    RUN_SERIAL TRUE)
endif()
# /debug/pprof under hostile clients: idle floods (also at the thread
# limit), 10 concurrent heap dumps with the RSS bounded, methods and Host,
# the listening socket across exec and fork. Preloads a program: not ASan.
if(TARGET libdump_runtime)
  add_executable(pprof_server_host_program ${CMAKE_CURRENT_LIST_DIR}/server_host_program.cc)
  add_test(NAME pprof_debug_server_safety
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/debug_server_safety.sh $<TARGET_FILE:libdump_runtime>
            $<TARGET_FILE:pprof_server_host_program> ${CMAKE_CURRENT_BINARY_DIR}/pprof_debug_server_safety)
  set_tests_properties(pprof_debug_server_safety PROPERTIES LABELS "integration;no_asan" TIMEOUT 240)
endif()
