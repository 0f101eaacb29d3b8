#include "core_image.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "testing/pattern.h"
#include "testing/readelf.h"
#include "testing/target_process.h"

namespace libdump::procimage {
namespace {

namespace fs = std::filesystem;
using testing::PatternByte;
using testing::ReadelfBuildId;
using testing::TargetProcess;

constexpr char kRodata[] = "libdump procimage rodata marker";

std::string Slurp(const std::string& path, uintmax_t most = ~uintmax_t{0}) {
  std::ifstream in(path, std::ios::binary);
  std::string s(std::min(most, fs::file_size(path)), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  return s;
}

CoreOptions NoDisk() {
  CoreOptions o;
  o.use_disk = false;
  return o;
}
CoreOptions Executable(const std::string& path) {
  CoreOptions o;
  o.executable = path;
  return o;
}

std::string OneError(const std::string& name, const std::string& bytes) {
  try {
    CoreImage::FromBytes(name, bytes);
  } catch (const CoreError& e) {
    return e.what();
  }
  return "(opened)";
}

// One gcore of the target for every test: gdb takes a second or two.
class CoreImageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/core_image_test.XXXXXX";
    dir_ = new std::string(mkdtemp(tmpl));
    target_ = new TargetProcess(IMAGE_TARGET);
    ASSERT_TRUE(target_->ok());
    // The executable's first mapping as /proc/PID/maps shows it.
    std::ifstream maps("/proc/" + std::to_string(target_->pid()) + "/maps");
    const std::string exe = fs::canonical(IMAGE_TARGET).string();
    for (std::string line; std::getline(maps, line);)
      if (line.size() > exe.size() && line.compare(line.size() - exe.size(), exe.size(), exe) == 0) {
        exe_start_ = std::stoull(line, nullptr, 16);
        break;
      }
    const std::string prefix = *dir_ + "/core";
    const std::string cmd = "gcore -o " + prefix + " " + std::to_string(target_->pid()) + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    core_ = new std::string(prefix + "." + std::to_string(target_->pid()));
    ASSERT_TRUE(target_->Ping());  // gcore let it go
  }
  static void TearDownTestSuite() {
    delete target_;
    fs::remove_all(*dir_);
    delete dir_;
    delete core_;
  }

  static std::string* dir_;
  static std::string* core_;
  static TargetProcess* target_;
  static uint64_t exe_start_;
};
std::string* CoreImageTest::dir_;
std::string* CoreImageTest::core_;
TargetProcess* CoreImageTest::target_;
uint64_t CoreImageTest::exe_start_;

TEST_F(CoreImageTest, ThreadsAreTheTargetsWithTheirRegisters) {
  auto core = CoreImage::Open(*core_);
  ASSERT_EQ(core->Threads().size(), 4u);
  std::set<int> tids, want(target_->tids.begin(), target_->tids.end());
  for (const auto& t : core->Threads()) {
    tids.insert(t.tid);
    // Each stack pointer lies in writable memory the core holds, and the
    // thread pointer (glibc's TCB) is set.
    const ImageMapping* m = core->FindMapping(t.sp());
    ASSERT_NE(m, nullptr) << t.tid;
    EXPECT_TRUE(m->writable && m->present) << t.tid;
    EXPECT_NE(t.fs_base(), 0u);
  }
  EXPECT_EQ(tids, want);
  for (const auto& d : core->Damage()) ADD_FAILURE() << d;
  EXPECT_EQ(core->Pid(), target_->pid());
  // comm keeps 15 bytes, gdb writes the file's name whole.
  EXPECT_EQ(core->Command().substr(0, 15), "procimage_targe");
  EXPECT_EQ(core->Threads().front().name, core->Command());
  EXPECT_EQ(core->Describe(), "core file " + *core_);
}

TEST_F(CoreImageTest, ReadsThePatternBack) {
  auto core = CoreImage::Open(*core_);
  std::vector<uint8_t> got(target_->buffer_size);
  ASSERT_EQ(core->Read(target_->buffer_addr, got.data(), got.size()), got.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], PatternByte(i)) << i;
  const ImageMapping* heap = core->FindMapping(target_->buffer_addr);
  ASSERT_NE(heap, nullptr);
  EXPECT_TRUE(heap->readable && heap->writable && heap->present);
  uint32_t word = 0;
  ASSERT_TRUE(core->ReadValue(target_->buffer_addr + 100, &word));
  EXPECT_EQ(word & 0xff, PatternByte(100));
  // Past the end of the address space's last mapping nothing is read.
  EXPECT_EQ(core->Read(~uint64_t{0} - 3, got.data(), 16), 0u);
  EXPECT_EQ(core->Read(0, got.data(), 16), 0u);
}

TEST_F(CoreImageTest, ModulesAreTheExecutableAndLibcWithBuildIds) {
  auto core = CoreImage::Open(*core_);
  const std::string exe = fs::canonical(IMAGE_TARGET).string();
  const ImageModule* main = nullptr;
  const ImageModule* libc = nullptr;
  for (const auto& m : core->Modules()) {
    if (m.path == exe) main = &m;
    if (fs::path(m.path).filename() == "libc.so.6") libc = &m;
    EXPECT_LT(m.start, m.end) << m.path;
  }
  ASSERT_NE(main, nullptr);
  ASSERT_NE(libc, nullptr);
  EXPECT_TRUE(main->executable);
  EXPECT_FALSE(libc->executable);
  EXPECT_EQ(main->build_id, ReadelfBuildId(exe));
  EXPECT_FALSE(main->build_id.empty());
  EXPECT_EQ(libc->build_id, ReadelfBuildId(libc->path));
  EXPECT_FALSE(libc->build_id.empty());
  EXPECT_TRUE(main->file_matches);
  EXPECT_TRUE(libc->file_matches);
  EXPECT_EQ(main->file, exe);
  EXPECT_EQ(main->start, exe_start_);
  // A PIE links at 0: its bias is where its first byte is.
  EXPECT_EQ(main->load_bias, exe_start_);
  EXPECT_EQ(core->FindModule(target_->rodata_addr), main);
  // Only ELF files are modules (the core names no data file here, but
  // every module has its headers).
  for (const auto& m : core->Modules()) EXPECT_FALSE(m.build_id.empty()) << m.path;
}

TEST_F(CoreImageTest, ReadsLeftOutRodataFromTheMatchingFile) {
  auto core = CoreImage::Open(*core_);
  char got[sizeof kRodata] = {};
  ASSERT_EQ(core->Read(target_->rodata_addr, got, sizeof got), sizeof got);
  EXPECT_STREQ(got, kRodata);
  const ImageMapping* m = core->FindMapping(target_->rodata_addr);
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->present);
  EXPECT_FALSE(m->writable);
  // The core itself does not hold it: without the file it is absent.
  auto bare = CoreImage::Open(*core_, NoDisk());
  EXPECT_EQ(bare->Read(target_->rodata_addr, got, sizeof got), 0u);
  EXPECT_FALSE(bare->FindMapping(target_->rodata_addr)->present);
}

TEST_F(CoreImageTest, TextIsExecutableAsTheModulesFilesSay) {
  auto core = CoreImage::Open(*core_);
  // Every thread waits in libc's code: its pc lies in an executable mapping
  // of a module, though gcore's header for it says only readable.
  for (const auto& t : core->Threads()) {
    const ImageMapping* m = core->FindMapping(t.pc());
    ASSERT_NE(m, nullptr) << t.tid;
    EXPECT_TRUE(m->executable) << t.tid << " " << m->path;
    EXPECT_FALSE(m->writable) << t.tid;
  }
  // Read-only data stays not executable.
  const ImageMapping* rodata = core->FindMapping(target_->rodata_addr);
  ASSERT_NE(rodata, nullptr);
  EXPECT_FALSE(rodata->executable);
}

TEST_F(CoreImageTest, AnExplicitExecutableIsCheckedByBuildId) {
  // A copy elsewhere matches: it is used.
  const std::string copy = *dir_ + "/renamed";
  fs::copy_file(IMAGE_TARGET, copy, fs::copy_options::overwrite_existing);
  auto core = CoreImage::Open(*core_, Executable(copy));
  const ImageModule* main = nullptr;
  for (const auto& m : core->Modules())
    if (m.executable) main = &m;
  ASSERT_NE(main, nullptr);
  EXPECT_EQ(main->file, copy);
  char got[sizeof kRodata] = {};
  EXPECT_EQ(core->Read(target_->rodata_addr, got, sizeof got), sizeof got);

  // Another program does not: the module says so, the damage names it and
  // the left-out bytes stay absent rather than read from the wrong file.
  auto wrong = CoreImage::Open(*core_, Executable("/bin/true"));
  for (const auto& m : wrong->Modules())
    if (m.executable) main = &m;
  EXPECT_FALSE(main->file_matches);
  EXPECT_TRUE(main->file.empty());
  EXPECT_EQ(wrong->Read(target_->rodata_addr, got, sizeof got), 0u);
  const auto damage = wrong->Damage();
  EXPECT_TRUE(std::any_of(damage.begin(), damage.end(),
                          [](const std::string& d) { return d.find("/bin/true has build-id") != std::string::npos; }));
}

TEST_F(CoreImageTest, AReplacementBinaryIsMatchedByBuildId) {
  const std::string copy = *dir_ + "/by_build_id";
  fs::copy_file(IMAGE_TARGET, copy, fs::copy_options::overwrite_existing);
  CoreOptions options;
  options.binaries = {"/bin/true", copy};
  auto core = CoreImage::Open(*core_, options);
  int executables = 0;
  for (const auto& m : core->Modules())
    if (m.executable) {
      EXPECT_EQ(m.file, copy);
      ++executables;
    }
  EXPECT_EQ(executables, 1);
}

TEST_F(CoreImageTest, ATruncatedCoreOpensWithItsDamageOrFailsInOneLine) {
  const std::string bytes = Slurp(*core_);
  ASSERT_GT(bytes.size(), 100000u);
  for (size_t cut : {size_t{1}, size_t{17}, size_t{63}, size_t{64}, size_t{200}, size_t{2200}, size_t{70000},
                     bytes.size() / 2, bytes.size() - 40000}) {
    SCOPED_TRACE(cut);
    std::unique_ptr<CoreImage> core;
    try {
      core = CoreImage::FromBytes("cut", bytes.substr(0, cut), NoDisk());
    } catch (const CoreError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos);
      EXPECT_EQ(what.rfind("cut:", 0), 0u) << what;
      continue;
    }
    EXPECT_FALSE(core->Damage().empty());
    // Whatever survived reads without touching what is past the cut.
    std::vector<uint8_t> buf(8192);
    for (const auto& m : core->Mappings()) {
      core->Read(m.start, buf.data(), buf.size());
      core->Read(m.end - 1, buf.data(), buf.size());
    }
  }
  // gdb writes its section headers last; a core cut in them lacks nothing.
  auto last = CoreImage::FromBytes("cut", bytes.substr(0, bytes.size() - 1));
  EXPECT_TRUE(last->Damage().empty());
  EXPECT_EQ(last->Threads().size(), 4u);
  // Cut in the program headers: no core to speak of, and the offset says where.
  const uint16_t phnum = static_cast<uint8_t>(bytes[56]) | static_cast<uint8_t>(bytes[57]) << 8;
  EXPECT_EQ(OneError("cut", bytes.substr(0, 200)),
            "cut:64: " + std::to_string(phnum) + " program headers run past the end of the file (200 bytes)");
}

TEST(CoreImageBadInput, AnotherMachineNamesItsMachineAndOffset) {
  Elf64_Ehdr eh = {};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE;
  eh.e_machine = EM_AARCH64;
  eh.e_version = EV_CURRENT;
  eh.e_phentsize = sizeof(Elf64_Phdr);
  std::string bytes(reinterpret_cast<const char*>(&eh), sizeof eh);
  EXPECT_EQ(OneError("arm.core", bytes), "arm.core:18: e_machine is 183 (AArch64), not x86-64 (62)");
  bytes[16] = ET_EXEC;
  EXPECT_EQ(OneError("exe", bytes), "exe:16: e_type is 2, not a core file (ET_CORE, 4)");
  bytes[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(OneError("c32", bytes), "c32:4: ELF class 1, not 64-bit (2)");
  bytes[EI_CLASS] = ELFCLASS64;
  bytes[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(OneError("be", bytes), "be:5: ELF data encoding 2, not little-endian (1)");
  EXPECT_EQ(OneError("short", bytes.substr(0, 20)), "short:5: ELF data encoding 2, not little-endian (1)");
  bytes[EI_DATA] = ELFDATA2LSB;
  EXPECT_EQ(OneError("short", bytes.substr(0, 20)), "short:20: ELF header cut short: 20 of 64 bytes");
}

TEST_F(CoreImageTest, APatchedCoreOfAnotherMachineIsRefused) {
  std::string bytes = Slurp(*core_, 65536);
  bytes[18] = static_cast<char>(EM_AARCH64);
  bytes[19] = 0;
  EXPECT_EQ(OneError("core.arm", bytes), "core.arm:18: e_machine is 183 (AArch64), not x86-64 (62)");
}

// The fuzz target's seed: a gcore cut down to two threads' notes and three
// PT_LOADs, the way the kernel writes them: the executable's header page
// whole, the heap's first page of 33, and a thread stack with nothing in the
// file.
TEST(CoreImageSeed, AKernelStyleCoreReadsWhatItHoldsAndNoMore) {
  auto core = CoreImage::FromBytes("seed", Slurp(CORE_SEED), NoDisk());
  EXPECT_EQ(core->Threads().size(), 2u);
  for (const auto& d : core->Damage()) ADD_FAILURE() << d;
  const ImageModule* exe = nullptr;
  for (const auto& m : core->Modules())
    if (m.executable) exe = &m;
  ASSERT_NE(exe, nullptr);
  EXPECT_EQ(fs::path(exe->path).filename(), "procimage_target");
  EXPECT_EQ(exe->build_id.size(), 40u);  // from the header page the core holds
  EXPECT_FALSE(exe->file_matches);       // no disk: nothing to match
  EXPECT_EQ(exe->load_bias, exe->start);
  int heaps = 0;
  for (const auto& m : core->Mappings()) {
    if (!m.writable || !m.IsAnonymous() || m.end - m.start != 0x21000) continue;
    ++heaps;
    EXPECT_FALSE(m.present);
    std::vector<uint8_t> buf(0x21000);
    EXPECT_EQ(core->Read(m.start, buf.data(), buf.size()), 4096u);
    EXPECT_EQ(core->Read(m.start + 4096, buf.data(), 8), 0u);
  }
  EXPECT_EQ(heaps, 1);
}

TEST(CoreImageBadInput, NotAnElfFileAnEmptyFileAndNoFile) {
  EXPECT_EQ(OneError("notes.txt", "hello, world\n"), "notes.txt:0: not an ELF file (no \\177ELF magic)");
  EXPECT_EQ(OneError("tiny", "\x7f" "EL"), "tiny:0: not an ELF file (no \\177ELF magic)");
  char tmpl[] = "/tmp/core_image_empty.XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  try {
    CoreImage::Open(tmpl);
    ADD_FAILURE() << "opened an empty file";
  } catch (const CoreError& e) {
    EXPECT_EQ(std::string(e.what()), std::string(tmpl) + ":0: empty file, not an ELF core");
  }
  unlink(tmpl);
  try {
    CoreImage::Open("/nonexistent/core");
    ADD_FAILURE();
  } catch (const CoreError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/core:0: cannot open: No such file or directory");
  }
  try {
    CoreImage::Open("/tmp");
    ADD_FAILURE();
  } catch (const CoreError& e) {
    EXPECT_EQ(std::string(e.what()), "/tmp:0: not a regular file");
  }
}

}  // namespace
}  // namespace libdump::procimage
