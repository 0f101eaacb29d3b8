// Building a HeapGraph from a file: a libdump dump (plain, zstd, gzip) or an
// hprof, told apart by their first bytes.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "heap_graph.h"
#include "input_file.h"
#include "progress.h"

namespace libdump::heapgraph {

// The file could not be opened or read, or holds no such object; what() says
// why, without the file's name (tools/common/input_file.h is the one input
// class of the tools).
using LoadError = tools::InputError;
// The file a loader or a page reads, by path, closed at scope exit.
inline tools::InputFile OpenInput(const std::string& path) {
  return tools::InputFile(path, tools::InputFile::PathOnly{});
}

// `progress(pass, offset)` is called now and then while reading, and
// `progress(step, done, total)` in the analysis (progress.h).
// Reads the file twice (objects, then references). Throws LoadError, or
// format::FormatError ("OFFSET: CONTEXT: reason") for bad input.
void LoadDump(const std::string& path, HeapGraph& g, const Progress& progress = {});
void LoadHprof(const std::string& path, HeapGraph& g, const Progress& progress = {});
// Either, by the file's first bytes.
void Load(const std::string& path, HeapGraph& g, const Progress& progress = {});
// Load, then Analyze.
void Open(const std::string& path, HeapGraph& g, const Progress& progress = {});

}  // namespace libdump::heapgraph
