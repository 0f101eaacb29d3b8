// The heap dump of heapview's tests: the hand-built graph H of
// testdata/README.md ("Heap graphs"), whose dominators and retained sizes are
// worked out there, with a class named <script>alert(1)</script>.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"

namespace libdump::heapview::testing {

namespace detail {

inline constexpr uint64_t kNode = 0x100, kScript = 0x200;

struct Node {
  uint64_t next, child;
  int64_t val;
};

inline void Object(format::Writer& w, uint64_t addr, uint64_t type, const void* data, uint64_t size) {
  w.Object({addr, type, format::kObjRegular, size}, data);
}

inline void NodeObject(format::Writer& w, uint64_t addr, uint64_t next, uint64_t child, int64_t val) {
  const Node n{next, child, val};
  Object(w, addr, kNode, &n, sizeof n);
}

}  // namespace detail

inline void WriteTestDump(std::ostream& out) {
  using namespace libdump::format;
  using namespace detail;
  OstreamSink sink(out);
  Writer w(sink);
  w.Header();
  w.Params({0, 8, 0, 0x1000, 0x2000});
  w.Type({kNode, 24, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  w.TypeFields({kNode, {{0, kFieldPtr, 8, "next"}, {8, kFieldPtr, 8, "child"}, {16, kFieldInt, 8, "val"}}});
  w.Type({kScript, 16, "<script>alert(1)</script>", false, {{kFieldPtr, 0}}});
  w.TypeFields({kScript, {{0, kFieldPtr, 8, "p"}, {8, kFieldInt, 8, "x"}}});
  // A, B, C, D, E, F, G, H, U of graph H.
  NodeObject(w, 0x1000, 0x1100, 0x1200, 1);  // A
  NodeObject(w, 0x1100, 0x1300, 0, 2);       // B
  NodeObject(w, 0x1200, 0x1300, 0x1400, 3);  // C
  NodeObject(w, 0x1300, 0, 0x1508, 4);       // D (an interior pointer into F)
  const uint64_t e[2] = {0, 5};
  Object(w, 0x1400, kScript, e, sizeof e);   // E
  char f[64] = "hello heapview";
  Object(w, 0x1500, 0, f, sizeof f);         // F, untyped
  NodeObject(w, 0x1600, 0x1000, 0x1700, 7);  // G
  NodeObject(w, 0x1700, 0, 0, 8);            // H
  NodeObject(w, 0x1800, 0, 0, 9);            // U, unreachable
  w.DataRoot({0x9000, 0x1600});              // G
  w.OtherRoot("registry", 0x1200);           // C
  w.Eof();
  w.Flush();
}

// A chain of `n` Nodes from one data root, each 64 bytes apart: a dump big
// enough that indexing it takes a while (for stopping it midway).
inline void WriteChainDump(std::ostream& out, uint64_t n) {
  using namespace libdump::format;
  using namespace detail;
  OstreamSink sink(out);
  Writer w(sink);
  w.Header();
  w.Params({0, 8, 0, 0x100000, 0x100000 + 64 * n});
  w.Type({kNode, 24, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  w.TypeFields({kNode, {{0, kFieldPtr, 8, "next"}, {8, kFieldPtr, 8, "child"}, {16, kFieldInt, 8, "val"}}});
  for (uint64_t i = 0; i < n; ++i) {
    NodeObject(w, 0x100000 + 64 * i, i + 1 < n ? 0x100000 + 64 * (i + 1) : 0, 0, static_cast<int64_t>(i));
  }
  w.DataRoot({0x9000, 0x100000});
  w.Eof();
  w.Flush();
}

// `n` objects in lists of 1 to 97: each list an app::Session held by its
// own data root, then Nodes linked by `next`: a large heap with many top
// retainers of many sizes (the summary aggregates the smaller ones).
inline void WriteForestDump(std::ostream& out, uint64_t n) {
  using namespace libdump::format;
  using namespace detail;
  constexpr uint64_t kSession = 0x300, kBase = 0x100000;
  OstreamSink sink(out);
  Writer w(sink);
  w.Header();
  w.Params({0, 8, 0, kBase, kBase + 64 * n});
  w.Type({kNode, 24, "Node", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  w.TypeFields({kNode, {{0, kFieldPtr, 8, "next"}, {8, kFieldPtr, 8, "child"}, {16, kFieldInt, 8, "val"}}});
  w.Type({kSession, 24, "app::Session", false, {{kFieldPtr, 0}, {kFieldPtr, 8}}});
  w.TypeFields({kSession, {{0, kFieldPtr, 8, "next"}, {8, kFieldPtr, 8, "child"}, {16, kFieldInt, 8, "val"}}});
  uint64_t list = 0;
  for (uint64_t start = 0; start < n; ++list) {
    const uint64_t end = std::min(n, start + 1 + list % 97);
    for (uint64_t i = start; i < end; ++i) {
      const Node v{i + 1 < end ? kBase + 64 * (i + 1) : 0, 0, static_cast<int64_t>(i)};
      Object(w, kBase + 64 * i, i == start ? kSession : kNode, &v, sizeof v);
    }
    w.DataRoot({0x9000 + 8 * list, kBase + 64 * start});
    start = end;
  }
  w.Eof();
  w.Flush();
}

}  // namespace libdump::heapview::testing
