#include "module_list.h"

#include <gtest/gtest.h>
#include <sys/auxv.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "live_image.h"
#include "testing/readelf.h"

namespace libdump::procimage {
namespace {

namespace fs = std::filesystem;

// This process's own mappings, read from its own memory.
std::vector<ImageMapping> OwnMappings() {
  std::vector<ImageMapping> out;
  EXPECT_TRUE(ReadMapsFile("/proc/self/maps", &out));
  return out;
}

size_t ReadOwn(uint64_t addr, void* out, size_t n) {
  std::ifstream mem("/proc/self/mem", std::ios::binary);
  mem.seekg(static_cast<std::streamoff>(addr));
  mem.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
  return static_cast<size_t>(std::max<std::streamsize>(0, mem.gcount()));
}

ModuleOptions Own() {
  ModuleOptions o;
  o.read_image = ReadOwn;
  o.entry = getauxval(AT_ENTRY);
  return o;
}

TEST(ModuleList, ThisProcessesModules) {
  const auto maps = OwnMappings();
  const ModuleList list = BuildModules(maps, Own());
  const std::string self = fs::canonical("/proc/self/exe").string();
  const ImageModule* exe = nullptr;
  int executables = 0;
  for (const auto& m : list.modules) {
    if (m.path == self) exe = &m;
    executables += m.executable;
    EXPECT_TRUE(m.file_matches) << m.path;
    EXPECT_EQ(m.build_id, testing::ReadelfBuildId(m.path)) << m.path;
  }
  ASSERT_NE(exe, nullptr);
  EXPECT_TRUE(exe->executable);
  EXPECT_EQ(executables, 1);
  // The bias of a PIE is where its first byte is mapped: a function's
  // address less the bias is its link-time address, below the file's end.
  const uint64_t fn = reinterpret_cast<uint64_t>(&OwnMappings);
  EXPECT_GE(fn, exe->start);
  EXPECT_LT(fn, exe->end);
  EXPECT_LT(fn - exe->load_bias, fs::file_size(self));
  for (const auto& d : list.damage) ADD_FAILURE() << d;
}

TEST(ModuleList, ADataFileIsNoModule) {
  const auto maps = OwnMappings();
  std::vector<ImageMapping> data = {ImageMapping{.start = 0x10000, .end = 0x11000, .readable = true,
                                                 .path = "/etc/passwd", .present = true}};
  ModuleOptions o;
  o.read_image = [](uint64_t, void* out, size_t n) {
    std::memset(out, 'x', n);
    return n;
  };
  EXPECT_TRUE(BuildModules(data, o).modules.empty());
  // Not in the image either: still not a module, by its name.
  o.read_image = nullptr;
  EXPECT_TRUE(BuildModules(data, o).modules.empty());
}

TEST(ModuleList, WithoutTheHeadersTheFileIsTakenOnTrustAndSaidSo) {
  const std::string self = fs::canonical("/proc/self/exe").string();
  std::vector<ImageMapping> maps = {ImageMapping{.start = 0x400000, .end = 0x401000, .readable = true, .path = self}};
  ModuleOptions o;
  o.read_image = [](uint64_t, void*, size_t) { return size_t{0}; };
  const ModuleList list = BuildModules(maps, o);
  ASSERT_EQ(list.modules.size(), 1u);
  EXPECT_TRUE(list.modules[0].file_matches);
  EXPECT_EQ(list.modules[0].build_id, testing::ReadelfBuildId(self));
  EXPECT_EQ(list.modules[0].load_bias, 0x400000u);
  ASSERT_EQ(list.damage.size(), 1u);
  EXPECT_EQ(list.damage[0], self + ": the image lacks the file's headers; " + self + " is used unchecked");
}

TEST(ModuleList, AMissingLibraryIsAModuleWithoutAFile) {
  std::vector<ImageMapping> maps = {
      ImageMapping{.start = 0x7000000, .end = 0x7001000, .readable = true, .path = "/gone/libgone.so.1"}};
  const ModuleList list = BuildModules(maps, ModuleOptions{});
  ASSERT_EQ(list.modules.size(), 1u);
  EXPECT_FALSE(list.modules[0].file_matches);
  EXPECT_TRUE(list.modules[0].file.empty());
  ASSERT_EQ(list.damage.size(), 1u);
  EXPECT_EQ(list.damage[0],
            "/gone/libgone.so.1: /gone/libgone.so.1 is not readable as ELF; its left-out mappings are absent");
  // Without disk access nothing is said about files.
  ModuleOptions no_disk;
  no_disk.use_disk = false;
  EXPECT_TRUE(BuildModules(maps, no_disk).damage.empty());
}

}  // namespace
}  // namespace libdump::procimage
