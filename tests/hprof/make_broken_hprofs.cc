// Writes a small valid hprof and copies of it that each break one rule a real
// reader enforces (Eclipse MAT and jhat more strictly than VisualVM), so that
// the interop test can prove HeapCheck.java notices every one of them.
//
//   make_broken_hprofs DIR
// writes DIR/NAME.hprof and prints "NAME<TAB>text of the PROBLEM line it must
// cause" per file ("ok": none).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "libdump/format/hprof_classes.h"
#include "libdump/format/hprof_standard_classes.h"
#include "libdump/format/hprof_writer.h"

using namespace libdump::format::hprof;

namespace {

enum class Break {
  kNone, kSuperNotDumped, kFrameRootBeforeThread, kTraceBeforeFrame, kTraceWithoutFrame, kTwoHeapDumps,
  kSecondSegmentRun, kUnclosedHeap, kInstanceBeforeClass, kDuplicateId, kZeroId, kRootToNothing,
  kSlotToNothing, kNoLoadClass, kTopLevelAfterHeap, kUndefinedTrace,
};

struct Case {
  Break b;
  const char* name;
  const char* problem;
};

constexpr Case kCases[] = {
    {Break::kNone, "ok", ""},
    {Break::kSuperNotDumped, "super_not_dumped", "which is not dumped"},
    {Break::kFrameRootBeforeThread, "frame_root_before_thread", "before (or without) its ROOT THREAD OBJECT"},
    {Break::kTraceBeforeFrame, "trace_before_frame", "before (or without) its FRAME"},
    {Break::kTraceWithoutFrame, "trace_without_frame", "before (or without) its FRAME"},
    {Break::kTwoHeapDumps, "two_heap_dumps", "2 HEAP DUMP (0x0C) records"},
    {Break::kSecondSegmentRun, "second_segment_run", "a second heap dump"},
    {Break::kUnclosedHeap, "unclosed_heap", "0 HEAP DUMP END records"},
    {Break::kInstanceBeforeClass, "instance_before_class", "before (or without) the dump of its class"},
    {Break::kDuplicateId, "duplicate_id", "id used twice"},
    {Break::kZeroId, "zero_id", "with id 0"},
    {Break::kRootToNothing, "root_to_nothing", "which is not in the file"},
    {Break::kSlotToNothing, "slot_to_nothing", "does not resolve"},
    {Break::kNoLoadClass, "no_load_class", "without a LOAD CLASS"},
    {Break::kTopLevelAfterHeap, "top_level_after_heap", "after the heap dump began"},
    {Break::kUndefinedTrace, "undefined_trace", "trace serial 77 used"},
};

constexpr Id kMissing = 0xdead0;

void PutBe(std::string& out, uint64_t v, int bytes) {
  for (int s = 8 * (bytes - 1); s >= 0; s -= 8) out.push_back(static_cast<char>(v >> s));
}

// A top-level record with one ROOT UNKNOWN sub-record.
std::string RootRecord(uint8_t tag, Id object) {
  std::string r(1, static_cast<char>(tag));
  PutBe(r, 0, 4);
  PutBe(r, 9, 4);
  r.push_back(static_cast<char>(kRootUnknown));
  PutBe(r, object, 8);
  return r;
}

// Offset of the first HEAP DUMP SEGMENT: walks the top-level records.
size_t FirstSegment(const std::string& bytes) {
  size_t at = bytes.find('\0') + 1 + 4 + 8;  // header, id size, timestamp
  while (static_cast<uint8_t>(bytes.at(at)) != kTagHeapDumpSegment) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len = len << 8 | static_cast<uint8_t>(bytes.at(at + 5 + i));
    at += 9 + len;
  }
  return at;
}

std::string Write(Break b) {
  StringOutput out;
  Writer w(out);
  IdAllocator ids(0x100000);
  StringTable strings(w, ids);
  ClassTable classes(w, strings, ids);
  StandardClasses std_classes(classes);
  const FieldSpec node_fields[] = {{"next", Type::kObject}, {"value", Type::kLong}};
  const Id node = classes.Add("demo::Node", std_classes.object(), node_fields, 16);
  const Id node_array = classes.Add("[Ldemo::Node;", std_classes.object(), {});
  const Id module = classes.Add("demo", std_classes.object(), {});
  const Id orphan = ids.Next();
  if (b == Break::kSuperNotDumped) w.LoadClass(1000, orphan, kEmptyTrace, strings.Intern("demo::Orphan"));

  const Id f0 = ids.Next(), f1 = ids.Next();
  const Id frames[] = {f0, b == Break::kTraceWithoutFrame ? ids.Next() : f1};
  constexpr uint32_t kTrace = 2, kThread = 1;
  const auto write_frames = [&] {
    for (Id f : {f0, f1}) {
      w.Frame(f, strings.Intern(f == f0 ? "leaf()" : "main"), strings.Intern("()"), strings.Intern("/usr/bin/demo"),
              classes.Serial(module), -1);
    }
  };
  if (b != Break::kTraceBeforeFrame) write_frames();
  w.Trace(kTrace, kThread, frames);
  if (b == Break::kTraceBeforeFrame) write_frames();
  const Id thread = ids.Next();
  w.StartThread(kThread, thread, kTrace, strings.Intern("main"), 0, 0);

  constexpr Id kFirst = 0x10000;
  constexpr int kNodes = 10;
  const auto node_data = [](int i) {
    std::string d;
    PutBe(d, i + 1 < kNodes ? kFirst + 32 * (i + 1) : 0, 8);
    PutBe(d, static_cast<uint64_t>(i), 8);
    return std::vector<uint8_t>(d.begin(), d.end());
  };
  if (b == Break::kInstanceBeforeClass) w.Instance(kFirst, kEmptyTrace, node, node_data(0));
  classes.DumpAll();
  if (b == Break::kSuperNotDumped) w.ClassDump({orphan, kEmptyTrace, kMissing, 0, 16, {}, {}});
  if (b == Break::kNoLoadClass) w.ClassDump({ids.Next(), kEmptyTrace, std_classes.object(), 0, 16, {}, {}});
  if (b == Break::kFrameRootBeforeThread) w.RootJavaFrame(kFirst, kThread, 0);
  std_classes.WriteThread(w, thread, {std_classes.WriteString(w, ids, "main"), 1, false, kThreadRunnable});
  w.RootThreadObject(thread, kThread, kTrace);
  std::vector<Id> all;
  for (int i = b == Break::kInstanceBeforeClass ? 1 : 0; i < kNodes; ++i) {
    w.Instance(kFirst + 32 * i, b == Break::kUndefinedTrace && i == 3 ? 77 : kEmptyTrace, node, node_data(i));
  }
  for (int i = 0; i < kNodes; ++i) all.push_back(kFirst + 32 * i);
  if (b == Break::kDuplicateId) w.Instance(kFirst, kEmptyTrace, node, node_data(0));
  if (b == Break::kZeroId) w.Instance(0, kEmptyTrace, node, node_data(kNodes - 1));
  if (b == Break::kSlotToNothing) all.push_back(kMissing);
  w.ObjectArray(0x80000, kEmptyTrace, node_array, all);
  if (b != Break::kFrameRootBeforeThread) w.RootJavaFrame(kFirst, kThread, 0);
  w.RootJniGlobal(0x80000, 0x600000);
  if (b == Break::kRootToNothing) w.RootUnknown(kMissing);
  w.HeapDumpEnd();

  std::string bytes = out.data();
  constexpr size_t kEnd = 9;  // HEAP DUMP END, the last record
  switch (b) {
    case Break::kTwoHeapDumps: {
      // The segment becomes a HEAP DUMP, and a second one follows it.
      bytes.resize(bytes.size() - kEnd);
      bytes[FirstSegment(bytes)] = 0x0C;
      bytes += RootRecord(0x0C, kFirst);
      break;
    }
    case Break::kSecondSegmentRun:
      bytes += RootRecord(kTagHeapDumpSegment, kFirst) + bytes.substr(bytes.size() - kEnd);
      break;
    case Break::kUnclosedHeap: bytes.resize(bytes.size() - kEnd); break;
    case Break::kTopLevelAfterHeap: {
      std::string utf8(1, static_cast<char>(kTagUtf8));
      PutBe(utf8, 0, 4);
      PutBe(utf8, 9, 4);
      PutBe(utf8, ids.Next(), 8);
      bytes += utf8 + "x";
      break;
    }
    default: break;
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_broken_hprofs DIR\n");
    return 2;
  }
  for (const Case& c : kCases) {
    const std::string path = std::string(argv[1]) + "/" + c.name + ".hprof";
    std::ofstream f(path, std::ios::binary);
    const std::string bytes = Write(c.b);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) {
      std::perror(path.c_str());
      return 1;
    }
    std::printf("%s\t%s\n", c.name, c.problem);
  }
  return 0;
}
