// Retained size by dominator path, aggregated by class: the tree behind
// heapview's icicle (/flame) and readdump --dominators --flame's folded
// stacks. A frame is a root kind, then a class along the dominator tree; an
// object of the same class as its dominator's frame stays in that frame, so
// a list of a million nodes is one frame, not a million, and the tree has as
// many frames as there are distinct class paths, not objects.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "heap_graph.h"

namespace libdump::heapgraph {

struct FlameFrame {
  std::string name;         // root kind or class
  uint32_t parent = 0;      // frame index; frame 0 (everything reachable) is its own parent
  uint32_t depth = 0;       // 0 for frame 0
  uint64_t bytes = 0;       // retained bytes of the objects entering the frame
  uint64_t objects = 0;     // objects entering the frame (a class frame's first objects on each path)
  Index largest = kNone;    // the entering object that retains most
  std::vector<uint32_t> children;  // most bytes first
};

struct FlameLimits {
  uint32_t max_depth = 64;         // frames deeper stay in their ancestor at this depth
  uint32_t max_frames = 1u << 20;  // past it, new class paths stay in their parent frame
};

struct FlameTree {
  std::vector<FlameFrame> frames;  // frames[0]: "all reachable", the reachable bytes
  uint64_t self(uint32_t f) const;  // bytes no child frame accounts for
};

// One walk of the dominator tree (its children built from g.idom).
FlameTree BuildFlame(const HeapGraph& g, const FlameLimits& limits = {});

// The frame name as a folded-stacks token: ';' and line breaks would split
// it, so they become ':' and spaces.
std::string FoldedName(const std::string& name);

// Folded stacks ("root;class;class bytes" lines, frame 0 left out: the
// readers draw their own root), one line per frame with self bytes, so
// flamegraph.pl and speedscope sum them back to each frame's retained bytes.
void WriteFolded(std::ostream& out, const FlameTree& t);

}  // namespace libdump::heapgraph
