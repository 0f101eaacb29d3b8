// Dumps written by a test (format::Writer into a file), loaded and typed:
// each object's class name by its address, the typing pass's answer that
// the rule tests compare.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <string>

#include "libdump/format/sink.h"
#include "libdump/format/writer.h"
#include "load.h"
#include "typing.h"

namespace libdump::typing {

inline std::map<uint64_t, std::string> ClassesOf(const std::string& path, const Options& o = {}) {
  heapgraph::HeapGraph g;
  heapgraph::Load(path, g);
  Type(g, o);
  std::map<uint64_t, std::string> out;
  for (Index i = 0; i < g.size(); ++i) out[g.ids[i]] = g.ClassName(i);
  return out;
}

// write(w) writes the whole dump, header to eof, into a temporary file NAME,
// which is removed after typing.
template <typename Write>
std::map<uint64_t, std::string> ClassesOfWritten(const std::string& name, Write&& write) {
  const std::string path = ::testing::TempDir() + name + "_" + std::to_string(getpid()) + ".dump";
  {
    std::ofstream f(path, std::ios::binary);
    format::OstreamSink sink(f);
    format::Writer w(sink);
    write(w);
    w.Flush();
  }
  auto out = ClassesOf(path);
  unlink(path.c_str());
  return out;
}

}  // namespace libdump::typing
