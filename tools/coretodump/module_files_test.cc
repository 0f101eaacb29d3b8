#include "module_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>

namespace libdump::coretodump {
namespace {

std::string SelfPath() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

TEST(ModuleFiles, ABinaryStandsForTheModuleOfItsBuildId) {
  const std::string self = SelfPath();
  const std::string id = FileBuildId(self);
  ASSERT_EQ(id.size(), 40u) << id;  // GCC's default sha1 build-id
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  ModuleFiles files({self, "/nonexistent/file"});
  ASSERT_EQ(files.problems().size(), 1u);
  procimage::ImageModule m;
  m.path = "/somewhere/else";
  m.build_id = id;
  EXPECT_EQ(files.FileFor(m), self);
  m.build_id = "00";
  EXPECT_EQ(files.FileFor(m), "");  // neither matched nor given
  m.file = "/matched/by/the/image";
  EXPECT_EQ(files.FileFor(m), "/matched/by/the/image");
}

TEST(ModuleFiles, NoBuildIdOfWhatIsNoElfFile) {
  EXPECT_EQ(FileBuildId("/proc/self/status"), "");
  EXPECT_EQ(FileBuildId("/nonexistent"), "");
}

}  // namespace
}  // namespace libdump::coretodump
