# readdump end to end: malformed inputs (exit 1 with the right offset, bounded
# memory), usage errors, and the golden outputs in testdata/*.expected.
if(TARGET readdump)
  libdump_add_test(readdump_cli_test SOURCES ${PROJECT_SOURCE_DIR}/tests/readdump/readdump_cli_test.cc
    LIBS libdump::format)
  add_dependencies(readdump_cli_test readdump)
  # Fallbacks for when the environment libdump_add_test sets does not arrive.
  target_compile_definitions(readdump_cli_test PRIVATE
    READDUMP_BINARY="$<TARGET_FILE:readdump>" READDUMP_TESTDATA="${PROJECT_SOURCE_DIR}/testdata")
endif()
