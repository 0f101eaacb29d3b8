# readdump and dumptohprof together: what their command lines share (standard
# input and output, outputs that never destroy data, exit codes, --version).
if(TARGET dumptohprof AND TARGET readdump)
  add_test(NAME tools_cli_data_safety COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/tools_cli_test.sh
    $<TARGET_FILE:dumptohprof> $<TARGET_FILE:readdump> ${PROJECT_SOURCE_DIR}/testdata
    ${CMAKE_CURRENT_BINARY_DIR}/tools_cli)
endif()
