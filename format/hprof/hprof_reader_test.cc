#include "libdump/format/hprof_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "testing/hprof_reader_testutil.h"

namespace libdump::format::hprof {
namespace {

// One line per call.
class Log final : public HprofVisitor {
 public:
  void Header(std::string_view f, uint32_t id, uint64_t ts) override { o << f << " id=" << id << " ts=" << ts << '\n'; }
  void Utf8(uint64_t id, std::string_view t) override { o << "utf8 " << id << ' ' << t << '\n'; }
  void LoadClass(uint32_t s, uint64_t c, uint32_t t, uint64_t n) override {
    o << "class " << s << ' ' << c << ' ' << t << ' ' << n << '\n';
  }
  void Frame(uint64_t id, uint64_t m, uint64_t, uint64_t, uint32_t cs, int32_t line) override {
    o << "frame " << id << ' ' << m << ' ' << cs << ' ' << line << '\n';
  }
  void Trace(uint32_t s, uint32_t t, std::span<const uint64_t> f) override {
    o << "trace " << s << ' ' << t;
    for (uint64_t x : f) o << ' ' << x;
    o << '\n';
  }
  void StartThread(uint32_t s, uint64_t t, uint32_t tr, uint64_t n) override {
    o << "thread " << s << ' ' << t << ' ' << tr << ' ' << n << '\n';
  }
  void Root(uint64_t, const HprofRoot& r) override {
    o << "root " << RootKindName(r.kind) << ' ' << std::hex << r.object << std::dec << ' ' << r.extra_id << ' '
      << r.thread_serial << ' ' << r.depth << '\n';
  }
  void ClassDump(uint64_t, const HprofClass& c) override {
    o << "classdump " << c.id << " super=" << c.super << " size=" << c.instance_size;
    for (const auto& s : c.statics) o << " static " << s.name << ':' << int{s.type} << '=' << s.value;
    for (const auto& f : c.fields) o << " field " << f.name << ':' << int{f.type};
    o << '\n';
  }
  void Instance(uint64_t off, uint64_t id, uint32_t, uint64_t c, std::span<const uint8_t> f) override {
    o << "instance " << std::hex << id << std::dec << ' ' << c << " bytes=" << f.size() << " last=" << int{f.back()}
      << '\n';
    offsets.push_back(off);
  }
  void ObjArray(uint64_t off, uint64_t id, uint32_t, uint64_t c, uint32_t n) override {
    o << "objarray " << std::hex << id << std::dec << ' ' << c << " n=" << n;
    offsets.push_back(off);
  }
  void ObjArrayElements(std::span<const uint64_t> ids) override {
    for (uint64_t x : ids) o << ' ' << std::hex << x << std::dec;
    o << '\n';
  }
  void PrimArray(uint64_t off, uint64_t id, uint32_t, uint8_t t, uint32_t n) override {
    o << "primarray " << std::hex << id << std::dec << " type=" << int{t} << " n=" << n << ' ';
    offsets.push_back(off);
  }
  void PrimArrayBytes(std::span<const uint8_t> b) override {
    for (uint8_t c : b) if (c) o << static_cast<char>(c);
    o << '\n';
  }
  void HeapDumpEnd(uint64_t) override { o << "end\n"; }
  std::ostringstream o;
  std::vector<uint64_t> offsets;
};

constexpr const char* kExpected =
    "JAVA PROFILE 1.0.2 id=8 ts=1234\n"
    "trace 1 0\n"
    "utf8 100 Node\nutf8 101 next\nutf8 102 val\nutf8 103 main\n"
    "class 1 200 1 100\n"
    "frame 300 103 1 42\n"
    "trace 2 1 300\n"
    "thread 1 500 2 103\n"
    "classdump 200 super=0 size=12 static 101:2=4096 static 102:10=7 field 101:2 field 102:10\n"
    "root unknown 1000 0 0 0\n"
    "root JNI global 1010 153 0 0\n"
    "root Java frame 1000 0 1 0\n"
    "root thread object 1f4 0 1 2\n"
    "instance 1000 200 bytes=12 last=5\n"
    "instance 1010 200 bytes=12 last=6\n"
    "objarray 1020 200 n=3 1000 0 1010\n"
    "primarray 1030 type=5 n=2 hi\n"
    "end\n";

std::string Span(const std::string& s, HprofReaderOptions o = {}) {
  HprofReader r({reinterpret_cast<const uint8_t*>(s.data()), s.size()}, o);
  Log log;
  r.Read(log);
  return log.o.str();
}

std::string ErrorOf(const std::string& s) {
  try {
    Span(s);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

TEST(HprofReader, ReadsEveryRecordKind) { EXPECT_EQ(Span(testing::SampleHprof()), kExpected); }

TEST(HprofReader, SegmentsReadAsOneHeap) {
  const std::string s = testing::SampleHprof(40);
  std::string want = kExpected;
  EXPECT_EQ(Span(s), want);
}

TEST(HprofReader, FileAndPipeReadAsMemory) {
  const std::string s = testing::SampleHprof(40);
  char path[] = "/tmp/hprof_reader_testXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  {
    HprofReader r(fd, {.buffer_size = 16});  // every record straddles the buffer
    Log log;
    r.Read(log);
    EXPECT_EQ(log.o.str(), kExpected);
    // Sub-records again, from their offsets.
    Log again;
    for (uint64_t off : log.offsets) r.ReadSubRecordAt(off, again);
    EXPECT_EQ(again.o.str(), "instance 1000 200 bytes=12 last=5\ninstance 1010 200 bytes=12 last=6\n"
                             "objarray 1020 200 n=3 1000 0 1010\nprimarray 1030 type=5 n=2 hi\n");
  }
  close(fd);
  unlink(path);
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(write(p[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
  close(p[1]);
  HprofReader r(p[0], {.buffer_size = 16});
  Log log;
  r.Read(log);
  EXPECT_EQ(log.o.str(), kExpected);
  close(p[0]);
}

// Four-byte ids, a 1.0.1 header, one HEAP DUMP record, built byte by byte.
TEST(HprofReader, FourByteIds) {
  std::string s("JAVA PROFILE 1.0.1", 19);
  auto u4 = [&](uint32_t v) { for (int i = 3; i >= 0; --i) s.push_back(static_cast<char>(v >> (8 * i))); };
  u4(4); u4(0); u4(9);
  s.push_back(0x01); u4(0); u4(4 + 3); u4(7); s += "Foo";
  s.push_back(0x0C); u4(0); u4(1 + 4 + 4 + 4 + 4 + 2 * 4);
  s.push_back(0x22); u4(0x50); u4(1); u4(2); u4(0x60); u4(0x50); u4(0);
  EXPECT_EQ(Span(s), "JAVA PROFILE 1.0.1 id=4 ts=9\nutf8 7 Foo\nobjarray 50 96 n=2 50 0\n");
}

TEST(HprofReader, BadInputIsOneError) {
  const std::string good = testing::SampleHprof();
  EXPECT_EQ(ErrorOf("JAVA PROFILE 1.0.3" + std::string(1, '\0')), "0: header: not a JAVA PROFILE 1.0.1 or 1.0.2 file");
  std::string bad_id = good;
  bad_id[22] = 5;
  EXPECT_EQ(ErrorOf(bad_id), "19: header: id size 5, expected 4 or 8");
  // A UTF8 record claiming 4 GiB: refused from the file size, nothing allocated.
  std::string giant = good.substr(0, 31 + 21) + std::string("\x01\0\0\0\0\xff\xff\xff\xf0", 9) + "xx";
  EXPECT_EQ(ErrorOf(giant), "52: UTF8: length 4294967280 runs past the end of the file (2 bytes left)");
  // Every truncation inside a record is an error at that record, never a crash.
  int errors = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    const std::string e = ErrorOf(good.substr(0, n));
    if (e != "no error") ++errors;
  }
  EXPECT_GT(errors, static_cast<int>(good.size()) * 9 / 10);
}

TEST(HprofReader, SubRecordPastItsSegment) {
  // Shrink the heap segment's length by one: its last sub-record overruns it.
  std::string s = testing::SampleHprof();
  const size_t seg = s.find(std::string("\x1c\0\0\0\0", 5));
  ASSERT_NE(seg, std::string::npos);
  s[seg + 8] = static_cast<char>(s[seg + 8] - 1);
  const std::string e = ErrorOf(s);
  EXPECT_NE(e.find(": PRIM ARRAY DUMP: runs past the end of its segment"), std::string::npos) << e;
}

TEST(HprofReader, LimitsBoundRecords) {
  const std::string e = [] {
    try {
      Span(testing::SampleHprof(), {.max_record = 8});
    } catch (const FormatError& x) {
      return std::string(x.what());
    }
    return std::string("none");
  }();
  EXPECT_EQ(e, "31: TRACE: length 12 exceeds the limit of 8");
}

}  // namespace
}  // namespace libdump::format::hprof
