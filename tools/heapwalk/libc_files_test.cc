#include "libc_files.h"

#include <gtest/gtest.h>

namespace libdump::heapwalk {
namespace {

constexpr const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

TEST(LibcFilesTest, TlsSlotsWithoutSymbols) {
  const LibcFiles f = ReadLibcFiles(kLibc, "", {});
  // Debian's libc is stripped: no symbols of its own, but its relocations
  // name the GOT slots of its initial-exec TLS (errno, tcache, ...).
  EXPECT_EQ(f.symbols_from, "");
  EXPECT_FALSE(f.main_arena.has_value());
  EXPECT_GE(f.tls_slots.size(), 4u);
}

TEST(LibcFilesTest, SymbolsFromTheDebugFile) {
  const LibcFiles f = ReadLibcFiles(kLibc, "", {"/usr/lib/debug"});
  if (f.symbols_from.empty()) GTEST_SKIP() << "libc6-dbg not installed";
  ASSERT_TRUE(f.main_arena && f.mp && f.tcache_tls);
  EXPECT_NE(*f.main_arena, *f.mp);
  bool slot = false;
  for (const TlsSlot& s : f.tls_slots) slot |= s.offset == *f.tcache_tls;
  EXPECT_TRUE(slot) << "no GOT slot holds tcache's offset";
}

TEST(LibcFilesTest, MismatchedBuildIdReadsNothing) {
  const LibcFiles f = ReadLibcFiles(kLibc, "00112233", {"/usr/lib/debug"});
  EXPECT_EQ(f.symbols_from, "");
  EXPECT_TRUE(f.tls_slots.empty());
}

}  // namespace
}  // namespace libdump::heapwalk
