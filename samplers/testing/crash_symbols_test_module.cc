// A library crash_symbols_test loads after the tables were prepared.
extern "C" __attribute__((noinline, visibility("default"))) int crash_symbols_test_module_function(int x) {
  return x * 7 + 1;
}
