# Go heap dumps: a Go program the test builds dumps its heap with known
# contents (tests/godump/producer.go), and readdump's counts must match.
if(TARGET readdump)
  add_test(NAME godump_producer_counts
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/go_producer_check.sh $<TARGET_FILE:readdump>
            ${CMAKE_CURRENT_BINARY_DIR}/godump_producer)
  set_tests_properties(godump_producer_counts PROPERTIES LABELS integration TIMEOUT 300)
endif()

# dumptohprof --binary: the producer's objects named by its own DWARF, loaded
# by VisualVM's heap library (tests/hprof/HeapCheck.java); wrong binaries refused.
if(TARGET dumptohprof AND TARGET readdump)
  add_test(NAME godump_binary_types
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/go_binary_check.sh $<TARGET_FILE:dumptohprof> $<TARGET_FILE:readdump>
            ${CMAKE_CURRENT_LIST_DIR}/../hprof/heap_check.sh ${CMAKE_CURRENT_BINARY_DIR}/godump_binary)
  # Its three Go builds share a build cache that outlives the run (go
  # caches safely across processes): a rerun builds in seconds.
  set_tests_properties(godump_binary_types PROPERTIES LABELS integration TIMEOUT 300
    ENVIRONMENT GOCACHE=${CMAKE_CURRENT_BINARY_DIR}/godump_gocache)
endif()
