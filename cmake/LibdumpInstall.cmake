# What `cmake --install` gives a consumer: clean names, versioned shared
# libraries, the C++ standard the headers need, a CMake package whose
# find_dependency calls cover every target's link interface, and pkg-config
# files that link without --static.

# libdump::<name> for every exported target, archives named libdump_<name>.a
# (not liblibdump_<name>.a).
foreach(name format hprof hprof_reader pprof heap heapdump capture output env proc samplers pthread_interpose debug_server)
  if(TARGET libdump_${name})
    set_target_properties(libdump_${name} PROPERTIES OUTPUT_NAME dump_${name} EXPORT_NAME ${name})
  endif()
endforeach()
# libdump.so.0.1 and libdumpprof.so.0.1: the 0.x series may change its ABI at
# every minor version (the package's compatibility is SameMinorVersion).
foreach(t libdump_runtime libdump_prof_preload)
  if(TARGET ${t})
    set_target_properties(${t} PROPERTIES VERSION ${PROJECT_VERSION}
      SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  endif()
endforeach()
# libdumpprof.so carries the profilers' API (include/libdump/profiler.h).
if(TARGET libdump_prof_preload)
  target_include_directories(libdump_prof_preload INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endif()
# The headers' language: the format, hprof, pprof and profiler headers use
# C++20 (<bit>, <span>, designated initialisers); the runtime's compile as
# C++17, and libdump/libdump.h as C.
foreach(t libdump_format libdump_hprof libdump_hprof_reader libdump_pprof libdump_samplers libdump_debug_server libdump_prof_preload)
  if(TARGET ${t})
    target_compile_features(${t} INTERFACE cxx_std_20)
  endif()
endforeach()
foreach(t libdump_heap libdump_runtime)
  if(TARGET ${t})
    target_compile_features(${t} INTERFACE cxx_std_17)
  endif()
endforeach()

install(DIRECTORY include/libdump DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT libdumpTargets NAMESPACE libdump:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/libdump)
configure_package_config_file(cmake/libdumpConfig.cmake.in
  ${PROJECT_BINARY_DIR}/libdumpConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/libdump)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/libdumpConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/libdumpConfig.cmake ${PROJECT_BINARY_DIR}/libdumpConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/libdump)

file(RELATIVE_PATH LIBDUMP_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
foreach(pc libdump libdump-format libdump-profiler)
  configure_file(cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
