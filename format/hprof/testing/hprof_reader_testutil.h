// A small hprof for the reader's tests and fuzz driver: every record and
// sub-record kind the reader knows, written with libdump::hprof's Writer, and
// a visitor that prints what it is given, one line per call.
#pragma once

#include <cstdint>
#include <string>

#include "libdump/format/hprof_reader.h"
#include "libdump/format/hprof_writer.h"

namespace libdump::format::hprof::testing {

inline std::string SampleHprof(uint64_t max_segment = uint64_t{1} << 30) {
  StringOutput out;
  Writer w(out, {.max_segment = max_segment, .timestamp_ms = 1234});
  w.Utf8(100, "Node");
  w.Utf8(101, "next");
  w.Utf8(102, "val");
  w.Utf8(103, "main");
  w.LoadClass(1, 200, kEmptyTrace, 100);
  w.Frame(300, 103, 103, 103, 1, 42);
  const Id frames[] = {300};
  w.Trace(2, 1, frames);
  w.StartThread(1, 500, 2, 103, 0, 0);
  ClassDumpRecord c;
  c.id = 200;
  c.instance_size = 12;
  c.statics = {{101, Type::kObject, 0x1000}, {102, Type::kInt, 7}};
  c.fields = {{101, Type::kObject}, {102, Type::kInt}};
  w.ClassDump(c);
  w.RootUnknown(0x1000);
  w.RootJniGlobal(0x1010, 0x99);
  w.RootJavaFrame(0x1000, 1, 0);
  w.RootThreadObject(500, 1, 2);
  const uint8_t a[] = {0, 0, 0, 0, 0, 0, 0x10, 0x10, 0, 0, 0, 5};
  w.Instance(0x1000, kEmptyTrace, 200, a);
  const uint8_t b[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6};
  w.Instance(0x1010, kEmptyTrace, 200, b);
  const Id elems[] = {0x1000, 0, 0x1010};
  w.ObjectArray(0x1020, kEmptyTrace, 200, elems);
  w.BeginPrimitiveArray(0x1030, kEmptyTrace, Type::kChar, 2);
  const uint8_t chars[] = {0, 'h', 0, 'i'};
  w.Raw(chars);
  w.HeapDumpEnd();
  return out.data();
}

}  // namespace libdump::format::hprof::testing
