#include "live_copy.h"

#include <gtest/gtest.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "testing/pattern.h"
#include "testing/target_process.h"

namespace libdump::procimage {
namespace {

using testing::PatternByte;
using testing::TargetProcess;

char State(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
}

std::string TempDir() {
  const auto dir = std::filesystem::temp_directory_path() / ("live_copy_test." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(LiveCopy, HoldsTheMemoryAsItWasWhileStoppedAndLetsTheTargetGo) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  const std::string dir = TempDir();
  {
    auto copy = LiveCopy::Take(LiveImage::Attach(target.pid()), dir);
    // Let go before anything is read from the copy.
    EXPECT_NE(State(target.pid()), 't');
    EXPECT_TRUE(target.Ping());
    EXPECT_GT(copy->StoppedFor().count(), 0);
    EXPECT_GE(copy->CopiedBytes(), target.buffer_size);
    ASSERT_EQ(copy->Threads().size(), 4u);
    // The file is unlinked: nothing is left in dir.
    EXPECT_TRUE(std::filesystem::is_empty(dir));

    // The target changes its buffer after the copy: the copy keeps the old bytes.
    std::vector<uint8_t> changed(target.buffer_size, 0xee);
    iovec local{changed.data(), changed.size()}, remote{reinterpret_cast<void*>(target.buffer_addr), changed.size()};
    ASSERT_EQ(process_vm_writev(target.pid(), &local, 1, &remote, 1, 0), static_cast<ssize_t>(changed.size()));
    std::vector<uint8_t> got(target.buffer_size);
    ASSERT_EQ(copy->Read(target.buffer_addr, got.data(), got.size()), got.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], PatternByte(i)) << i;

    // Read-only data is not copied; it comes from the running process.
    char rodata[32] = {};
    ASSERT_EQ(copy->Read(target.rodata_addr, rodata, sizeof rodata), sizeof rodata);
    EXPECT_STREQ(rodata, "libdump procimage rodata marker");
    EXPECT_EQ(copy->Read(0, got.data(), 8), 0u);
    // A read across the end of a mapping stops there, as the process's would.
    const ImageMapping* m = copy->FindMapping(target.buffer_addr);
    ASSERT_NE(m, nullptr);
    uint8_t tail[16];
    const size_t at_end = copy->Read(m->end - 8, tail, sizeof tail);
    EXPECT_GE(at_end, 8u);
    for (const auto& d : copy->Damage()) ADD_FAILURE() << d;
  }
  EXPECT_TRUE(target.Ping());
  const int status = target.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::filesystem::remove_all(dir);
}

TEST(LiveCopy, NoDirectoryLetsTheTargetGoWithOneLine) {
  TargetProcess target(IMAGE_TARGET);
  ASSERT_TRUE(target.ok());
  try {
    LiveCopy::Take(LiveImage::Attach(target.pid()), "/nonexistent/dir");
    ADD_FAILURE() << "no error";
  } catch (const LiveError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/dir: no temporary file for the copy of process ", 0), 0u)
        << e.what();
  }
  EXPECT_NE(State(target.pid()), 't');
  EXPECT_TRUE(target.Ping());
}

}  // namespace
}  // namespace libdump::procimage
