// Runs the readdump binary ($LIBDUMP_BINDIR/tools/readdump/readdump) on the
// dumps of $LIBDUMP_TESTDATA and on malformed variants of them.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "libdump/format/record.h"
#include "libdump/format/sink.h"
#include "libdump/format/uvarint.h"

namespace {

using libdump::format::kHeader;

// $LIBDUMP_BINDIR and $LIBDUMP_TESTDATA when set, else the build's own paths.
std::string Readdump() {
  const char* dir = std::getenv("LIBDUMP_BINDIR");
  return dir != nullptr && *dir != '\0' ? std::string(dir) + "/tools/readdump/readdump" : READDUMP_BINARY;
}
std::string TestData() {
  const char* dir = std::getenv("LIBDUMP_TESTDATA");
  return dir != nullptr && *dir != '\0' ? dir : READDUMP_TESTDATA;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

std::string V(uint64_t v) {
  uint8_t b[libdump::format::kMaxUvarintLen];
  return std::string(reinterpret_cast<char*>(b), libdump::format::PutUvarint(b, v));
}

// Sanitizer runtimes reserve terabytes of address space, so an address-space
// limit only works on a plain build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCanLimitAddressSpace = false;
#else
constexpr bool kCanLimitAddressSpace = true;
#endif

constexpr rlim_t kAddressSpaceLimit = 256ull << 20;

struct Result {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
};

// Runs readdump with `args` in `cwd`, under a CPU-time limit (no input may make
// it hang) and, where possible, a 256 MiB address-space limit (no input may
// make it allocate without bound).
Result RunReaddump(const std::vector<std::string>& args, const std::string& cwd = "") {
  static int serial = 0;
  const std::string base = ::testing::TempDir() + "readdump_cli_" + std::to_string(getpid()) + "_" +
                           std::to_string(serial++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  const pid_t pid = fork();
  if (pid == 0) {
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
    const rlimit cpu{20, 20};
    setrlimit(RLIMIT_CPU, &cpu);
    if (kCanLimitAddressSpace) {
      const rlimit as{kAddressSpaceLimit, kAddressSpaceLimit};
      setrlimit(RLIMIT_AS, &as);
    }
    std::vector<std::string> argv_s = {Readdump()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return r;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "readdump_cli_XXXXXX";
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    if (DIR* d = opendir(path_.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..") unlink((path_ + "/" + n).c_str());
      }
      closedir(d);
    }
    rmdir(path_.c_str());
  }
  // Writes bytes to a file of this directory and returns its path.
  std::string File(const std::string& name, const std::string& bytes) const {
    const std::string p = path_ + "/" + name;
    WriteFile(p, bytes);
    return p;
  }

 private:
  std::string path_;
};

// The offset of a one-line error "FILE:OFFSET: ...", or -1 if err is not one.
long long ErrorOffset(const Result& r, const std::string& file) {
  const std::string prefix = file + ":";
  if (r.err.rfind(prefix, 0) != 0 || std::count(r.err.begin(), r.err.end(), '\n') != 1 ||
      r.err.back() != '\n') {
    return -1;
  }
  size_t used = 0;
  const std::string rest = r.err.substr(prefix.size());
  const long long off = std::stoll(rest, &used);
  return rest.compare(used, 2, ": ") == 0 ? off : -1;
}

// Expects exit 1 and one error line at `offset` whose text contains `what`.
void ExpectError(const std::string& file, const std::string& bytes, long long offset,
                 const std::string& what, const std::vector<std::string>& flags = {}) {
  TempDir dir;
  const std::string path = dir.File(file, bytes);
  std::vector<std::string> args = flags;
  args.push_back(path);
  const Result r = RunReaddump(args);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(ErrorOffset(r, path), offset) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << "want \"" << what << "\" in: " << r.err;
}

std::vector<uint64_t> RecordStarts(const std::string& dump_path) {
  const Result r = RunReaddump({"--records", dump_path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<uint64_t> starts;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(" at=");
    if (at != std::string::npos) starts.push_back(std::stoull(line.substr(at + 4)));
  }
  return starts;
}

TEST(ReaddumpCli, TruncatedAtEveryByte) {
  const std::string full = ReadFile(TestData() + "/full.dump");
  ASSERT_GT(full.size(), kHeader.size());
  const std::vector<uint64_t> starts = RecordStarts(TestData() + "/full.dump");
  ASSERT_EQ(starts.size(), 32u);
  ASSERT_EQ(starts.front(), kHeader.size());
  TempDir dir;
  for (size_t k = 0; k < full.size(); ++k) {
    const std::string path = dir.File("cut", full.substr(0, k));
    // Summary mode prints nothing before the end; --validate fails in pass 1.
    for (const char* mode : {"--summary", "--validate"}) {
      const Result r = RunReaddump({mode, path});
      ASSERT_EQ(r.exit_code, 1) << "cut at " << k << " " << mode << ": " << r.err;
      EXPECT_EQ(r.out, "") << "cut at " << k;
      const long long off = ErrorOffset(r, path);
      if (k < kHeader.size()) {
        EXPECT_EQ(off, 0) << r.err;
        continue;
      }
      // The error is inside the record cut short, never beyond the cut.
      const uint64_t record = *(std::upper_bound(starts.begin(), starts.end(), k) - 1);
      EXPECT_GE(off, static_cast<long long>(record)) << "cut at " << k << ": " << r.err;
      EXPECT_LE(off, static_cast<long long>(k)) << "cut at " << k << ": " << r.err;
      if (k == record) {
        EXPECT_NE(r.err.find("no eof record"), std::string::npos) << r.err;
      }
    }
  }
}

TEST(ReaddumpCli, BadHeader) {
  ExpectError("empty", "", 0, "header: expected");
  ExpectError("typo", "Go1.3 heap dump\n" + V(3), 0, "header: expected");
  ExpectError("dialect", "go1.9 heap dump\n" + V(3), 0, "header: unsupported dialect");
  ExpectError("elf", "\x7f" "ELF" + std::string(20, '\0'), 0, "header: expected \"go1.3 heap dump\\n\"");
}

TEST(ReaddumpCli, OverlongAndOverflowingVarints) {
  const std::string h(kHeader);
  ExpectError("overlong", h + "\x83" + std::string(1, '\0'), 16, "overlong uvarint");
  // dump params: endian 0, then a ptrsize of 10 bytes holding 65 bits.
  ExpectError("overflow", h + V(10) + V(0) + std::string(9, '\xff') + "\x02" + V(3), 18,
              "kind 10 (params): ptrsize: uvarint overflows 64 bits");
  ExpectError("eleven", h + V(5) + std::string(10, '\x80') + "\x01", 17, "addr: uvarint overflows");
}

// Lengths near 2^64 fail at their own offset before anything is sized from
// them, in plain files (checked against the file size) and in compressed
// streams (checked against the reader's limits); under a 256 MiB
// address-space limit, so a giant allocation would crash instead.
TEST(ReaddumpCli, LengthsNear2To64) {
  const std::string h(kHeader);
  for (uint64_t n : {~0ull, ~0ull - 1, 1ull << 63, (1ull << 40) + 1}) {
    SCOPED_TRACE(n);
    ExpectError("str", h + V(6) + V(n) + "abc", 17, "kind 6 (otherroot): description: length");
    ExpectError("nfields", h + V(7) + V(1) + V(8) + V(1) + "T" + V(0) + V(n), 22, "nfields: length");
    ExpectError("nstats", h + V(16) + V(n), 17, "nstats: length");
    ExpectError("npcs", h + V(18) + V(1) + V(1) + V(n) + V(1), 19, "npcs: length");
    ExpectError("object", h + V(1) + V(0x10000) + V(0) + V(0) + V(n) + "payload", 22,
                "kind 1 (object): size: object of");

    std::ostringstream z;
    libdump::format::OstreamSink file(z);
    libdump::format::ZstdSink zstd(file, 1);
    const std::string body = h + V(6) + V(n) + "abc";
    zstd.Write(body.data(), body.size());
    zstd.Finish();
    ExpectError("str.zst", z.str(), 17, "description: length");
  }
}

// A length the limits allow but the input does not hold: memory grows only
// with the bytes that arrive, so this ends in an error, not an allocation.
TEST(ReaddumpCli, CompressedStringLongerThanItsStream) {
  const std::string h(kHeader);
  std::ostringstream z;
  libdump::format::OstreamSink file(z);
  libdump::format::ZstdSink zstd(file, 1);
  const std::string body = h + V(6) + V(60ull << 20) + std::string(1000, 'a');
  zstd.Write(body.data(), body.size());
  zstd.Finish();
  ExpectError("long.zst", z.str(), 17, "unexpected end of input in a 62914560-byte string");
}

// --validate streams payloads: a 320 MiB typed array (a few KB of zstd)
// validates under the 256 MiB address-space limit, and its last pointer word
// is still checked.
TEST(ReaddumpCli, ValidateDoesNotBufferPayloads) {
  const std::string h(kHeader);
  constexpr uint64_t kSize = 320ull << 20;  // a multiple of the 32-byte element
  std::ostringstream z;
  libdump::format::OstreamSink file(z);
  libdump::format::ZstdSink zstd(file, 1);
  const auto put = [&](const std::string& s) { zstd.Write(s.data(), s.size()); };
  put(h + V(10) + V(0) + V(8) + V(0) + V(0x10000) + V(0x10000 + (1ull << 30)));  // params
  put(V(7) + V(0x5000) + V(32) + V(4) + "Pair" + V(0) + V(2) + V(0) + V(0) + V(0) + V(24));
  put(V(1) + V(0x20000) + V(0x5000) + V(1) + V(kSize));  // array object header
  const std::string zeros(1 << 20, '\0');
  for (uint64_t i = 0; i < kSize / zeros.size() - 1; ++i) put(zeros);
  std::string last(zeros.size(), '\0');
  last[last.size() - 8] = 0x01;  // the last element's +24 word: 0x10001, in the heap, in no object
  last[last.size() - 6] = 0x01;
  put(last + V(3));
  zstd.Finish();
  TempDir dir;
  const std::string path = dir.File("big.zst", z.str());
  const Result r = RunReaddump({"--validate", path});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("pointer at +" + std::to_string(kSize - 8) + " is 0x10001,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": 1 problem\n"), std::string::npos) << r.out;
}

TEST(ReaddumpCli, AddressSpaceLimitIsReal) {
  if (!kCanLimitAddressSpace) GTEST_SKIP() << "sanitizer build: no address-space limit";
  // Proof that the limit bites: readdump reading a dump is fine under it, and
  // the same limit stops a process that maps more than 256 MiB.
  const Result ok = RunReaddump({TestData() + "/full.dump"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit as{kAddressSpaceLimit, kAddressSpaceLimit};
    setrlimit(RLIMIT_AS, &as);
    void* p = malloc(kAddressSpaceLimit);
    _exit(p == nullptr ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(ReaddumpCli, UnknownKinds) {
  const std::string h(kHeader);
  for (uint64_t k : {uint64_t{0}, uint64_t{2}, uint64_t{19}, uint64_t{1} << 50}) {
    ExpectError("kind", h + V(10) + V(0) + V(8) + V(0) + V(0) + V(0) + V(k) + V(3), 22,
                "kind " + std::to_string(k) + " (unknown): unknown record kind");
  }
}

TEST(ReaddumpCli, TrailingGarbageAndMissingEof) {
  const std::string full = ReadFile(TestData() + "/full.dump");
  ASSERT_EQ(full.size(), 583u);
  ExpectError("trailing", full + "x", 583, "kind 3 (eof): unexpected data after the eof record");
  ExpectError("twoeofs", full + V(3), 583, "unexpected data after the eof record");
  ExpectError("noeof", full.substr(0, 582), 582, "expected a record (no eof record)");
  ExpectError("noeof", full.substr(0, 582), 582, "no eof record", {"--records"});
}

TEST(ReaddumpCli, RecordsPrintedBeforeAnErrorStay) {
  TempDir dir;
  const std::string full = ReadFile(TestData() + "/full.dump");
  const std::string path = dir.File("trailing", full + "x");
  const Result r = RunReaddump({"--records", path});
  EXPECT_EQ(r.exit_code, 1);
  // Every record before the eof was printed; the eof is not, as the reader
  // only returns it once it knows nothing follows.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 31) << r.out;
  EXPECT_EQ(r.out.find("eof at="), std::string::npos);
  EXPECT_EQ(r.err, path + ":583: kind 3 (eof): unexpected data after the eof record\n");
}

TEST(ReaddumpCli, UsageErrors) {
  EXPECT_EQ(RunReaddump({}).exit_code, 2);
  EXPECT_EQ(RunReaddump({"--no-such-option", "x"}).exit_code, 2);
  EXPECT_EQ(RunReaddump({"a", "b"}).exit_code, 2);
  EXPECT_EQ(RunReaddump({"--top", "0", "x"}).exit_code, 2);
  EXPECT_EQ(RunReaddump({"--top", "-1", "x"}).exit_code, 2);
  EXPECT_EQ(RunReaddump({"--top", "3x", "x"}).exit_code, 2);
  const Result help = RunReaddump({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("usage: readdump", 0), 0u) << help.out;
  EXPECT_NE(help.out.find("--validate"), std::string::npos);
  const Result missing = RunReaddump({"/nonexistent/dump"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "/nonexistent/dump: cannot open: No such file or directory\n");
  // A directory is bad input, as in dumptohprof: exit 1, with or without --validate.
  for (const bool validate : {false, true}) {
    const Result dir = validate ? RunReaddump({"--validate", TestData()}) : RunReaddump({TestData()});
    EXPECT_EQ(dir.exit_code, 1);
    EXPECT_EQ(dir.err, TestData() + ": is a directory\n");
  }
  const Result version = RunReaddump({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("readdump (libdump) ", 0), 0u) << version.out;
}

// testdata/DUMP.MODE.expected is the exact stdout of readdump on testdata/DUMP
// (run in testdata/, so the file name prints as DUMP).
const std::map<std::string, std::vector<std::string>>& Modes() {
  static const std::map<std::string, std::vector<std::string>> modes = {
      {"summary", {}},
      {"records", {"--records"}},
      {"histogram", {"--histogram"}},
      {"top2", {"--top", "2"}},
      {"threads", {"--threads"}},
      {"validate", {"--validate"}},
      {"json", {"--json"}},
      {"jsonvalidate", {"--json", "--validate"}},
      {"jsonall", {"--json", "--records", "--validate", "--summary", "--histogram", "--threads"}},
  };
  return modes;
}

TEST(ReaddumpCli, GoldenOutputs) {
  std::vector<std::string> expected;
  DIR* d = opendir(TestData().c_str());
  ASSERT_NE(d, nullptr) << TestData();
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 9 && n.compare(n.size() - 9, 9, ".expected") == 0) expected.push_back(n);
  }
  closedir(d);
  std::sort(expected.begin(), expected.end());
  ASSERT_GE(expected.size(), 10u);
  for (const std::string& name : expected) {
    SCOPED_TRACE(name);
    const std::string stem = name.substr(0, name.size() - 9);
    const size_t dot = stem.rfind('.');
    ASSERT_NE(dot, std::string::npos);
    const std::string dump = stem.substr(0, dot), mode = stem.substr(dot + 1);
    ASSERT_TRUE(Modes().contains(mode)) << "unknown mode " << mode;
    std::vector<std::string> args = Modes().at(mode);
    args.push_back(dump);
    const Result r = RunReaddump(args, TestData());
    const std::string want = ReadFile(TestData() + "/" + name);
    EXPECT_EQ(r.out, want);
    EXPECT_EQ(r.err, "");
    // Validation problems are the one expected failure.
    const bool text_problems = (want.find(" problem\n") != std::string::npos ||
                                want.find(" problems\n") != std::string::npos) &&
                               want.find("ok, no problems\n") == std::string::npos;
    const bool invalid = text_problems || want.find("\"valid\": false") != std::string::npos;
    EXPECT_EQ(r.exit_code, invalid ? 1 : 0);
  }
}

}  // namespace
