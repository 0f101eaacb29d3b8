# The typing pass's DWARF rule on -g programs under LD_PRELOAD (not under
# ASan: the sanitizer owns malloc there): plain structs in the standard
# containers, and nlohmann::json's parsed document (Debian's
# nlohmann-json3-dev, when installed).
if(TARGET libdump_runtime AND TARGET libdump_typing)
  add_executable(dwarf_rule_check ${CMAKE_CURRENT_LIST_DIR}/typing/dwarf_rule_check.cc)
  target_link_libraries(dwarf_rule_check PRIVATE libdump_typing)
  add_executable(dwarf_containers_prog ${CMAKE_CURRENT_LIST_DIR}/typing/dwarf_containers_prog.cc)
  target_compile_options(dwarf_containers_prog PRIVATE -g -O0)
  add_test(NAME typing_dwarf_rule_containers
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/typing/dwarf_rule_test.sh ${PROJECT_BINARY_DIR}
            $<TARGET_FILE:dwarf_containers_prog> $<TARGET_FILE:dwarf_rule_check> containers)
  set_tests_properties(typing_dwarf_rule_containers PROPERTIES LABELS "no_asan" TIMEOUT 300)
  find_path(NLOHMANN_JSON_INCLUDE nlohmann/json.hpp)
  if(NLOHMANN_JSON_INCLUDE)
    add_executable(nlohmann_json_prog ${CMAKE_CURRENT_LIST_DIR}/typing/nlohmann_json_prog.cc)
    target_compile_options(nlohmann_json_prog PRIVATE -g -O0)
    target_include_directories(nlohmann_json_prog PRIVATE ${NLOHMANN_JSON_INCLUDE})
    add_test(NAME typing_dwarf_rule_nlohmann_json
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/typing/dwarf_rule_test.sh ${PROJECT_BINARY_DIR}
              $<TARGET_FILE:nlohmann_json_prog> $<TARGET_FILE:dwarf_rule_check> json)
    set_tests_properties(typing_dwarf_rule_nlohmann_json PROPERTIES LABELS "no_asan" TIMEOUT 300)
  endif()
endif()
