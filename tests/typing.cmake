# The typing pass (docs/TYPING.md) on a program of standard containers with
# known counts, dumped under LD_PRELOAD on SIGUSR2: built -g (symbols) and
# stripped. LD_PRELOAD: not under the sanitizers (they own malloc there).
if(TARGET libdump_runtime AND TARGET readdump)
  add_executable(typing_containers_program typing/containers_program.cc)
  target_compile_options(typing_containers_program PRIVATE -g -O1)
  set(_stripped ${CMAKE_CURRENT_BINARY_DIR}/typing_containers_program_stripped)
  add_custom_command(OUTPUT ${_stripped}
    COMMAND ${CMAKE_STRIP} --strip-all -o ${_stripped} $<TARGET_FILE:typing_containers_program>
    DEPENDS typing_containers_program)
  add_custom_target(typing_containers_program_stripped ALL DEPENDS ${_stripped})
  add_test(NAME typing_containers
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/typing/typing_containers.sh ${PROJECT_BINARY_DIR}
      $<TARGET_FILE:typing_containers_program> ${_stripped})
  set_tests_properties(typing_containers PROPERTIES LABELS "no_asan" TIMEOUT 300)
endif()
