#include "elf_file.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "testing/readelf.h"

namespace libdump::procimage {
namespace {

std::string Head(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

TEST(ElfFile, TheTargetsBuildIdAndSegments) {
  const ElfInfo info = ReadElfFile(IMAGE_TARGET);
  ASSERT_TRUE(info.is_elf);
  EXPECT_EQ(info.build_id, testing::ReadelfBuildId(IMAGE_TARGET));
  EXPECT_EQ(info.build_id.size(), 40u);  // GNU ld's default: SHA-1
  ASSERT_FALSE(info.loads.empty());
  // A PIE links its first byte at 0; its code segment is executable, its
  // data writable.
  EXPECT_TRUE(info.has_base);
  EXPECT_EQ(info.base_vaddr, 0u);
  bool code = false, data = false;
  for (const auto& l : info.loads) {
    code |= l.executable && !l.writable;
    data |= l.writable && !l.executable;
    EXPECT_LE(l.filesz, l.memsz);
  }
  EXPECT_TRUE(code && data);
}

TEST(ElfFile, TheFilesFirstPageGivesTheSame) {
  const ElfInfo whole = ReadElfFile(IMAGE_TARGET);
  const std::string page = Head(IMAGE_TARGET, 4096);
  const ElfInfo head = ReadElfBytes(page.data(), page.size());
  ASSERT_TRUE(head.is_elf);
  EXPECT_EQ(head.build_id, whole.build_id);
  EXPECT_EQ(head.loads.size(), whole.loads.size());
  EXPECT_EQ(head.base_vaddr, whole.base_vaddr);
}

TEST(ElfFile, WhatIsNotOursIsNoElf) {
  std::string page = Head(IMAGE_TARGET, 4096);
  EXPECT_FALSE(ReadElfBytes(page.data(), 10).is_elf);
  page[EI_DATA] = ELFDATA2MSB;  // would be converted in place: refused first
  EXPECT_FALSE(ReadElfBytes(page.data(), page.size()).is_elf);
  page[EI_DATA] = ELFDATA2LSB;
  page[EI_CLASS] = ELFCLASS32;
  EXPECT_FALSE(ReadElfBytes(page.data(), page.size()).is_elf);
  EXPECT_FALSE(ReadElfBytes("hello", 5).is_elf);
  EXPECT_FALSE(ReadElfFile("/nonexistent").is_elf);
  EXPECT_FALSE(ReadElfFile("/tmp").is_elf);
  EXPECT_EQ(OpenRegularFile("/tmp"), -1);
}

TEST(ElfFile, AFifoIsRefusedWithoutBlocking) {
  char dir[] = "/tmp/elf_file_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // No writer: a blocking open would wait for ever.
  EXPECT_FALSE(ReadElfFile(fifo).is_elf);
  unlink(fifo.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace libdump::procimage
