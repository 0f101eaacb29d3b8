# A series of dumps of one program, compared by readdump --growth: a leaking
# program's known structure is the top accumulation point, a steady one shows
# no growth (not under ASan: the program's malloc is libdump's).
if(TARGET libdump_runtime AND TARGET readdump)
  add_executable(growth_program ${CMAKE_CURRENT_LIST_DIR}/growth_program.cc)
  target_link_libraries(growth_program PRIVATE libdump::runtime)
  add_test(NAME readdump_growth_series
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/growth_test.sh $<TARGET_FILE:growth_program>
            $<TARGET_FILE:readdump> ${CMAKE_CURRENT_BINARY_DIR}/growth)
  set_tests_properties(readdump_growth_series PROPERTIES LABELS "integration;no_asan" TIMEOUT 120)
endif()
if(TARGET libdump_runtime AND TARGET heapview)
  add_test(NAME heapview_series_browser
    COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/series_browser_test.sh $<TARGET_FILE:growth_program>
            $<TARGET_FILE:heapview> ${CMAKE_CURRENT_BINARY_DIR}/growth_browser)
  set_tests_properties(heapview_series_browser PROPERTIES LABELS "integration;no_asan" TIMEOUT 180)
endif()
