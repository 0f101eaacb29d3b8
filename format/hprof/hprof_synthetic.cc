// Writes a small hprof with the writer alone, as a non-Java producer would:
// the standard classes, one user class, a linked list, arrays, a thread with
// two frames and every root kind libdump uses. Real readers judge it in
// tests/hprof/hprof.cmake.
//
//   hprof_synthetic OUT.hprof
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "libdump/format/hprof_classes.h"
#include "libdump/format/hprof_standard_classes.h"
#include "libdump/format/hprof_writer.h"

using namespace libdump::format::hprof;

namespace {

void PutBe(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int s = 8 * (bytes - 1); s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hprof_synthetic OUT.hprof\n");
    return 2;
  }
  const int fd = ::open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::perror(argv[1]);
    return 1;
  }
  FdOutput out(fd);
  WriterOptions options;
  options.max_segment = 4096;  // several segments even for this small heap
  Writer w(out, options);
  IdAllocator ids(0x100000);
  StringTable strings(w, ids);
  ClassTable classes(w, strings, ids);
  StandardClasses std_classes(classes);
  const FieldSpec node_fields[] = {{"next", Type::kObject}, {"value", Type::kLong}, {"flag", Type::kByte}};
  const Id node = classes.Add("demo::Node", std_classes.object(), node_fields, 24);
  const Id node_array = classes.Add("[Ldemo::Node;", std_classes.object(), {});

  const Id module_class = classes.Add("demo", std_classes.object(), {});
  const Id f0 = ids.Next(), f1 = ids.Next();
  w.Frame(f0, strings.Intern("leaf()"), strings.Intern("()"), strings.Intern("/usr/bin/demo"),
          classes.Serial(module_class), -1);
  w.Frame(f1, strings.Intern("main"), strings.Intern("()"), strings.Intern("/usr/bin/demo"),
          classes.Serial(module_class), -1);
  const Id frames[] = {f0, f1};
  constexpr uint32_t kTrace = 2, kThreadSerial = 1;
  w.Trace(kTrace, kThreadSerial, frames);
  const Id thread = ids.Next();  // the Thread instance written below
  w.StartThread(kThreadSerial, thread, kTrace, strings.Intern("main"), 0, 0);

  classes.DumpAll();
  const Id name = std_classes.WriteString(w, ids, "main");
  std_classes.WriteThread(w, thread, {name, 1234, false, kThreadRunnable});
  w.RootThreadObject(thread, kThreadSerial, kTrace);

  constexpr int kNodes = 1000;
  constexpr Id kFirst = 0x10000;
  std::vector<Id> all;
  for (int i = 0; i < kNodes; ++i) {
    const Id id = kFirst + 32 * i;
    std::vector<uint8_t> d;
    PutBe(d, i + 1 < kNodes ? id + 32 : 0, 8);
    PutBe(d, static_cast<uint64_t>(i), 8);
    PutBe(d, i & 1, 1);
    w.Instance(id, kEmptyTrace, node, d);
    all.push_back(id);
  }
  w.ObjectArray(0x80000, kEmptyTrace, node_array, all);
  w.BeginPrimitiveArray(0x90000, kEmptyTrace, Type::kInt, 4);
  const uint8_t ints[16] = {0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xFF, 0xFF, 0xFF, 0xFF};
  w.Raw(ints);
  w.RootJavaFrame(kFirst, kThreadSerial, 0);
  w.RootJniGlobal(0x80000, 0x600000);
  w.RootUnknown(0x90000);
  w.RootUnknown(std_classes.WriteFinalizer(w, ids, kFirst + 32));
  w.HeapDumpEnd();
  ::close(fd);
  std::printf("wrote %s: %llu segments\n", argv[1], static_cast<unsigned long long>(w.segments()));
  return 0;
}
