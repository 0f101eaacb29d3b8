// How an object given a Go type by --binary (go_typing.h) becomes an hprof
// object, planned as type_plan.h plans the dump's own types:
//
// - one value of a type: an instance of a class named as Go names the type
//   ("main.node"; slice and array types in parentheses, "([]int)", as
//   readers take a leading '[' for an array descriptor), one field per leaf of the value, nested structs and short
//   arrays flattened with dotted names ("pos.x", "buf[3]"); pointers, maps,
//   channels and funcs as references; a string as str (reference) and len, a
//   slice as array, len and cap, an interface as tab (or _type) and data;
//   integers, floats and bools as the primitives of their size;
// - an array of elements with pointers: an object array of the element's
//   name ("[L*main.node;", which readers show as "*main.node[]"), one slot per
//   word, the element's pointer words as references;
// - an array of pointer-free elements: the primitive array of the element
//   (int64: long[], float64: double[], anything else: byte[]).
#pragma once

#include "go_types.h"
#include "go_typing.h"
#include "type_plan.h"

namespace libdump::dumptohprof {

TypePlan PlanGoClass(const godwarf::GoProgram& program, const GoTyping& typing, unsigned ptr);

}  // namespace libdump::dumptohprof
