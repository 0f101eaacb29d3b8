// The parts of libdump whose memory lies in the heap it dumps. Each has a
// registered type, "libdump: <name>", whose typeinfo record carries the
// kTypeOwn flag (docs/FORMAT.md): the tools leave libdump's own memory out
// of the program's answers by that flag, never by a name.
#pragma once

#include <cstdint>

namespace libdump::internal {

enum class OwnComponent : uint8_t {
  kNone = 0,
  kDumpWriter,      // the dump in progress: module list, memory map, vtable cache
  kDumpBuffer,      // the dump's output buffers and compressor
  kSymbolizer,      // symbol tables and DWARF of the modules
  kUnwinder,        // unwind tables and libunwind's caches
  kRootRegistry,    // roots and finalizers registered with AddRoot / SetFinalizer
  kProfiler,        // the profilers' tables
  kFlightRecorder,  // the flight recorder's sessions and windows
  kCount,
};

// "libdump: dump writer", ...: the type name of the component's objects.
inline const char* OwnComponentName(OwnComponent c) {
  switch (c) {
    case OwnComponent::kDumpWriter: return "libdump: dump writer";
    case OwnComponent::kDumpBuffer: return "libdump: dump buffer";
    case OwnComponent::kSymbolizer: return "libdump: symbolizer";
    case OwnComponent::kUnwinder: return "libdump: unwinder";
    case OwnComponent::kRootRegistry: return "libdump: root registry";
    case OwnComponent::kProfiler: return "libdump: profiler tables";
    case OwnComponent::kFlightRecorder: return "libdump: flight recorder";
    default: return "libdump";
  }
}

}  // namespace libdump::internal
