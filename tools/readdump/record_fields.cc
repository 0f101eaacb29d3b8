#include "record_fields.h"

#include <cstdio>

namespace libdump::readdump {

using format::Kind;

std::string HexString(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string ObjectKindName(uint64_t kind) {
  switch (kind) {
    case format::kObjRegular: return "regular";
    case format::kObjArray: return "array";
    case format::kObjChan: return "chan";
  }
  return std::to_string(kind);
}

std::string FieldKindName(uint64_t kind) {
  switch (kind) {
    case format::kFieldPtr: return "ptr";
    case format::kFieldString: return "string";
    case format::kFieldSlice: return "slice";
    case format::kFieldIface: return "iface";
    case format::kFieldEface: return "eface";
    case format::kFieldInt: return "int";
    case format::kFieldUint: return "uint";
    case format::kFieldFloat: return "float";
    case format::kFieldBool: return "bool";
    case format::kFieldChar: return "char";
    case format::kFieldBytes: return "bytes";
  }
  return std::to_string(kind);
}

std::string StatusName(uint64_t status) {
  switch (status) {
    case format::kStatusIdle: return "idle";
    case format::kStatusRunnable: return "runnable";
    case format::kStatusRunning: return "running";
    case format::kStatusSyscall: return "syscall";
    case format::kStatusWaiting: return "waiting";
  }
  return std::to_string(status);
}

std::string TypeFlagsName(uint64_t flags) {
  if (flags == 0) return "0";
  std::string out;
  const auto add = [&](const char* s) { out += out.empty() ? s : std::string("|") + s; };
  if (flags & format::kTypeConservative) add("conservative");
  if (flags & format::kTypePolymorphic) add("polymorphic");
  if (flags & format::kTypeArray) add("array");
  const uint64_t unknown =
      flags & ~uint64_t{format::kTypeConservative | format::kTypePolymorphic | format::kTypeArray};
  if (unknown != 0) add(HexString(unknown).c_str());
  return out;
}

void VisitFields(const format::Record& r, FieldSink& s) {
  switch (r.kind) {
    case Kind::kObject:
      s.Hex("addr", r.object.addr);
      s.Hex("type", r.object.type);
      s.Name("kind", ObjectKindName(r.object.kind));
      s.Dec("size", r.object.size);
      return;
    case Kind::kEof:
      return;
    case Kind::kStackRoot:
      s.Hex("addr", r.stack_root.addr);
      s.Hex("rootptr", r.stack_root.ptr);
      s.Hex("frame", r.stack_root.frame);
      return;
    case Kind::kDataRoot:
      s.Hex("addr", r.data_root.addr);
      s.Hex("rootptr", r.data_root.ptr);
      return;
    case Kind::kOtherRoot:
      s.Str("description", r.other_root.description);
      s.Hex("rootptr", r.other_root.ptr);
      return;
    case Kind::kType:
      s.Hex("addr", r.type.addr);
      s.Dec("size", r.type.size);
      s.Str("name", r.type.name);
      s.Bool("efaceptr", r.type.eface_ptr);
      s.BeginList("fields");
      for (const format::Field& f : r.type.fields) {
        s.BeginItem();
        s.Name("kind", FieldKindName(f.kind));
        s.Dec("offset", f.offset);
        s.EndItem();
      }
      s.EndList();
      return;
    case Kind::kGoroutine: {
      const format::GoroutineRecord& g = r.goroutine;
      s.Hex("addr", g.addr);
      s.Hex("tos", g.tos);
      s.Dec("goid", g.goid);
      s.Hex("gopc", g.gopc);
      s.Name("status", StatusName(g.status));
      s.Bool("issystem", g.is_system);
      s.Bool("isbackground", g.is_background);
      s.Dec("waitsince", g.wait_since);
      s.Str("waitreason", g.wait_reason);
      return;
    }
    case Kind::kFrame:
      s.Hex("sp", r.frame.sp);
      s.Hex("parent", r.frame.parent);
      s.Hex("entry", r.frame.entry);
      s.Hex("pc", r.frame.pc);
      s.Str("name", r.frame.name);
      return;
    case Kind::kParams:
      s.Name("endian", r.params.big_endian ? "big" : "little");
      s.Dec("ptrsize", r.params.ptr_size);
      s.Dec("hchansize", r.params.hchan_size);
      s.Hex("heapstart", r.params.heap_start);
      s.Hex("heapend", r.params.heap_end);
      return;
    case Kind::kFinalizer:
      s.Hex("obj", r.finalizer.obj);
      s.Hex("funcval", r.finalizer.funcval);
      s.Hex("code", r.finalizer.code);
      s.Hex("fint", r.finalizer.fint);
      s.Hex("ot", r.finalizer.ot);
      return;
    case Kind::kItab:
      s.Hex("addr", r.itab.addr);
      s.Dec("ptr", r.itab.ptr);
      return;
    case Kind::kTypeFields:
      s.Hex("type", r.type_fields.type);
      s.BeginList("fields");
      for (const format::NamedField& f : r.type_fields.fields) {
        s.BeginItem();
        s.Dec("offset", f.offset);
        s.Name("kind", FieldKindName(f.kind));
        s.Dec("size", f.size);
        s.Str("name", f.name);
        s.EndItem();
      }
      s.EndList();
      return;
    case Kind::kTypeInfo:
      s.Hex("type", r.type_info.type);
      s.Name("flags", TypeFlagsName(r.type_info.flags));
      s.Hex("vtable", r.type_info.vtable);
      s.Hex("elemtype", r.type_info.elem_type);
      s.Dec("elemsize", r.type_info.elem_size);
      return;
    case Kind::kThreadInfo:
      s.Hex("goroutine", r.thread_info.goroutine);
      s.Dec("tid", r.thread_info.tid);
      s.Str("name", r.thread_info.name);
      return;
    case Kind::kMemStats:
      s.BeginList("stats");
      for (const format::MemStat& m : r.mem_stats.stats) {
        s.BeginItem();
        s.Str("name", m.name);
        s.Dec("value", m.value);
        s.EndItem();
      }
      s.EndList();
      return;
    case Kind::kModule:
      s.Hex("start", r.module.start);
      s.Hex("end", r.module.end);
      s.Hex("offset", r.module.file_offset);
      s.Str("path", r.module.path);
      s.Str("buildid", r.module.build_id);
      return;
    case Kind::kAllocStack:
      s.Hex("obj", r.alloc_stack.obj);
      s.Dec("size", r.alloc_stack.size);
      s.BeginList("pcs");
      for (uint64_t pc : r.alloc_stack.pcs) s.Hex(nullptr, pc);
      s.EndList();
      return;
  }
}

}  // namespace libdump::readdump
