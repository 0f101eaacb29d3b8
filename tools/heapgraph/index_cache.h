// The index cache: an opened and analysed HeapGraph kept in a file, so the
// next open of the same dump maps arrays instead of parsing the dump and
// computing dominators again (MAT keeps its indexes beside the heap dump for
// the same reason).
//
// An index is trusted only when everything it was built from is unchanged:
// the dump's size, modification time, inode and a hash of its first and last
// 64 KiB; the salt (the options that shape the graph); the tool's own
// executable (size and modification time, so a rebuilt tool rebuilds its
// indexes); the format's version; and the index's own bytes: its length
// must be what its table says, its head is hashed whole, and each large
// array is mapped from the file, then hashed and range-checked in one pass
// whose pages are dropped as it goes (index_codec.h), so a truncated, damaged
// or foreign file is refused and no index in it can send a query out of
// bounds. Anything else is rebuilt, never trusted. An index is written to an
// unnamed file that only takes its name once complete, so a process killed
// while writing leaves nothing a later open could read.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "heap_graph.h"
#include "load.h"

namespace libdump::heapgraph {

struct IndexOptions {
  bool enabled = true;
  // Where indexes live; empty: $XDG_CACHE_HOME/libdump, else ~/.cache/libdump.
  std::string dir;
  // What else the graph depends on (options that change what is loaded).
  std::string salt;
  // Dumps smaller than this open fast enough without an index and are not
  // cached, unless `dir` is given.
  uint64_t min_size = uint64_t{64} << 20;
};

enum class IndexUse {
  kNone,     // not cached (disabled, small, standard input, no cache directory)
  kLoaded,   // read from a valid index
  kSaved,    // built, and its index written
  kUnsaved,  // built; the index could not be written (`note` says why)
};

struct IndexReport {
  IndexUse use = IndexUse::kNone;
  std::string index;  // the index file's path, when there is one
  std::string note;   // why a present index was not used, or not written
};

// `open(g)` (by default Open(path, g, progress)) through the cache: the index
// when it is valid, else `open` and a new index. `o.salt` must name whatever
// makes `open` build another graph from the same file.
using Opener = std::function<void(HeapGraph&)>;
IndexReport OpenIndexed(const std::string& path, HeapGraph& g, const Progress& progress, const IndexOptions& o,
                        const Opener& open = {});

// Sets the process's memory budget (big_array.h) from a --memory value:
// "unlimited", a size ("2G"), or empty for the default (a quarter of physical
// memory). Arrays past the budget go to files in the index directory (made
// if missing), or in $TMPDIR when there is none. False with `why` for a
// value that is not a size.
bool ConfigureMemory(const std::string& memory, const IndexOptions& o, std::string* why);

// The index file of `dump` (creating its directory), or "" with `why`.
std::string IndexPathFor(const std::string& dump, const IndexOptions& o, std::string* why);
// Fills `g` from `index` when it is valid for `dump` and `salt`; otherwise
// returns false with the reason and leaves `g` empty. g's large arrays are
// then read-only mappings of the index file (BigArray::Map): an index is
// replaced by a rename, never rewritten in place.
bool LoadIndex(const std::string& index, const std::string& dump, const std::string& salt, HeapGraph& g,
               std::string* why);
// Writes `g`'s index atomically; false with the reason when it cannot.
bool SaveIndex(const std::string& index, const std::string& dump, const std::string& salt, const HeapGraph& g,
               std::string* why);

}  // namespace libdump::heapgraph
