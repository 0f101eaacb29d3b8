#include "converter.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "dump_catalog.h"
#include "testing/hprof_test_reader.h"
#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

namespace libdump::dumptohprof {
namespace {

using format::hprof::testing::Be;
using format::hprof::testing::Rec;
using format::hprof::testing::SubRecords;
using format::hprof::testing::TopRecords;
using namespace format;

class TempDump {
 public:
  TempDump() {
    char name[] = "/tmp/dumptohprof_testXXXXXX";
    const int fd = ::mkstemp(name);
    ::close(fd);
    path_ = name;
  }
  ~TempDump() { ::unlink(path_.c_str()); }
  template <typename Fn>
  void Write(Fn&& fn) {
    std::ofstream f(path_, std::ios::binary);
    OstreamSink sink(f);
    Writer w(sink);
    w.Header();
    fn(w);
    w.Eof();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

struct Parsed {
  std::map<uint64_t, std::string> names;         // UTF8 id -> text
  std::map<uint64_t, std::string> class_names;   // class id -> name
  std::vector<Rec> heap;                         // every sub-record, in order
  std::vector<Rec> top;
  size_t segments = 0;
};

Parsed Parse(const std::string& file) {
  Parsed p;
  for (Rec& r : TopRecords(file)) {
    if (r.tag == 0x01) p.names[Be(r.body, 0, 8)] = r.body.substr(8);
    if (r.tag == 0x02) p.class_names[Be(r.body, 4, 8)] = p.names.at(Be(r.body, 16, 8));
    if (r.tag == 0x1C) {
      ++p.segments;
      for (Rec& s : SubRecords(r.body)) p.heap.push_back(s);
    }
    p.top.push_back(r);
  }
  return p;
}

const Rec* Object(const Parsed& p, uint64_t id) {
  for (const Rec& r : p.heap) {
    if ((r.tag == 0x21 || r.tag == 0x22 || r.tag == 0x23) && Be(r.body, 0, 8) == id) return &r;
  }
  return nullptr;
}

constexpr uint64_t kNode = 0x10, kBuf = 0x20;

void SmallDump(Writer& w) {
  w.Params({0, 8, 0, 0x1000, 0x2000});
  w.Module({0x400000, 0x410000, 0, "/bin/app", ""});
  w.Type({kNode, 16, "Node", false, {{kFieldPtr, 0}}});
  w.TypeFields({kNode, {{0, kFieldPtr, 8, "next"}, {8, kFieldInt, 4, "value"}, {12, kFieldUint, 2, "code"}}});
  w.Type({kBuf, 12, "uint32_t", false, {}});
  w.TypeInfo({kBuf, kTypeArray, 0, 0, 4});
  const std::string n1 = Le(0x1010 + 4, 8) + Le(0x11223344, 4) + Le(0xBEEF, 2) + Le(0, 2);  // interior pointer
  const std::string n2 = Le(0, 8) + Le(7, 4) + Le(1, 2) + Le(0, 2);
  w.Object({0x1000, kNode, kObjRegular, 16}, n1.data());
  w.Object({0x1010, kNode, kObjRegular, 16}, n2.data());
  const std::string ints = Le(1, 4) + Le(2, 4) + Le(0xA0B0C0D0, 4);
  w.Object({0x1020, kBuf, kObjArray, 12}, ints.data());
  const std::string text = "secret!!";
  w.Object({0x1030, 0, kObjRegular, 8}, text.data());
  const std::string ptrs = Le(0x1000, 8) + Le(99, 8);
  w.Object({0x1040, 0, kObjRegular, 16}, ptrs.data());
  w.Goroutine({0xA0, 0x7000, 5, 0, kStatusRunning, false, false, 0, ""});
  w.ThreadInfo({0xA0, 5, "main"});
  w.Frame({0x7000, 0x7100, 0x400100, 0x400110, "leaf"});
  w.Frame({0x7100, 0, 0x400200, 0x400210, "main"});
  w.StackRoot({0x7108, 0x1018, 0x7100});
  w.DataRoot({0x600000, 0x1020});
  w.OtherRoot("why", 0x1030);
  w.Finalizer({0x1010, 0, 0, 0, 0});
}

TEST(Converter, ObjectsBecomeInstancesAndArrays) {
  TempDump d;
  d.Write(SmallDump);
  format::hprof::StringOutput out;
  const ConvertStats s = Convert(d.path(), out, {});
  const Parsed p = Parse(out.data());
  EXPECT_EQ(s.objects, 5u);
  EXPECT_EQ(s.instances, 2u);
  EXPECT_EQ(s.object_arrays, 1u);
  EXPECT_EQ(s.primitive_arrays, 2u);

  // Node: next (resolved to the start of 0x1010), value int, code short.
  const Rec* n1 = Object(p, 0x1000);
  ASSERT_NE(n1, nullptr);
  ASSERT_EQ(n1->tag, 0x21);
  EXPECT_EQ(p.class_names.at(Be(n1->body, 12, 8)), "Node");
  EXPECT_EQ(Be(n1->body, 20, 4), 14u);
  EXPECT_EQ(Be(n1->body, 24, 8), 0x1010u);
  EXPECT_EQ(Be(n1->body, 32, 4), 0x11223344u);
  EXPECT_EQ(Be(n1->body, 36, 2), 0xBEEFu);
  // The class dump comes before the instance and names the fields.
  size_t class_at = 0, instance_at = 0;
  for (size_t i = 0; i < p.heap.size(); ++i) {
    if (p.heap[i].tag == 0x20 && Be(p.heap[i].body, 0, 8) == Be(n1->body, 12, 8)) class_at = i + 1;
    if (&p.heap[i] == n1) instance_at = i + 1;
  }
  ASSERT_GT(class_at, 0u);
  EXPECT_LT(class_at, instance_at);

  const Rec* ints = Object(p, 0x1020);
  ASSERT_EQ(ints->tag, 0x23);
  EXPECT_EQ(Be(ints->body, 12, 4), 3u);
  EXPECT_EQ(Be(ints->body, 16, 1), 10u);  // int
  EXPECT_EQ(ints->body.substr(17), std::string("\0\0\0\x01\0\0\0\x02\xA0\xB0\xC0\xD0", 12));

  const Rec* text = Object(p, 0x1030);
  ASSERT_EQ(text->tag, 0x23);
  EXPECT_EQ(Be(text->body, 16, 1), 8u);  // byte
  EXPECT_EQ(text->body.substr(17), "secret!!");

  const Rec* words = Object(p, 0x1040);
  ASSERT_EQ(words->tag, 0x22);
  EXPECT_EQ(p.class_names.at(Be(words->body, 16, 8)), "[L(untyped);");
  EXPECT_EQ(Be(words->body, 24, 8), 0x1000u);
  EXPECT_EQ(Be(words->body, 32, 8), 0u);  // 99 points nowhere
}

TEST(Converter, ThreadsFramesAndRoots) {
  TempDump d;
  d.Write(SmallDump);
  format::hprof::StringOutput out;
  Convert(d.path(), out, {});
  const Parsed p = Parse(out.data());
  std::vector<uint64_t> frames;
  for (const Rec& r : p.top) {
    if (r.tag == 0x04) {
      frames.push_back(Be(r.body, 0, 8));
      EXPECT_EQ(p.names.at(Be(r.body, 24, 8)), "/bin/app");
    }
    if (r.tag == 0x05 && Be(r.body, 0, 4) == 2) {
      EXPECT_EQ(Be(r.body, 4, 4), 1u);  // thread serial
      EXPECT_EQ(Be(r.body, 8, 4), 2u);  // frames
    }
  }
  EXPECT_EQ(frames.size(), 2u);
  std::vector<uint8_t> roots;
  size_t thread_root = 0, frame_root = 0;
  for (size_t i = 0; i < p.heap.size(); ++i) {
    const Rec& r = p.heap[i];
    if (r.tag == 0x08) thread_root = i + 1;
    if (r.tag == 0x03) {
      frame_root = i + 1;
      EXPECT_EQ(Be(r.body, 0, 8), 0x1010u);  // interior pointer resolved
      EXPECT_EQ(Be(r.body, 8, 4), 1u);       // thread serial
      EXPECT_EQ(Be(r.body, 12, 4), 1u);      // depth: the caller of the top frame
    }
    if (r.tag == 0x01) {
      EXPECT_EQ(Be(r.body, 0, 8), 0x1020u);
      EXPECT_EQ(Be(r.body, 8, 8), 0x600000u);
    }
    if (r.tag == 0x01 || r.tag == 0x03 || r.tag == 0x08 || r.tag == 0xFF) roots.push_back(r.tag);
  }
  ASSERT_GT(thread_root, 0u);
  EXPECT_LT(thread_root, frame_root);
  // thread object, frame, JNI global, other root: target + holder, finalizer
  EXPECT_EQ(roots, (std::vector<uint8_t>{0x08, 0x03, 0x01, 0xFF, 0xFF, 0xFF}));
}

// Allocation stacks become the stack traces of their objects: one TRACE per
// distinct stack, FRAMEs named from frame records, else module+offset, else
// the pc. Memstats become static fields of libdump.MemStats.
TEST(Converter, AllocStacksAndMemStats) {
  TempDump d;
  const std::vector<uint64_t> pcs = {0x400110, 0x400300, 0x999999};  // a frame's pc, in /bin/app, nowhere
  d.Write([&](Writer& w) {
    SmallDump(w);
    w.AllocStack(0x1000, 16, pcs);
    w.AllocStack(0x1020, 12, pcs);
    w.AllocStack(0x1040, 16, std::vector<uint64_t>{0x400110});
    w.AllocStack(0x5000, 8, pcs);  // no such object
    w.MemStats({{{"heap_inuse", 4096}, {"mallocs", 7}}});
  });
  format::hprof::StringOutput out;
  const ConvertStats s = Convert(d.path(), out, {});
  EXPECT_EQ(s.alloc_stacks, 3u);
  const Parsed p = Parse(out.data());
  std::map<uint64_t, std::string> frame_names;            // FRAME id -> method name
  std::map<uint32_t, std::vector<std::string>> traces;    // serial -> method names
  for (const Rec& r : p.top) {
    if (r.tag == 0x04) frame_names[Be(r.body, 0, 8)] = p.names.at(Be(r.body, 8, 8));
    if (r.tag == 0x05) {
      auto& t = traces[static_cast<uint32_t>(Be(r.body, 0, 4))];
      for (uint64_t i = 0; i < Be(r.body, 8, 4); ++i) t.push_back(frame_names.at(Be(r.body, 12 + 8 * i, 8)));
    }
  }
  const auto trace_of = [&](uint64_t id) { return static_cast<uint32_t>(Be(Object(p, id)->body, 8, 4)); };
  const uint32_t t = trace_of(0x1000);
  EXPECT_EQ(traces.at(t), (std::vector<std::string>{"leaf", "app+0x300", "0x999999"}));
  EXPECT_EQ(trace_of(0x1020), t);  // the same stack, the same trace
  EXPECT_EQ(traces.at(trace_of(0x1040)), std::vector<std::string>{"leaf"});
  EXPECT_NE(trace_of(0x1040), t);
  EXPECT_EQ(trace_of(0x1010), format::hprof::kEmptyTrace);  // no allocation stack
  EXPECT_EQ(traces.at(format::hprof::kEmptyTrace).size(), 0u);

  std::map<std::string, uint64_t> statics;
  for (const Rec& r : p.heap) {
    if (r.tag != 0x20 || p.class_names.at(Be(r.body, 0, 8)) != "libdump/MemStats") continue;
    ASSERT_EQ(Be(r.body, 64, 2), 0u);  // constant pool
    size_t at = 68;
    for (uint64_t i = 0; i < Be(r.body, 66, 2); ++i, at += 17) {
      EXPECT_EQ(Be(r.body, at + 8, 1), 11u);  // long
      statics[p.names.at(Be(r.body, at, 8))] = Be(r.body, at + 9, 8);
    }
  }
  EXPECT_EQ(statics, (std::map<std::string, uint64_t>{{"heap_inuse", 4096}, {"mallocs", 7}}));
}

TEST(Converter, RedactZeroesEverythingButPointers) {
  TempDump d;
  d.Write(SmallDump);
  format::hprof::StringOutput out;
  ConvertOptions o;
  o.redact = true;
  Convert(d.path(), out, o);
  const Parsed p = Parse(out.data());
  EXPECT_EQ(out.data().find("secret"), std::string::npos);
  const Rec* n1 = Object(p, 0x1000);
  EXPECT_EQ(Be(n1->body, 24, 8), 0x1010u);
  EXPECT_EQ(Be(n1->body, 32, 4), 0u);
  EXPECT_EQ(Be(n1->body, 36, 2), 0u);
  EXPECT_EQ(Object(p, 0x1020)->body.substr(17), std::string(12, '\0'));
  EXPECT_EQ(Be(Object(p, 0x1040)->body, 24, 8), 0x1000u);
}

TEST(Converter, TinySegmentsStillParse) {
  TempDump d;
  d.Write(SmallDump);
  format::hprof::StringOutput out;
  ConvertOptions o;
  o.max_segment = 64;
  const ConvertStats s = Convert(d.path(), out, o);
  const Parsed p = Parse(out.data());
  EXPECT_GT(p.segments, 10u);
  EXPECT_EQ(s.segments, p.segments);
  EXPECT_EQ(p.top.back().tag, 0x2C);
}

TEST(Converter, IdsUniqueAndNonZero) {
  TempDump d;
  d.Write(SmallDump);
  format::hprof::StringOutput out;
  Convert(d.path(), out, {});
  const Parsed p = Parse(out.data());
  std::set<uint64_t> ids;
  for (const Rec& r : p.heap) {
    if (r.tag == 0x20 || r.tag == 0x21 || r.tag == 0x22 || r.tag == 0x23) {
      const uint64_t id = Be(r.body, 0, 8);
      EXPECT_NE(id, 0u);
      EXPECT_TRUE(ids.insert(id).second) << std::hex << id;
    }
  }
  for (const auto& [id, text] : p.names) EXPECT_FALSE(ids.contains(id)) << text;
}

TEST(Converter, BadDumpsThrowWithTheRecordOffset) {
  TempDump d;
  d.Write([](Writer& w) {
    const std::string x(8, 'x');
    w.Object({0x1000, 0, kObjRegular, 8}, x.data());
    w.Object({0x1000, 0, kObjRegular, 8}, x.data());
  });
  format::hprof::StringOutput out;
  try {
    Convert(d.path(), out, {});
    FAIL() << "no error";
  } catch (const FormatError& e) {
    // header 16 bytes, first object 1+2+1+1+1+8 = 14 bytes
    EXPECT_EQ(e.offset(), 30u);
    EXPECT_NE(std::string(e.what()).find("kind 1 (object)"), std::string::npos);
  }
  TempDump zero;
  zero.Write([](Writer& w) { w.Object({0, 0, kObjRegular, 0}, ""); });
  EXPECT_THROW(Convert(zero.path(), out, {}), FormatError);
}

// Pass 2 split between threads writes the file one thread writes, byte for
// byte: chunks of every size, other roots and finalizers (serial: they take
// ids) among the objects, objects too large for a fragment, tiny segments.
TEST(Converter, AnyNumberOfThreadsWritesTheSameFile) {
  TempDump d;
  d.Write([](Writer& w) {
    SmallDump(w);
    uint64_t addr = 0x10000;
    std::vector<uint64_t> pcs = {0x400110};
    for (uint64_t i = 0; i < 3000; ++i) {
      const uint64_t size = i % 997 == 0 ? kMaxFragmentObject + 8 * (i % 3 + 1) : 8 * (i % 40 + 2);
      std::string payload(size, '\0');
      for (uint64_t k = 0; k + 8 <= size; k += 8) {
        const uint64_t word = (k / 8) % 3 == 0 ? 0x10000 + (i * 7919 + k) % (3000 * 400) : i * k;
        std::memcpy(payload.data() + k, &word, 8);
      }
      const uint64_t type = i % 3 == 0 ? kNode : i % 3 == 1 ? kBuf : 0;
      w.Object({addr, type, i % 3 == 1 ? kObjArray : kObjRegular, size}, payload.data());
      if (i % 50 == 0) w.AllocStack(addr, size, pcs);
      if (i % 101 == 0) w.OtherRoot("root " + std::to_string(i), addr + 8);
      if (i % 203 == 0) w.Finalizer({addr, 0, 0, 0, 0});
      if (i % 7 == 0) w.DataRoot({0x600000 + i, addr});
      if (i % 11 == 0) w.StackRoot({0x7108, addr, 0x7100});
      addr += size + 16;
    }
  });
  for (uint64_t segment : {uint64_t{1} << 30, uint64_t{5000}}) {
    ConvertOptions one;
    one.threads = 1;
    one.max_segment = segment;
    format::hprof::StringOutput want;
    const ConvertStats ws = Convert(d.path(), want, one);
    EXPECT_EQ(ws.objects, 3005u);
    for (unsigned threads : {2, 3}) {
      for (uint64_t chunk : {1, 700, 65536}) {
        ConvertOptions o = one;
        o.threads = threads;
        o.chunk_bytes = chunk;
        format::hprof::StringOutput got;
        const ConvertStats s = Convert(d.path(), got, o);
        EXPECT_TRUE(got.data() == want.data()) << threads << " threads, chunks of " << chunk << ", segments of "
                                               << segment;
        EXPECT_EQ(s.objects, ws.objects);
        EXPECT_EQ(s.roots, ws.roots);
        EXPECT_EQ(s.unresolved_roots, ws.unresolved_roots);
        EXPECT_EQ(s.alloc_stacks, ws.alloc_stacks);
        EXPECT_EQ(s.finalizers, ws.finalizers);
        EXPECT_EQ(s.segments, ws.segments);
        EXPECT_EQ(s.classes_by_type, ws.classes_by_type);
      }
    }
  }
}

TEST(Converter, ClassMapLines) {
  TempDump d;
  d.Write(SmallDump);
  format::hprof::StringOutput out;
  const ConvertStats s = Convert(d.path(), out, {});
  std::ostringstream m;
  WriteClassMap(m, s);
  EXPECT_EQ(m.str(), "0x0\t(untyped)[]\t1\n0x0\tbyte[]\t1\n0x10\tNode\t2\n0x20\tint[]\t1\n");
}

}  // namespace
}  // namespace libdump::dumptohprof
