#include "dump_emitter.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "libdump/format/reader.h"
#include "libdump/format/sink.h"
#include "testing/fake_image.h"
#include "validate.h"

namespace libdump::coretodump {
namespace {

using format::Kind;
using heapwalk::HeapWalk;
using testing::FakeImage;

// A program image by hand: a module (text, RTTI in read-only data, .data and
// its .bss tail), a heap mapping, one thread's stack and TLS, and an
// anonymous mapping of the program's own.
constexpr uint64_t kText = 0x400000, kRodata = 0x401000, kData = 0x402000, kBss = 0x403000;
constexpr uint64_t kHeap = 0x10000000, kStack = 0x7ff000000000, kTls = 0x7f0000000000, kAnon = 0x7f1000000000;
constexpr uint64_t kGap = 0x20000000;  // a mapping the image does not hold

struct Fixture {
  FakeImage image;
  HeapWalk walk;
  uint64_t vptr = 0;

  Fixture() {
    image.Map(kText, kText + 0x1000, "r-x", "/nonexistent/prog").file_offset = 0;
    image.Map(kRodata, kRodata + 0x1000, "r--", "/nonexistent/prog");
    image.Map(kData, kData + 0x1000, "rw-", "/nonexistent/prog");
    image.Map(kBss, kBss + 0x1000, "rw-");
    image.Map(kHeap, kHeap + 0x10000, "rw-", "[heap]");
    image.Map(kGap, kGap + 0x2000, "rw-", {}, /*present=*/false);
    image.Map(kStack, kStack + 0x4000, "rw-", "[stack]");
    image.Map(kTls, kTls + 0x1000, "rw-");
    image.Map(kAnon, kAnon + 0x1000, "rw-");
    procimage::ImageModule m;
    m.path = "/nonexistent/prog";
    m.start = kText;
    m.end = kBss;
    m.build_id = "abcd";
    image.modules.push_back(m);
    // RTTI: the ABI's class_type_info (its own typeinfo named), a class's
    // typeinfo whose vptr is class_type_info's vtable, the class's vtable.
    const uint64_t meta_name = kRodata + 0x100, meta_ti = kRodata + 0x200, meta_vt = kRodata + 0x300;
    const uint64_t name = kRodata + 0x500, ti = kRodata + 0x400, vt = kRodata + 0x600;
    image.PutString(meta_name, "N10__cxxabiv117__class_type_infoE");
    image.PutWord(meta_ti + 8, meta_name);
    image.PutWord(meta_vt + 8, meta_ti);
    image.PutWord(ti, meta_vt + 16);
    image.PutWord(ti + 8, name);
    image.PutString(name, "N5shape6CircleE");
    image.PutWord(vt + 8, ti);
    vptr = vt + 16;
    // A fake vtable: RTTI whose type_info is not the ABI's.
    image.PutWord(kRodata + 0x708, kRodata + 0x400 + 8);

    walk.allocator = "test";
    walk.blocks = {{kHeap + 0x10, 0x20}, {kHeap + 0x40, 0x30}, {kHeap + 0x80, 0x20}, {kHeap + 0xc0, 0x20},
                   {kGap + 0xff0, 0x20}, {kGap + 0x3000 - 0x10, 0x10}};
    walk.blocks.pop_back();  // (kept simple: one damaged block)
    for (const auto& b : walk.blocks) walk.live_bytes += b.size;
    image.PutWord(kHeap + 0x10, vptr);            // a Circle
    image.PutWord(kHeap + 0x40, vptr);            // another, larger
    image.PutWord(kHeap + 0x48, kHeap + 0x80);    // which holds the third block
    image.PutWord(kHeap + 0x80, kRodata + 0x710);  // first word: the fake vtable
    image.PutWord(kHeap + 0x88, 0x1122334455667788);

    procimage::ImageThread t;
    t.tid = 42;
    t.name = "worker";
    const uint64_t sp = kStack + 0x2000;
    t.regs[19] = sp;
    t.regs[16] = kText + 0x10;
    t.regs[5] = kHeap + 0xc8;  // rbx: interior of the fourth block
    t.regs[21] = kTls + 0x800;
    image.threads.push_back(t);
    image.PutWord(sp + 0x10, kHeap + 0x10);   // a stack root
    image.PutWord(sp - 0x40, kHeap + 0x18);   // in the red zone: a root (interior)
    image.PutWord(sp - 0x100, kHeap + 0x40);  // below the red zone: not one
    image.PutWord(sp + 0x18, kHeap + 0x38);   // a word between blocks: not one
    image.PutWord(kData + 0x20, kHeap + 0x40);  // .data
    image.PutWord(kData + 0x100, kHeap + 0x1f);  // the allocator's own state there: no root
    walk.not_roots.push_back({kData + 0x100, kData + 0x108});
    image.PutWord(kBss + 0x30, kHeap + 0x80);   // .bss tail
    image.PutWord(kTls + 0x10, kHeap + 0xc0);   // thread-local
    image.PutWord(kAnon + 0x8, kGap + 0xff0);   // the program's own mapping
    image.PutWord(kHeap + 0xf000, kHeap + 0x10);  // the heap's own memory: no root
  }
};

struct Written {
  std::string bytes;
  EmitResult result;
  std::vector<format::Record> records;
  std::map<uint64_t, std::string> payloads;
};

Written Emit(const Fixture& f, size_t buffer = 1 << 20) {
  Written out;
  std::ostringstream s;
  {
    format::OstreamSink sink(s);
    format::Writer w(sink);
    EmitOptions o;
    o.buffer_size = buffer;
    out.result = EmitDump(f.image, f.walk, w, o);
  }
  out.bytes = s.str();
  std::istringstream in(out.bytes);
  format::Reader r(in);
  format::Record rec;
  while (r.Next(rec)) {
    if (rec.kind == Kind::kObject) {
      auto p = r.Payload();
      out.payloads[rec.object.addr].assign(reinterpret_cast<const char*>(p.data()), p.size());
    }
    out.records.push_back(rec);
  }
  return out;
}

std::vector<Kind> KindsInOrder(const Written& w) {
  std::vector<Kind> k;
  for (const auto& r : w.records) {
    if (k.empty() || k.back() != r.kind) k.push_back(r.kind);
  }
  return k;
}

TEST(DumpEmitter, RecordsComeInTheRuntimesOrder) {
  Fixture f;
  const Written w = Emit(f);
  const std::vector<Kind> want = {Kind::kParams,    Kind::kMemStats,  Kind::kModule,     Kind::kObject,
                                  Kind::kType,      Kind::kTypeInfo,  Kind::kItab,       Kind::kGoroutine,
                                  Kind::kThreadInfo, Kind::kFrame,    Kind::kStackRoot,  Kind::kDataRoot,
                                  Kind::kOtherRoot, Kind::kEof};
  EXPECT_EQ(KindsInOrder(w), want);
}

TEST(DumpEmitter, ObjectsCarryTheirBytesAndMissingBytesAreZerosCountedAsDamage) {
  Fixture f;
  for (size_t buffer : {size_t{1} << 20, size_t{4096}}) {
    const Written w = Emit(f, buffer);
    EXPECT_EQ(w.result.objects, 5u);
    EXPECT_EQ(w.result.object_bytes, f.walk.live_bytes);
    const std::string& third = w.payloads.at(kHeap + 0x80);
    ASSERT_EQ(third.size(), 0x20u);
    uint64_t v;
    std::memcpy(&v, third.data() + 8, 8);
    EXPECT_EQ(v, 0x1122334455667788u);
    EXPECT_EQ(w.result.damaged_objects, 1u);
    EXPECT_EQ(w.result.missing_bytes, 0x20u);
    EXPECT_EQ(w.payloads.at(kGap + 0xff0), std::string(0x20, '\0'));
    ASSERT_FALSE(w.result.damage.empty());
  }
}

TEST(DumpEmitter, PolymorphicObjectsAreTypedByTheirVtableAndNamedFromRtti) {
  Fixture f;
  const Written w = Emit(f);
  std::map<uint64_t, uint64_t> type_of;
  std::vector<format::TypeRecord> types;
  std::vector<format::TypeInfoRecord> infos;
  for (const auto& r : w.records) {
    if (r.kind == Kind::kObject) type_of[r.object.addr] = r.object.type;
    if (r.kind == Kind::kType) types.push_back(r.type);
    if (r.kind == Kind::kTypeInfo) infos.push_back(r.type_info);
  }
  EXPECT_EQ(type_of[kHeap + 0x10], f.vptr);
  EXPECT_EQ(type_of[kHeap + 0x40], f.vptr);
  EXPECT_EQ(type_of[kHeap + 0x80], 0u);  // its "vtable"'s type_info is not the ABI's
  ASSERT_EQ(types.size(), 1u);
  EXPECT_EQ(types[0].name, "shape::Circle");
  EXPECT_EQ(types[0].size, 0x20u);  // the smallest object
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(infos[0].flags, format::kTypePolymorphic | format::kTypeConservative);
  EXPECT_EQ(infos[0].vtable, f.vptr);
  EXPECT_EQ(w.result.polymorphic_objects, 2u);
}

TEST(DumpEmitter, RootsAreTheWordsPointingIntoLiveBlocks) {
  Fixture f;
  const Written w = Emit(f);
  std::vector<std::pair<uint64_t, uint64_t>> stack, data;
  std::vector<std::pair<std::string, uint64_t>> other;
  uint64_t frame_sp = 0;
  for (const auto& r : w.records) {
    if (r.kind == Kind::kFrame) frame_sp = r.frame.sp;
    if (r.kind == Kind::kStackRoot) {
      stack.push_back({r.stack_root.addr, r.stack_root.ptr});
      EXPECT_EQ(r.stack_root.frame, frame_sp);
    }
    if (r.kind == Kind::kDataRoot) data.push_back({r.data_root.addr, r.data_root.ptr});
    if (r.kind == Kind::kOtherRoot) other.push_back({r.other_root.description, r.other_root.ptr});
  }
  const uint64_t sp = kStack + 0x2000;
  EXPECT_EQ(frame_sp, sp);  // no module to unwind with: the top frame from the registers
  const std::vector<std::pair<uint64_t, uint64_t>> want_stack = {
      {5, kHeap + 0xc8}, {sp - 0x40, kHeap + 0x18}, {sp + 0x10, kHeap + 0x10}};
  EXPECT_EQ(stack, want_stack);
  const std::vector<std::pair<uint64_t, uint64_t>> want_data = {{kData + 0x20, kHeap + 0x40},
                                                                {kBss + 0x30, kHeap + 0x80}};
  EXPECT_EQ(data, want_data);
  const std::vector<std::pair<std::string, uint64_t>> want_other = {
      {"thread-local storage of thread 42", kHeap + 0xc0},
      {"anonymous mapping 0x7f1000000000-0x7f1000001000", kGap + 0xff0}};
  EXPECT_EQ(other, want_other);
}

TEST(DumpEmitter, ThreadsAndModulesAreDescribed) {
  Fixture f;
  const Written w = Emit(f);
  int modules = 0;
  for (const auto& r : w.records) {
    if (r.kind == Kind::kModule) {
      ++modules;
      EXPECT_EQ(r.module.start, kText);
      EXPECT_EQ(r.module.end, kText + 0x1000);
      EXPECT_EQ(r.module.build_id, "abcd");
    }
    if (r.kind == Kind::kThreadInfo) {
      EXPECT_EQ(r.thread_info.tid, 42u);
      EXPECT_EQ(r.thread_info.name, "worker");
    }
    if (r.kind == Kind::kParams) {
      EXPECT_EQ(r.params.heap_start, kHeap + 0x10);
      EXPECT_EQ(r.params.heap_end, kGap + 0x1010);
    }
  }
  EXPECT_EQ(modules, 1);
  EXPECT_EQ(w.result.threads, 1u);
}

TEST(DumpEmitter, TheDumpValidates) {
  Fixture f;
  const Written w = Emit(f);
  std::vector<std::string> problems;
  std::vector<std::unique_ptr<std::istringstream>> streams;
  const uint64_t n = readdump::ValidateDump(
      [&] {
        streams.push_back(std::make_unique<std::istringstream>(w.bytes));
        return std::make_shared<format::Reader>(*streams.back());
      },
      [&](const readdump::Problem& p) { problems.push_back(p.message); });
  EXPECT_EQ(n, 0u) << (problems.empty() ? "" : problems[0]);
}

}  // namespace
}  // namespace libdump::coretodump
