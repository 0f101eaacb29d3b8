#include "samplers/symbolize/crash_symbols.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace crash_symbols_probe {
// Out of line and not folded with anything: its address is its own.
__attribute__((noinline)) int Probe(int x) {
  asm volatile("" : "+r"(x));
  return x * 3 + 11;
}
}  // namespace crash_symbols_probe

namespace {

using namespace libdump::samplers;

uintptr_t Addr(const void* f) { return reinterpret_cast<uintptr_t>(f); }

// Prepared once for the whole program, as the recorder does at start.
class CrashSymbolsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(crash_symbols::Prepare());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const crash_symbols::Stats st = crash_symbols::CurrentStats();
    // The cost figures of docs/FLIGHT_RECORDER.md come from the preload;
    // this is the same work in a small program.
    std::printf("crash symbols prepared: %zu modules, %zu functions, %zu bytes mapped, %.1f ms\n", st.modules,
                st.symbols, st.bytes, ms);
  }
};

TEST_F(CrashSymbolsTest, NamesAFunctionOfTheProgramDemangled) {
  const uintptr_t f = Addr(reinterpret_cast<const void*>(&crash_symbols_probe::Probe));
  EXPECT_EQ(crash_symbols::Lookup(f), "crash_symbols_probe::Probe(int)");
  EXPECT_EQ(crash_symbols::Lookup(f + 4), "crash_symbols_probe::Probe(int)");
}

TEST_F(CrashSymbolsTest, NamesALibraryFunction) {
  // libc's getpid, found through the loader rather than a PLT stub.
  void* f = dlsym(RTLD_DEFAULT, "getpid");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(crash_symbols::Lookup(Addr(f)).find("getpid"), std::string_view::npos) << crash_symbols::Lookup(Addr(f));
}

TEST_F(CrashSymbolsTest, NothingOutsideModules) {
  EXPECT_TRUE(crash_symbols::Lookup(0).empty());
  EXPECT_TRUE(crash_symbols::Lookup(16).empty());
  int on_stack = 0;
  EXPECT_TRUE(crash_symbols::Lookup(Addr(&on_stack)).empty());
}

// What the crash handler does: a lookup inside a signal handler.
std::string_view g_in_handler;
void Handler(int) {
  g_in_handler = crash_symbols::Lookup(Addr(reinterpret_cast<const void*>(&crash_symbols_probe::Probe)) + 1);
}

TEST_F(CrashSymbolsTest, LooksUpInsideASignalHandler) {
  struct sigaction sa {}, old {};
  sa.sa_handler = Handler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  raise(SIGUSR1);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(g_in_handler, "crash_symbols_probe::Probe(int)");
}

TEST_F(CrashSymbolsTest, ALibraryLoadedLaterIsNamedAfterTheNextPrepare) {
  EXPECT_FALSE(crash_symbols::Stale());
  void* h = dlopen(LIBDUMP_TEST_MODULE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  void* f = dlsym(h, "crash_symbols_test_module_function");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(crash_symbols::Stale());
  EXPECT_TRUE(crash_symbols::Lookup(Addr(f)).empty());
  const size_t before = crash_symbols::CurrentStats().modules;
  ASSERT_TRUE(crash_symbols::Prepare());
  EXPECT_FALSE(crash_symbols::Stale());
  EXPECT_EQ(crash_symbols::Lookup(Addr(f)), "crash_symbols_test_module_function");
  EXPECT_EQ(crash_symbols::CurrentStats().modules, before + 1);
  // The program's own names are still there (its table was reused).
  EXPECT_EQ(crash_symbols::Lookup(Addr(reinterpret_cast<const void*>(&crash_symbols_probe::Probe))),
            "crash_symbols_probe::Probe(int)");
  // A lookup in the unloaded library's old range finds nothing once the
  // next snapshot no longer has it.
  ASSERT_EQ(dlclose(h), 0);
  if (crash_symbols::Stale()) {
    ASSERT_TRUE(crash_symbols::Prepare());
    EXPECT_EQ(crash_symbols::CurrentStats().modules, before);
  }
}

}  // namespace
