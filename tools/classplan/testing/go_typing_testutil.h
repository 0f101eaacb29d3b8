// A Go program as its DWARF would describe it, and a Go 1.7 dump it could
// have written, every word hand-placed: go_typing_test.cc checks how
// --binary types this dump, and go_typing_fuzz.cc mutates it
// (fuzz/seeds/gotyping/typed.heapdump holds Dump()'s bytes; a test keeps
// the two equal).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "testing/go_dump_encoder_testutil.h"
#include "go_types.h"

namespace libdump::dumptohprof::testing {

using format::Dialect;
using format::Field;
using format::kFieldPtr;
using format::testing::GoEncoder;
using godwarf::GoKind;
using godwarf::GoProgram;
using godwarf::GoType;
using godwarf::kNoType;

inline GoType Ty(std::string name, uint64_t size, GoKind kind, uint32_t elem = kNoType) {
  GoType t;
  t.name = std::move(name);
  t.size = size;
  t.kind = kind;
  t.elem = elem;
  return t;
}

inline constexpr uint64_t kGoData = 12;  // the tag of Go's data segment record
inline constexpr uint64_t kBoxDesc = 0x4b0000, kBoxPtrDesc = 0x4b0100, kItab = 0x600;

// A program as Go's DWARF describes it (go_types_test.cc gives the shapes):
//   type node struct { next *node; val int; tag interface{}; err error }  // 48 bytes
//   type alias struct { ... the same members ... }
//   type box struct { v int }
//   var head *node; var list []*node; var err error; var odd *node; var other *alias
//   func main() { var e error; var b *box ... }
struct Program {
  GoProgram p{8};
  Program(bool with_main = true) {
    const uint32_t i64 = p.Add(Ty("int", 8, GoKind::kInt));
    const uint32_t node_s = p.Add(Ty("main.node", 48, GoKind::kStruct));
    const uint32_t node = p.Add(Ty("main.node", 0, GoKind::kTypedef, node_s));
    const uint32_t pnode = p.Add(Ty("*main.node", 8, GoKind::kPointer, node));
    const uint32_t eface = p.Add(Ty("interface {}", 16, GoKind::kEface));
    const uint32_t iface = p.Add(Ty("error", 16, GoKind::kIface));
    const std::vector<godwarf::GoMember> members = {
        {"next", 0, pnode}, {"val", 8, i64}, {"tag", 16, eface}, {"err", 32, iface}};
    p.mutable_type(node_s).members = members;
    const uint32_t alias = p.Add(Ty("main.alias", 48, GoKind::kStruct));
    p.mutable_type(alias).members = members;
    const uint32_t palias = p.Add(Ty("*main.alias", 8, GoKind::kPointer, alias));
    const uint32_t box = p.Add(Ty("main.box", 8, GoKind::kStruct));
    p.mutable_type(box).members = {{"v", 0, i64}};
    const uint32_t pbox = p.Add(Ty("*main.box", 8, GoKind::kPointer, box));
    const uint32_t slice = p.Add(Ty("[]*main.node", 24, GoKind::kSlice, pnode));
    p.AddGlobal({"main.head", 0x7000, pnode});
    p.AddGlobal({"main.list", 0x7008, slice});
    p.AddGlobal({"main.err", 0x7020, iface});
    p.AddGlobal({"main.odd", 0x7030, pnode});
    p.AddGlobal({"main.other", 0x7038, palias});
    p.AddRuntimeType(kBoxDesc, box);
    p.AddRuntimeType(kBoxPtrDesc, pbox);
    if (with_main) p.AddFunction("main.main", 0x403000);
    // main.main's locals while the pc is in [0x403000, 0x403100): `e error`
    // at CFA-24, `b *main.box` at CFA-8.
    p.AddLocal(0x403000, 0x403000, 0x403100, -24, iface);
    p.AddLocal(0x403000, 0x403000, 0x403100, -8, pbox);
    p.Byte();
    p.Finish();
  }
};

// The dump such a program writes, every word hand-placed.
inline std::string Dump() {
  GoEncoder e(Dialect::kGo17);
  e.Params(0x1000, 0x9000);
  e.Type(kBoxDesc, 8, "main.box", true);
  e.Itab(kItab, kBoxDesc, true);
  // Go's bitmaps mark an interface's data word only: node pointers at 0, 24, 40.
  const std::vector<Field> node = {{kFieldPtr, 0}, {kFieldPtr, 24}, {kFieldPtr, 40}};
  // A: next B, val 1, tag = (*main.box)(0x1100), err nil
  e.Object(0x1000, GoEncoder::Words({0x1040, 1, kBoxPtrDesc, 0x1100, 0, 0}), node);
  // B: next nil, val 2, tag nil, err = error(main.box at 0x1110) through the itab
  e.Object(0x1040, GoEncoder::Words({0, 2, 0, 0, kItab, 0x1110}), node);
  e.Object(0x1100, GoEncoder::Words({7}), {});
  e.Object(0x1110, GoEncoder::Words({8}), {});
  // list's backing array: A, B, an interior pointer into A, nil
  e.Object(0x1200, GoEncoder::Words({0x1000, 0x1040, 0x1008, 0}),
           {{kFieldPtr, 0}, {kFieldPtr, 8}, {kFieldPtr, 16}, {kFieldPtr, 24}});
  // 16 bytes: smaller than a node
  e.Object(0x1300, GoEncoder::Words({0, 0x1000}), {{kFieldPtr, 8}});
  e.Object(0x1400, GoEncoder::Words({9}), {});  // reached only from main.main's b
  e.Object(0x1500, GoEncoder::Words({10}), {});  // reached only from main.main's e
  e.Goroutine(0x2000, 0x8000, 1, 2, "");
  // 24 bytes of frame at sp 0x8000 (its CFA 0x8018, pc 0x403010): e = error
  // (main.box at 0x1500) through the itab, b = 0x1400
  e.Frame(0x8000, 0, 0, GoEncoder::Words({kItab, 0x1500, 0x1400}), 0x403000, "main.main",
          {{kFieldPtr, 8}, {kFieldPtr, 16}});
  // data: head, list {array, len, cap}, err {tab, data}, odd, other
  e.Segment(kGoData, 0x7000, GoEncoder::Words({0x1000, 0x1200, 3, 4, kItab, 0x1110, 0x1300, 0x1000}),
            {{kFieldPtr, 0}, {kFieldPtr, 8}, {kFieldPtr, 40}, {kFieldPtr, 48}, {kFieldPtr, 56}});
  e.Eof();
  return e.bytes();
}

}  // namespace libdump::dumptohprof::testing
