// One object's field values, read again from its record in the file (the
// graph keeps only references), for object pages and JSON.
#pragma once

#include <string>
#include <vector>

#include "heap_graph.h"

namespace libdump::heapgraph {

struct FieldValue {
  std::string name;   // field name, or "[i]" for array elements and words
  std::string type;   // "int", "object", "word", ...
  std::string value;  // the value as text (references: their id in hex)
  Index ref = kNone;  // the object a reference names, when it is one
};

struct ObjectDetail {
  std::vector<FieldValue> fields;  // instance fields (superclasses' after the class's own), or elements
  uint64_t elements = 0;           // arrays: the element count; words of untyped objects
  std::string text;                // char[]/byte[]/String contents and untyped byte buffers, when printable
};

// Reads object i's record again. `max_elements` bounds the elements listed
// (from `first`). Throws format::FormatError or LoadError.
ObjectDetail ReadObject(const HeapGraph& g, Index i, uint64_t first = 0, uint64_t max_elements = 1000);

// The field through which object `from` holds `to`: the instance field's name
// (hprof; a libdump type's typefields name, else "f" and its offset), a
// static's name, "(superclass)", an array element "[i]", a word of an
// untyped libdump object "[i]" (i-th word), or the offset "+N" of a Go
// object's word. The first such field when several hold it; "" when none
// does (the file changed). Reads `from` again from the file.
std::string FieldTo(const HeapGraph& g, Index from, Index to);

// FieldTo for each step of a path (root first; entry 0 is ""), for the
// `max_steps` steps nearest its end: a list a million deep would read a
// million records again. Steps further up get "".
std::vector<std::string> PathFields(const HeapGraph& g, const std::vector<Index>& path, size_t max_steps = 1000);

// The value of a java.lang.String (its char[]/byte[] value) or "" when obj
// is not one; used in labels.
std::string StringValue(const HeapGraph& g, Index obj, size_t max_chars = 80);

}  // namespace libdump::heapgraph
