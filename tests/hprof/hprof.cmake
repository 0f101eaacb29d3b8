# dumptohprof end to end: dumps converted and loaded by VisualVM's heap library
# (tests/hprof/HeapCheck.java), counts checked against readdump; redaction;
# bad input. Needs the visualvm package (scripts/setup.sh): without it the
# interop tests fail, they never skip.
if(TARGET dumptohprof AND TARGET readdump)
  add_executable(make_hprof_test_dump ${CMAKE_CURRENT_LIST_DIR}/make_hprof_test_dump.cc)
  target_link_libraries(make_hprof_test_dump PRIVATE libdump::format)

  set(_h ${CMAKE_CURRENT_BINARY_DIR}/hprof)
  set(_check ${CMAKE_CURRENT_LIST_DIR}/heap_check.sh $<TARGET_FILE:dumptohprof> $<TARGET_FILE:readdump>)
  add_test(NAME hprof_make_dumps COMMAND sh -c
    "mkdir -p ${_h} && $<TARGET_FILE:make_hprof_test_dump> ${_h}/kinds.dump && \
     $<TARGET_FILE:make_hprof_test_dump> ${_h}/many.dump --nodes 60000 && \
     zstd -q -f ${_h}/kinds.dump -o ${_h}/kinds.dump.zst")
  set_tests_properties(hprof_make_dumps PROPERTIES FIXTURES_SETUP hprof_dumps LABELS integration)

  # Every record kind: 2 threads, 5 frames; roots: 2 thread objects, 2 frame
  # roots of known frames (+1 of an unknown frame and 1 dropped), 2 data roots
  # (1 dropped), 3 other roots x2, 1 finalizer; 3 objects with allocation
  # stacks (+1 to no object); memstats.
  add_test(NAME hprof_visualvm_kinds COMMAND ${_check} ${_h}/kinds.dump ${_h}/kinds --
    --roots "Java frame=3" --roots "JNI global=2" --roots "thread object=2" --roots "unknown=8"
    --alloc-traces 3 --static libdump.MemStats.mallocs=42 --static libdump.MemStats.heap_inuse=123456)
  # Compressed input, read directly.
  add_test(NAME hprof_visualvm_zstd COMMAND ${_check} ${_h}/kinds.dump.zst ${_h}/zstd)
  # Segment splitting on a real reader: 1 MiB segments.
  add_test(NAME hprof_visualvm_segments COMMAND ${_check} ${_h}/many.dump ${_h}/many --segment-mb 1)
  set_tests_properties(hprof_visualvm_kinds hprof_visualvm_zstd hprof_visualvm_segments PROPERTIES
    FIXTURES_REQUIRED hprof_dumps LABELS integration TIMEOUT 600)

  # The hprof writer alone, as a non-Java producer uses it (format/hprof/hprof_synthetic.cc).
  add_test(NAME hprof_visualvm_writer_synthetic COMMAND sh -c
    "mkdir -p ${_h}/synthetic && $<TARGET_FILE:hprof_synthetic> ${_h}/synthetic/synthetic.hprof >/dev/null && \
     ${CMAKE_CURRENT_LIST_DIR}/heap_check.sh $<TARGET_FILE:dumptohprof> $<TARGET_FILE:readdump> \
     ${_h}/synthetic/synthetic.hprof ${_h}/synthetic -- --threads 1 --frames 2 \
     --roots 'Java frame=1' --roots 'JNI global=1' --roots 'thread object=1' --roots unknown=2")
  set_tests_properties(hprof_visualvm_writer_synthetic PROPERTIES LABELS integration TIMEOUT 600)

  # The testdata dumps of readdump.
  add_test(NAME hprof_visualvm_testdata_full COMMAND ${_check} ${PROJECT_SOURCE_DIR}/testdata/full.dump ${_h}/full --
    --alloc-traces 1)
  set_tests_properties(hprof_visualvm_testdata_full PROPERTIES LABELS integration TIMEOUT 600)
  # The example program's dump.
  if(TARGET sample_dump)
    add_test(NAME hprof_visualvm_sample_dump COMMAND sh -c
      "mkdir -p ${_h} && $<TARGET_FILE:sample_dump> ${_h}/sample.dump --nodes 5000 >/dev/null && \
       ${CMAKE_CURRENT_LIST_DIR}/heap_check.sh $<TARGET_FILE:dumptohprof> $<TARGET_FILE:readdump> \
       ${_h}/sample.dump ${_h}/sample")
    set_tests_properties(hprof_visualvm_sample_dump PROPERTIES LABELS integration TIMEOUT 600)
  endif()
  if(TARGET heap_dump_example)
    add_test(NAME hprof_visualvm_heap_dump_example COMMAND sh -c
      "mkdir -p ${_h} && $<TARGET_FILE:heap_dump_example> ${_h}/example.dump >/dev/null && \
       ${CMAKE_CURRENT_LIST_DIR}/heap_check.sh $<TARGET_FILE:dumptohprof> $<TARGET_FILE:readdump> \
       ${_h}/example.dump ${_h}/example")
    set_tests_properties(hprof_visualvm_heap_dump_example PROPERTIES LABELS "integration;no_asan" TIMEOUT 300)
  endif()

  # The independent checker of ../shared, when the checkout has it (the
  # project's own tests above do not need it).
  get_filename_component(_shared_check ${PROJECT_SOURCE_DIR}/../shared/tools/hprof-check/hprof-check.sh ABSOLUTE)
  if(EXISTS ${_shared_check})
    add_test(NAME hprof_shared_check_kinds COMMAND sh -c
      "mkdir -p ${_h}/shared && $<TARGET_FILE:dumptohprof> -q --force ${_h}/kinds.dump ${_h}/shared/kinds.hprof &&        ${_shared_check} ${_h}/shared/kinds.hprof > ${_h}/shared/kinds.out 2>&1; rc=$?; cat ${_h}/shared/kinds.out;        [ $rc -eq 0 ] && grep -q '^RESULT: OK' ${_h}/shared/kinds.out && ! grep -q '^PROBLEM' ${_h}/shared/kinds.out")
    set_tests_properties(hprof_shared_check_kinds PROPERTIES FIXTURES_REQUIRED hprof_dumps LABELS integration
      TIMEOUT 600)
  endif()

  # HeapCheck's raw-record rules (those of Eclipse MAT and jhat): a valid file
  # passes, and each deliberately broken one fails with its own PROBLEM line.
  add_executable(make_broken_hprofs ${CMAKE_CURRENT_LIST_DIR}/make_broken_hprofs.cc)
  target_link_libraries(make_broken_hprofs PRIVATE libdump::hprof)
  add_test(NAME hprof_check_catches_broken_files COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/broken_check.sh
    $<TARGET_FILE:make_broken_hprofs> ${CMAKE_CURRENT_LIST_DIR}/heap_check.sh $<TARGET_FILE:dumptohprof>
    $<TARGET_FILE:readdump> ${_h}/broken)
  set_tests_properties(hprof_check_catches_broken_files PROPERTIES LABELS integration TIMEOUT 600)

  add_test(NAME hprof_cli COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cli_test.sh $<TARGET_FILE:dumptohprof>
    ${_h}/kinds.dump ${_h}/cli)
  set_tests_properties(hprof_cli PROPERTIES FIXTURES_REQUIRED hprof_dumps LABELS integration)
endif()
