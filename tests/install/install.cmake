# The installed package works for a project outside the tree.
add_test(NAME install_find_package
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/install_test.sh ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(install_find_package PROPERTIES TIMEOUT 600 LABELS "no_asan")
