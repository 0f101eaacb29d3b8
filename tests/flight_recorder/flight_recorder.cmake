# The flight recorder end to end: a program with known phases crashes (and
# aborts) with LIBDUMP_FLIGHT_RECORDER_ON_CRASH set; its snapshot is checked
# for structure and durations (check_trace.py), imported by speedscope, and
# the window's CPU profile read by go tool pprof. Its frames are named at
# the crash, or offline by readdump --symbolize.
if(TARGET libdump_samplers AND TARGET libdump_prof_preload)
  add_executable(flight_recorder_phases ${CMAKE_CURRENT_LIST_DIR}/phases.cc)
  target_include_directories(flight_recorder_phases PRIVATE ${PROJECT_SOURCE_DIR})
  # The interposition: worker-b's wait for the mutex reaches the window.
  target_link_libraries(flight_recorder_phases PRIVATE $<LINK_LIBRARY:WHOLE_ARCHIVE,libdump_pthread_interpose>
    libdump_samplers Threads::Threads)
  add_test(NAME flight_recorder_crash_snapshot
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/crash_check.sh $<TARGET_FILE:flight_recorder_phases>
            ${CMAKE_CURRENT_BINARY_DIR}/flight_recorder_crash $<TARGET_FILE:libdump_prof_preload>
            $<TARGET_FILE:readdump>)
  # Timings within 5 %: run alone. Dies of SIGSEGV on purpose: ASan would
  # report the fault itself and exit 1 instead.
  set_tests_properties(flight_recorder_crash_snapshot PROPERTIES LABELS "integration;no_asan" TIMEOUT 240 RUN_SERIAL TRUE)
endif()
