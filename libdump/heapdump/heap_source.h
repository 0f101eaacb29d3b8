// What WriteHeapDump needs from the heap it dumps. The allocator implements
// it; tests implement it over objects they lay out themselves.
//
// Everything but Prepare() is called while every other thread is stopped (or
// in a forked child) and must neither allocate nor take a lock that another
// thread could hold.
#pragma once

#include <cstdint>

#include "libdump/format/record.h"
#include "libdump/format/writer.h"
#include "libdump/own_component.h"

namespace libdump::heapdump {

struct HeapObject {
  uint64_t addr = 0;
  uint64_t size = 0;  // slot size: what the dump copies
  uint64_t type = 0;  // registered type id, 0 if none
  uint64_t kind = format::kObjRegular;
};

class HeapSource {
 public:
  virtual ~HeapSource() = default;

  // Runs before the world stops: take whatever locks the other calls need
  // (a thread that is then stopped cannot be holding them). Never a lock that
  // malloc takes: names are demangled after the stop, and in a fork
  // snapshot's child, with these locks still held.
  virtual void Prepare() {}
  // Runs after the world resumes (or the fork), undoing Prepare().
  virtual void Finish() {}

  // [start, end) of the heap's address range.
  virtual void Range(uint64_t* start, uint64_t* end) = 0;
  // Every live object, in address order.
  virtual void ForEachObject(void (*fn)(const HeapObject&, void*), void* arg) = 0;
  // Start of the live object containing addr (interior pointers included), or 0.
  virtual uint64_t FindObject(uint64_t addr) = 0;
  // Writes the type, typefields and typeinfo records of every registered type.
  virtual void WriteTypes(format::Writer& w) = 0;
  // Statistics, by name.
  virtual void WriteMemStats(format::Writer& w) = 0;
  // Allocation stacks of sampled live objects (the heap profiler's), if any.
  virtual void WriteAllocStacks(format::Writer&) {}

  // Called before the stop (outside it, and allowed to allocate): from here
  // the calling thread's allocations are the component's, libdump's own
  // (libdump/own_memory.h); kNone ends it. Returns the previous component.
  virtual internal::OwnComponent SetOwnComponent(internal::OwnComponent) { return internal::OwnComponent::kNone; }
  // [start, end) of the heap's own static table that holds addresses, not
  // references (the allocator's arena bounds): not scanned for data roots,
  // where its words would root whatever object starts an arena.
  virtual void AddressTable(uint64_t* start, uint64_t* end) { *start = *end = 0; }
  // Whether the object starting at addr is libdump's own (allocated inside a
  // component). Called while stopped.
  virtual bool IsOwnObject(uint64_t addr) { return false; }
};

}  // namespace libdump::heapdump
