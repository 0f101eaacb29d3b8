// How a snapshot names the return addresses in its stacks: by the tables
// crash_symbols prepared (a crash handler: no allocation, no lock), by the
// pprof symbolizer (a snapshot on request), or not at all (hex).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "libdump/format/pprof_profile.h"
#include "samplers/flight_recorder/trace_event_json.h"
#include "samplers/symbolize/crash_symbols.h"
#include "samplers/symbolize/pprof_symbolizer.h"

namespace libdump::samplers::flight {

// Names return addresses in stacks: functions, or hex where no name is
// known (and in a crash handler without prepared tables).
class Namer {
 public:
  virtual ~Namer() = default;
  virtual void Write(JsonOut& o, uintptr_t pc) = 0;
  // A frame of libdump's own (the interposition's, the profilers', the
  // allocator's) on top of a wait's or an allocation's stack.
  virtual bool IsOwnFrame(uintptr_t) { return false; }
  // Whether some frames may stay hex: the mappings then go in the file.
  virtual bool MayLeaveAddresses() const { return false; }
};

// A function of libdump's own: the profilers', the allocator's, malloc.
bool IsOwnFunction(std::string_view f);

class CrashNamer final : public Namer {
 public:
  void Write(JsonOut& o, uintptr_t pc) override {
    const std::string_view name = crash_symbols::Lookup(pc - 1);
    if (name.empty()) o.Hex(pc);
    else o.String(name);
  }
  bool IsOwnFrame(uintptr_t pc) override {
    const std::string_view name = crash_symbols::Lookup(pc - 1);
    return !name.empty() && IsOwnFunction(name);
  }
  bool MayLeaveAddresses() const override { return true; }
};

class SymbolNamer final : public Namer {
 public:
  SymbolNamer() : builder_({{"samples", "count"}}, {"samples", "count"}, 1), sym_(builder_) {}
  void Write(JsonOut& o, uintptr_t pc) override {
    auto it = cache_.find(pc);
    if (it == cache_.end()) it = cache_.emplace(pc, sym_.FunctionName(pc)).first;
    if (it->second.empty()) o.Hex(pc);
    else o.String(it->second);
  }
  bool IsOwnFrame(uintptr_t pc) override {
    auto it = cache_.find(pc);
    if (it == cache_.end()) it = cache_.emplace(pc, sym_.FunctionName(pc)).first;
    return IsOwnFunction(it->second);
  }

 private:
  pprof::ProfileBuilder builder_;
  ProfileSymbolizer sym_;
  std::unordered_map<uintptr_t, std::string> cache_;
};

}  // namespace libdump::samplers::flight
