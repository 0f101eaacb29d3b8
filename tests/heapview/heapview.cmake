# heapview end to end: the CLI (bad input, listening), concurrent requests,
# and a real browser (Debian's chromium driven by npm's puppeteer-core,
# tests/heapview/browser) following links on the test dump of
# tests/heapview/heapview_test_dump.h.
if(TARGET heapview AND TARGET dumptohprof)
  add_executable(make_heapview_dump ${CMAKE_CURRENT_LIST_DIR}/make_heapview_dump.cc)
  target_link_libraries(make_heapview_dump PRIVATE libdump::format)
  set(_hv ${CMAKE_CURRENT_BINARY_DIR}/heapview)
  add_test(NAME heapview_make_dump COMMAND sh -c
    "mkdir -p ${_hv} && $<TARGET_FILE:make_heapview_dump> ${_hv}/graph.dump && \
     $<TARGET_FILE:dumptohprof> -q --force ${_hv}/graph.dump ${_hv}/graph.hprof")
  set_tests_properties(heapview_make_dump PROPERTIES FIXTURES_SETUP heapview_dump LABELS integration)

  add_test(NAME heapview_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_test.sh $<TARGET_FILE:heapview>
    ${_hv}/graph.dump ${_hv}/graph.hprof ${_hv}/cli)
  set_tests_properties(heapview_cli PROPERTIES FIXTURES_REQUIRED heapview_dump LABELS integration TIMEOUT 120)
  # Descriptors exhausted by slow clients, --threads bounded, methods and
  # Host, loopback spellings.
  add_test(NAME heapview_exhaustion COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/exhaustion_test.sh
    $<TARGET_FILE:heapview> ${_hv}/graph.dump ${_hv}/exhaustion)
  set_tests_properties(heapview_exhaustion PROPERTIES FIXTURES_REQUIRED heapview_dump LABELS integration TIMEOUT 120)

  # Ctrl-C while indexing, in RAM and under --memory: no index is left that a
  # later open would trust.
  add_test(NAME heapview_interrupt COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/interrupt_test.sh
    $<TARGET_FILE:heapview> $<TARGET_FILE:make_heapview_dump> ${_hv}/interrupt)
  set_tests_properties(heapview_interrupt PROPERTIES LABELS integration TIMEOUT 300 SKIP_RETURN_CODE 77)

  # What heapview serves while a dump opens, the open held mid-phase
  # (--hold-open): the waiting page, /progress.json, 503 for the API, the
  # listening before the open; and in chromium, the page becoming the summary.
  add_test(NAME heapview_waiting COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/waiting_test.sh
    $<TARGET_FILE:heapview> $<TARGET_FILE:make_heapview_dump> ${_hv}/waiting)
  set_tests_properties(heapview_waiting PROPERTIES LABELS integration TIMEOUT 300)
  add_test(NAME heapview_waiting_browser COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/waiting_test.sh
    $<TARGET_FILE:heapview> $<TARGET_FILE:make_heapview_dump> ${_hv}/waiting_browser browser)
  set_tests_properties(heapview_waiting_browser PROPERTIES LABELS integration TIMEOUT 300)

  # --memory end to end: readdump's answers under a 1 MiB budget equal the
  # in-RAM ones; bad sizes are usage errors.
  if(TARGET readdump)
    add_test(NAME heapview_memory COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/memory_test.sh
      $<TARGET_FILE:heapview> $<TARGET_FILE:readdump> $<TARGET_FILE:make_heapview_dump> ${_hv}/memory)
    set_tests_properties(heapview_memory PROPERTIES LABELS integration TIMEOUT 300)
  endif()

  # The pictures (summary bars, flame graph, sorting) in chromium on the test
  # dump and 10^6 objects in lists under 20,431 roots; the flame graph against readdump
  # --dominators and its folded stacks in speedscope. About 45 s on the
  # shared 2-core machine, most of it chromium starting and the 10^6 open.
  if(TARGET readdump)
    add_test(NAME heapview_pictures COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pictures_test.sh $<TARGET_FILE:heapview>
      $<TARGET_FILE:readdump> $<TARGET_FILE:make_heapview_dump> ${_hv}/pictures 1000000)
    set_tests_properties(heapview_pictures PROPERTIES LABELS integration TIMEOUT 180)
  endif()

  # Chromium cannot run under ASan's interceptors' process (it is not
  # instrumented, and heapview is only its server), but heapview under ASan is
  # still exercised: the browser talks to the ASan build of heapview.
  add_test(NAME heapview_browser COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/browser_test.sh $<TARGET_FILE:heapview>
    ${_hv}/graph.dump ${_hv}/browser)
  set_tests_properties(heapview_browser PROPERTIES FIXTURES_REQUIRED heapview_dump LABELS integration TIMEOUT 180)
endif()
