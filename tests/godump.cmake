# Go heap dumps: a Go program the test builds dumps its heap with known
# contents (tests/godump/producer.go), and readdump's counts must match.
if(TARGET readdump)
  add_test(NAME godump_producer_counts
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/godump/go_producer_check.sh $<TARGET_FILE:readdump>
            ${CMAKE_CURRENT_BINARY_DIR}/godump_producer)
  set_tests_properties(godump_producer_counts PROPERTIES LABELS integration TIMEOUT 300)
endif()
