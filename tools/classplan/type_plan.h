// How the objects of one dump type become hprof objects (docs/HPROF.md):
//
// - regular objects of a type with a layout (field names, pointer fields, or
//   the conservative flag) become instances of a class named after the type,
//   with a field per dump field: pointers as object references, scalars as
//   primitive fields of the same width;
// - arrays, and types flagged as arrays, become object arrays of one slot per
//   pointer-sized word when their elements hold pointers (slot i is the word at
//   byte offset i * ptrsize; words that are not pointers are null), else
//   primitive arrays of the element's width;
// - pointer-free objects without a layout become primitive arrays;
// - untyped objects are scanned word by word: object arrays when a word points
//   into a dumped object, byte[] otherwise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dump_catalog.h"
#include "libdump/format/hprof_classes.h"
#include "libdump/format/hprof_writer.h"

namespace libdump::dumptohprof {

enum class Shape : uint8_t { kInstance, kWordArray, kPrimitiveArray };

struct FieldPlan {
  uint64_t offset = 0;   // in the dumped object
  uint32_t size = 0;     // bytes in the dump (pointer fields: the pointer size)
  format::hprof::Type type = format::hprof::Type::kByte;
  bool pointer = false;
};

struct TypePlan {
  std::string name;         // the hprof class name, unique in the file
  Shape regular = Shape::kPrimitiveArray;  // objects of kind 0
  Shape array = Shape::kPrimitiveArray;    // objects of kind 1 or 2
  // kInstance
  std::vector<FieldPlan> fields;
  std::vector<format::hprof::FieldSpec> specs;  // names and types, same order
  uint32_t instance_size = 0;
  uint64_t prefix = 0;  // payload bytes the fields read
  // kWordArray: which words of an element hold pointers (all when conservative)
  uint64_t elem_words = 0;
  std::vector<bool> pointer_words;
  bool conservative = false;
  // kPrimitiveArray
  format::hprof::Type prim = format::hprof::Type::kByte;
};

// Plans every type of the catalog, with unique class names.
std::vector<std::pair<uint64_t, TypePlan>> PlanTypes(const DumpCatalog& catalog);

// The name VisualVM and MAT show for an hprof class name: '/' as '.', array
// descriptors as "T[]".
std::string DisplayName(const std::string& hprof_name);

}  // namespace libdump::dumptohprof
