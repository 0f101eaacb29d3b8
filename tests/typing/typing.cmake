# The typing pass (docs/TYPING.md) on a program of standard containers with
# known counts, dumped under LD_PRELOAD on SIGUSR2: built -g (symbols) and
# stripped. LD_PRELOAD: not under the sanitizers (they own malloc there).
if(TARGET libdump_runtime AND TARGET readdump)
  add_executable(typing_containers_program ${CMAKE_CURRENT_LIST_DIR}/containers_program.cc)
  target_compile_options(typing_containers_program PRIVATE -g -O1)
  set(_stripped ${CMAKE_CURRENT_BINARY_DIR}/typing_containers_program_stripped)
  add_custom_command(OUTPUT ${_stripped}
    COMMAND ${CMAKE_STRIP} --strip-all -o ${_stripped} $<TARGET_FILE:typing_containers_program>
    DEPENDS typing_containers_program)
  add_custom_target(typing_containers_program_stripped ALL DEPENDS ${_stripped})
  add_test(NAME typing_containers
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/typing_containers.sh ${PROJECT_BINARY_DIR}
      $<TARGET_FILE:typing_containers_program> ${_stripped})
  set_tests_properties(typing_containers PROPERTIES LABELS "no_asan" TIMEOUT 300)
endif()

# The typing pass's DWARF rule on -g programs under LD_PRELOAD (not under
# ASan: the sanitizer owns malloc there): plain structs in the standard
# containers, and nlohmann::json's parsed document (Debian's
# nlohmann-json3-dev, when installed).
if(TARGET libdump_runtime AND TARGET libdump_typing)
  add_executable(dwarf_rule_check ${CMAKE_CURRENT_LIST_DIR}/dwarf_rule_check.cc)
  target_link_libraries(dwarf_rule_check PRIVATE libdump_typing)
  add_executable(dwarf_containers_prog ${CMAKE_CURRENT_LIST_DIR}/dwarf_containers_prog.cc)
  target_compile_options(dwarf_containers_prog PRIVATE -g -O0)
  add_test(NAME typing_dwarf_rule_containers
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/dwarf_rule_test.sh ${PROJECT_BINARY_DIR}
            $<TARGET_FILE:dwarf_containers_prog> $<TARGET_FILE:dwarf_rule_check> containers)
  set_tests_properties(typing_dwarf_rule_containers PROPERTIES LABELS "no_asan" TIMEOUT 300)
  find_path(NLOHMANN_JSON_INCLUDE nlohmann/json.hpp)
  if(NLOHMANN_JSON_INCLUDE)
    add_executable(nlohmann_json_prog ${CMAKE_CURRENT_LIST_DIR}/nlohmann_json_prog.cc)
    target_compile_options(nlohmann_json_prog PRIVATE -g -O0)
    target_include_directories(nlohmann_json_prog PRIVATE ${NLOHMANN_JSON_INCLUDE})
    add_test(NAME typing_dwarf_rule_nlohmann_json
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/dwarf_rule_test.sh ${PROJECT_BINARY_DIR}
              $<TARGET_FILE:nlohmann_json_prog> $<TARGET_FILE:dwarf_rule_check> json)
    set_tests_properties(typing_dwarf_rule_nlohmann_json PROPERTIES LABELS "no_asan" TIMEOUT 300)
  endif()
endif()

# A real stripped key-value store library holding data: Debian's LevelDB
# (libleveldb-dev, when installed), the program stripped too, so that no rule
# reads DWARF of LevelDB or of the program (not under ASan: LD_PRELOAD).
find_path(LEVELDB_INCLUDE leveldb/db.h)
find_library(LEVELDB_LIBRARY leveldb)
if(TARGET libdump_runtime AND TARGET readdump AND LEVELDB_INCLUDE AND LEVELDB_LIBRARY)
  add_executable(typing_leveldb_program ${CMAKE_CURRENT_LIST_DIR}/leveldb_program.cc)
  target_include_directories(typing_leveldb_program PRIVATE ${LEVELDB_INCLUDE})
  target_link_libraries(typing_leveldb_program PRIVATE ${LEVELDB_LIBRARY})
  set(_leveldb_stripped ${CMAKE_CURRENT_BINARY_DIR}/typing_leveldb_program_stripped)
  add_custom_command(OUTPUT ${_leveldb_stripped}
    COMMAND ${CMAKE_STRIP} --strip-all -o ${_leveldb_stripped} $<TARGET_FILE:typing_leveldb_program>
    DEPENDS typing_leveldb_program)
  add_custom_target(typing_leveldb_program_stripped ALL DEPENDS ${_leveldb_stripped})
  add_test(NAME typing_leveldb
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/typing_leveldb.sh ${PROJECT_BINARY_DIR} ${_leveldb_stripped})
  set_tests_properties(typing_leveldb PROPERTIES LABELS "no_asan" TIMEOUT 300)
endif()

# Other libraries' containers (Debian's libabsl and Boost) and Protocol
# Buffers messages (libprotobuf), the programs built -g and stripped: no shape
# names another library's layout as libstdc++'s, the messages are counted
# exactly, and --histogram shows what --classes shows (not under ASan: LD_PRELOAD).
pkg_check_modules(TYPING_ABSL IMPORTED_TARGET absl_node_hash_map absl_flat_hash_map absl_btree)
pkg_check_modules(TYPING_PROTOBUF IMPORTED_TARGET protobuf)
find_program(TYPING_PROTOC protoc)
if(TARGET libdump_runtime AND TARGET readdump AND TYPING_ABSL_FOUND AND TYPING_PROTOBUF_FOUND AND TYPING_PROTOC)
  add_executable(typing_libraries_program ${CMAKE_CURRENT_LIST_DIR}/libraries_program.cc)
  target_compile_options(typing_libraries_program PRIVATE -g -O1)
  target_link_libraries(typing_libraries_program PRIVATE PkgConfig::TYPING_ABSL Boost::headers)
  set(_shop ${CMAKE_CURRENT_BINARY_DIR}/shop.pb.cc)
  add_custom_command(OUTPUT ${_shop} ${CMAKE_CURRENT_BINARY_DIR}/shop.pb.h
    COMMAND ${TYPING_PROTOC} --cpp_out=${CMAKE_CURRENT_BINARY_DIR} -I${CMAKE_CURRENT_LIST_DIR} shop.proto
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/shop.proto)
  add_executable(typing_protobuf_program ${CMAKE_CURRENT_LIST_DIR}/protobuf_program.cc ${_shop})
  target_compile_options(typing_protobuf_program PRIVATE -g -O1)
  target_include_directories(typing_protobuf_program PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
  target_link_libraries(typing_protobuf_program PRIVATE PkgConfig::TYPING_PROTOBUF)
  set(_stripped_programs)
  foreach(_p typing_libraries_program typing_protobuf_program)
    add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${_p}_stripped
      COMMAND ${CMAKE_STRIP} --strip-all -o ${CMAKE_CURRENT_BINARY_DIR}/${_p}_stripped $<TARGET_FILE:${_p}>
      DEPENDS ${_p})
    list(APPEND _stripped_programs ${CMAKE_CURRENT_BINARY_DIR}/${_p}_stripped)
  endforeach()
  add_custom_target(typing_libraries_stripped ALL DEPENDS ${_stripped_programs})
  add_test(NAME typing_libraries
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/typing_libraries.sh ${PROJECT_BINARY_DIR}
      $<TARGET_FILE:typing_libraries_program> ${CMAKE_CURRENT_BINARY_DIR}/typing_libraries_program_stripped
      $<TARGET_FILE:typing_protobuf_program> ${CMAKE_CURRENT_BINARY_DIR}/typing_protobuf_program_stripped)
  set_tests_properties(typing_libraries PROPERTIES LABELS "no_asan" TIMEOUT 300)
endif()
