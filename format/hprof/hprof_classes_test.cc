#include "libdump/format/hprof_classes.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

#include "testing/hprof_test_reader.h"
#include "libdump/format/hprof_standard_classes.h"

namespace libdump::format::hprof {
namespace {

using testing::Be;
using testing::Rec;
using testing::SubRecords;
using testing::TopRecords;

TEST(IdAllocator, AlignedNonZeroAndDistinct) {
  IdAllocator a(0x1003);
  EXPECT_EQ(a.Next(), 0x1008u);
  EXPECT_EQ(a.Next(), 0x1010u);
  IdAllocator z(0);
  EXPECT_EQ(z.Next(), 8u);
}

TEST(StringTable, EachTextWrittenOnce) {
  StringOutput out;
  Writer w(out);
  IdAllocator ids(0x100);
  StringTable s(w, ids);
  const Id a = s.Intern("alpha");
  EXPECT_EQ(s.Intern("alpha"), a);
  const Id b = s.Intern("beta");
  EXPECT_NE(a, b);
  w.Flush();
  const std::vector<Rec> recs = TopRecords(out.data());
  ASSERT_EQ(recs.size(), 3u);  // empty trace, alpha, beta
  EXPECT_EQ(recs[1].tag, kTagUtf8);
  EXPECT_EQ(Be(recs[1].body, 0, 8), a);
  EXPECT_EQ(recs[1].body.substr(8), "alpha");
  EXPECT_EQ(recs[2].body.substr(8), "beta");
}

TEST(ClassTable, StaticsGoWithTheClassDump) {
  StringOutput out;
  Writer w(out);
  IdAllocator ids(0x100);
  StringTable s(w, ids);
  ClassTable c(w, s, ids);
  const Id stats = c.Add("Stats", 0, {});
  const Id name = s.Intern("count");
  c.SetStatics(stats, {{name, Type::kLong, 0x0102030405060708}, {name, Type::kInt, 9}});
  EXPECT_THROW(c.SetStatics(stats, std::vector<StaticField>(65536)), std::length_error);
  c.DumpAll();
  w.HeapDumpEnd();
  const Rec* segment = nullptr;
  const std::vector<Rec> recs = TopRecords(out.data());
  for (const Rec& r : recs) {
    if (r.tag == kTagHeapDumpSegment) segment = &r;
  }
  ASSERT_NE(segment, nullptr);
  const std::vector<Rec> subs = SubRecords(segment->body);
  ASSERT_EQ(subs.size(), 1u);
  const std::string& b = subs[0].body;
  EXPECT_EQ(Be(b, 0, 8), stats);
  EXPECT_EQ(Be(b, 66, 2), 2u);  // statics, after the empty constant pool
  EXPECT_EQ(Be(b, 68, 8), name);
  EXPECT_EQ(Be(b, 76, 1), static_cast<uint64_t>(Type::kLong));
  EXPECT_EQ(Be(b, 77, 8), 0x0102030405060708u);
  EXPECT_EQ(Be(b, 85, 8), name);
  EXPECT_EQ(Be(b, 93, 1), static_cast<uint64_t>(Type::kInt));
  EXPECT_EQ(Be(b, 94, 4), 9u);
  EXPECT_EQ(Be(b, 98, 2), 0u);  // no instance fields
}

TEST(ClassTable, LoadClassNowClassDumpLater) {
  StringOutput out;
  Writer w(out);
  IdAllocator ids(0x100);
  StringTable s(w, ids);
  ClassTable c(w, s, ids);
  const Id base = c.Add("Base", 0, {});
  const FieldSpec fields[] = {{"next", Type::kObject}, {"n", Type::kInt}};
  const Id node = c.Add("app::Node", base, fields, 40);
  EXPECT_EQ(c.Serial(base), 1u);
  EXPECT_EQ(c.Serial(node), 2u);
  EXPECT_EQ(c.DataSize(node), 12u);
  EXPECT_THROW(c.Add("Orphan", 0x999999, {}), std::logic_error);
  c.DumpAll();
  w.HeapDumpEnd();

  const std::vector<Rec> recs = TopRecords(out.data());
  std::map<Id, std::string> names;
  std::vector<Rec> loads;
  const Rec* segment = nullptr;
  for (const Rec& r : recs) {
    if (r.tag == kTagUtf8) names[Be(r.body, 0, 8)] = r.body.substr(8);
    if (r.tag == kTagLoadClass) loads.push_back(r);
    if (r.tag == kTagHeapDumpSegment) segment = &r;
  }
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(Be(loads[1].body, 0, 4), 2u);
  EXPECT_EQ(Be(loads[1].body, 4, 8), node);
  EXPECT_EQ(names.at(Be(loads[1].body, 16, 8)), "app::Node");
  ASSERT_NE(segment, nullptr);
  const std::vector<Rec> subs = SubRecords(segment->body);
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(Be(subs[0].body, 0, 8), base);  // the superclass first
  const std::string& d = subs[1].body;
  EXPECT_EQ(Be(d, 0, 8), node);
  EXPECT_EQ(Be(d, 12, 8), base);
  EXPECT_EQ(Be(d, 60, 4), 40u);   // instance size
  EXPECT_EQ(Be(d, 64, 2), 0u);    // constant pool
  EXPECT_EQ(Be(d, 66, 2), 0u);    // statics
  EXPECT_EQ(Be(d, 68, 2), 2u);    // fields
  EXPECT_EQ(names.at(Be(d, 70, 8)), "next");
  EXPECT_EQ(Be(d, 78, 1), 2u);
  EXPECT_EQ(names.at(Be(d, 79, 8)), "n");
  EXPECT_EQ(Be(d, 87, 1), 10u);
}

TEST(Utf16, DecodesAndReplaces) {
  EXPECT_EQ(Utf16("ab"), u"ab");
  EXPECT_EQ(Utf16("\xC3\xA9"), u"\u00E9");
  EXPECT_EQ(Utf16("\xE2\x82\xAC"), u"\u20AC");
  EXPECT_EQ(Utf16("\xF0\x9F\x98\x80"), std::u16string({0xD83D, 0xDE00}));
  EXPECT_EQ(Utf16("a\xFF" "b"), u"a\uFFFDb");
  EXPECT_EQ(Utf16("\xC3"), u"\uFFFD");          // truncated sequence
  EXPECT_EQ(Utf16("\xC0\xAF"), u"\uFFFD\uFFFD");  // overlong '/'
}

TEST(StandardClasses, WhatReadersRequire) {
  StringOutput out;
  Writer w(out);
  IdAllocator ids(0x100);
  StringTable s(w, ids);
  ClassTable c(w, s, ids);
  StandardClasses std_classes(c);
  c.DumpAll();
  const Id name = std_classes.WriteString(w, ids, "main \xC3\xA9");
  const Id thread = ids.Next();
  std_classes.WriteThread(w, thread, {name, 42, true, kThreadWaiting});
  std_classes.WriteFinalizer(w, ids, 0x50);
  w.HeapDumpEnd();

  std::map<Id, std::string> names;
  std::map<Id, std::string> class_names;  // by class id
  std::map<Id, Rec> dumps;
  std::vector<Rec> heap;
  for (const Rec& r : TopRecords(out.data())) {
    if (r.tag == kTagUtf8) names[Be(r.body, 0, 8)] = r.body.substr(8);
    if (r.tag == kTagLoadClass) class_names[Be(r.body, 4, 8)] = names.at(Be(r.body, 16, 8));
    if (r.tag == kTagHeapDumpSegment) {
      for (Rec& sub : SubRecords(r.body)) heap.push_back(sub);
    }
  }
  std::set<std::string> dumped;
  std::map<std::string, Id> by_name;
  for (const Rec& r : heap) {
    if (r.tag != kClassDump) continue;
    const Id id = Be(r.body, 0, 8);
    const Id super = Be(r.body, 12, 8);
    if (super != 0) {
      EXPECT_TRUE(dumped.contains(class_names.at(super))) << class_names.at(id);
    }
    dumped.insert(class_names.at(id));
    by_name[class_names.at(id)] = id;
    dumps[id] = r;
  }
  for (const char* n : {"java/lang/Object", "java/lang/Class", "java/lang/ClassLoader", "java/lang/String",
                        "java/lang/Thread", "java/lang/ref/Reference", "java/lang/ref/WeakReference",
                        "java/lang/ref/SoftReference", "java/lang/ref/FinalReference",
                        "java/lang/ref/PhantomReference", "[Z", "[C", "[F", "[D", "[B", "[S", "[I", "[J"}) {
    EXPECT_TRUE(dumped.contains(n)) << n;
  }
  EXPECT_GT(Be(dumps.at(by_name.at("java/lang/Object")).body, 60, 4), 0u);
  const std::string& ref = dumps.at(by_name.at("java/lang/ref/Reference")).body;
  EXPECT_EQ(Be(ref, 68, 2), 1u);
  EXPECT_EQ(names.at(Be(ref, 70, 8)), "referent");

  // char[] "main é", then the String, the Thread, the Finalizer.
  const size_t first = heap.size() - 4;
  ASSERT_EQ(heap[first].tag, kPrimitiveArrayDump);
  const std::string& chars = heap[first].body;
  EXPECT_EQ(Be(chars, 12, 4), 6u);
  EXPECT_EQ(Be(chars, 16, 1), 5u);
  EXPECT_EQ(chars.substr(17), std::string("\0m\0a\0i\0n\0 \0\xE9", 12));
  const std::string& str = heap[first + 1].body;
  EXPECT_EQ(Be(str, 0, 8), name);
  EXPECT_EQ(Be(str, 12, 8), by_name.at("java/lang/String"));
  EXPECT_EQ(Be(str, 20, 4), 12u);
  EXPECT_EQ(Be(str, 24, 8), Be(chars, 0, 8));  // value
  const std::string& t = heap[first + 2].body;
  EXPECT_EQ(Be(t, 0, 8), thread);
  EXPECT_EQ(Be(t, 20, 4), 25u);
  EXPECT_EQ(Be(t, 24, 8), name);
  EXPECT_EQ(Be(t, 32, 8), 42u);
  EXPECT_EQ(Be(t, 40, 4), 5u);
  EXPECT_EQ(Be(t, 44, 1), 1u);
  EXPECT_EQ(Be(t, 45, 4), 0x91u);
  const std::string& fin = heap[first + 3].body;
  EXPECT_EQ(Be(fin, 12, 8), by_name.at("java/lang/ref/Finalizer"));
  EXPECT_EQ(Be(fin, 24, 8), 0x50u);
}

}  // namespace
}  // namespace libdump::format::hprof
