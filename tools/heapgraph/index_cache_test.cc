// The index cache: a saved graph reads back field for field; a stale,
// truncated, damaged or foreign index is refused; OpenIndexed writes once and
// reads after.
#include "index_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "index_codec.h"
#include "testing/same_graph.h"

namespace libdump::heapgraph {
namespace {

namespace fs = std::filesystem;

#ifndef HEAPGRAPH_TESTDATA
#error HEAPGRAPH_TESTDATA must name the testdata directory
#endif

void ExpectSameGraph(const HeapGraph& a, const HeapGraph& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.go, b.go);
  ASSERT_EQ(a.classes.size(), b.classes.size());
  for (size_t c = 0; c < a.classes.size(); ++c) {
    const ClassInfo &x = a.classes[c], &y = b.classes[c];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.super, y.super);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.retained, y.retained);
    EXPECT_EQ(x.named_by, y.named_by);
    ASSERT_EQ(x.fields.size(), y.fields.size());
    for (size_t f = 0; f < x.fields.size(); ++f) {
      EXPECT_EQ(x.fields[f].name, y.fields[f].name);
      EXPECT_EQ(x.fields[f].offset, y.fields[f].offset);
      EXPECT_EQ(x.fields[f].is_ref, y.fields[f].is_ref);
    }
  }
  EXPECT_EQ(a.root_kinds, b.root_kinds);
  ASSERT_EQ(a.roots.size(), b.roots.size());
  for (size_t r = 0; r < a.roots.size(); ++r) {
    EXPECT_EQ(a.roots[r].object, b.roots[r].object);
    EXPECT_EQ(a.roots[r].label, b.roots[r].label);
    EXPECT_EQ(a.roots[r].slot, b.roots[r].slot);
    EXPECT_EQ(a.roots[r].ptr, b.roots[r].ptr);
    EXPECT_EQ(a.roots[r].frame_sp, b.roots[r].frame_sp);
    EXPECT_EQ(a.roots[r].variable, b.roots[r].variable);
    EXPECT_EQ(a.roots[r].module, b.roots[r].module);
  }
  ASSERT_EQ(a.threads.size(), b.threads.size());
  for (size_t t = 0; t < a.threads.size(); ++t) EXPECT_EQ(a.threads[t].frames, b.threads[t].frames);
  for (Index i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.ids[i], b.ids[i]);
    EXPECT_EQ(a.where[i], b.where[i]);
    EXPECT_EQ(a.Size(i), b.Size(i));
  }
  EXPECT_EQ(a.cls, b.cls);
  EXPECT_EQ(a.elements, b.elements);
  EXPECT_EQ(a.big_endian, b.big_endian);
  ASSERT_EQ(a.modules.size(), b.modules.size());
  for (size_t m = 0; m < a.modules.size(); ++m) {
    EXPECT_EQ(a.modules[m].path, b.modules[m].path);
    EXPECT_EQ(a.modules[m].build_id, b.modules[m].build_id);
    EXPECT_EQ(a.modules[m].start, b.modules[m].start);
  }
  ASSERT_EQ(a.frames.size(), b.frames.size());
  for (size_t f = 0; f < a.frames.size(); ++f) {
    EXPECT_EQ(a.frames[f].name, b.frames[f].name);
    EXPECT_EQ(a.frames[f].pc, b.frames[f].pc);
    EXPECT_EQ(a.frames[f].thread, b.frames[f].thread);
  }
  testing::ExpectSameAnalysis(a, b);
  EXPECT_EQ(a.out.wide(), b.out.wide());
  EXPECT_EQ(a.idom.wide(), b.idom.wide());
  EXPECT_EQ(a.path_parent.wide(), b.path_parent.wide());
  EXPECT_EQ(a.by_id.wide(), b.by_id.wide());
  EXPECT_EQ(a.top_retainers.wide(), b.top_retainers.wide());
  EXPECT_EQ(a.by_id, b.by_id);
  EXPECT_EQ(a.stacks, b.stacks);
  EXPECT_EQ(a.stack_of, b.stack_of);
  EXPECT_EQ(a.total_bytes, b.total_bytes);
}

class IndexCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("index_cache_test." + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    dump_ = (dir_ / "full.dump").string();
    fs::copy_file(std::string(HEAPGRAPH_TESTDATA) + "/full.dump", dump_);
    index_ = (dir_ / "full.ldindex").string();
    Open(dump_, graph_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string dump_, index_;
  HeapGraph graph_;
};

TEST_F(IndexCache, ReadsBackWhatItSaved) {
  // What the typing pass adds to a loaded graph comes back too.
  ASSERT_FALSE(graph_.roots.empty());
  graph_.classes[0].named_by = NamedBy::kShape;
  graph_.roots[0].variable = "g_accounts";
  graph_.roots[0].module = "prog";
  graph_.elements[0] = 3;
  graph_.big_endian = true;
  graph_.modules.push_back({0x400000, 0x401000, 0x1000, "/bin/prog", "abcd"});
  graph_.frames.push_back({0x7ff0, 0x8000, 0x401000, 0x401010, "main", UINT32_MAX});
  std::string why;
  ASSERT_TRUE(SaveIndex(index_, dump_, "salt", graph_, &why)) << why;
  HeapGraph back;
  ASSERT_TRUE(LoadIndex(index_, dump_, "salt", back, &why)) << why;
  ExpectSameGraph(graph_, back);
  EXPECT_EQ(back.path, dump_);
}

// Each index array keeps its width (8 bytes from 2^32 - 2 objects on).
TEST_F(IndexCache, KeepsEachArraysWidth) {
  ASSERT_FALSE(graph_.out.wide());
  graph_.out.Widen();
  graph_.idom.Widen();
  graph_.path_parent.Widen();
  graph_.by_id.Widen();
  graph_.top_retainers.Widen();
  graph_.wide = true;
  std::string why;
  ASSERT_TRUE(SaveIndex(index_, dump_, "", graph_, &why)) << why;
  HeapGraph back;
  ASSERT_TRUE(LoadIndex(index_, dump_, "", back, &why)) << why;
  EXPECT_TRUE(back.wide);
  ExpectSameGraph(graph_, back);
}

// An index of an earlier format (magic LDINDEX3) is refused and rebuilt,
// never read with today's layout.
TEST_F(IndexCache, RebuildsAnIndexOfTheOlderFormat) {
  IndexOptions o;
  o.dir = (dir_ / "cache").string();
  HeapGraph first, second, third;
  IndexReport r = OpenIndexed(dump_, first, {}, o);
  ASSERT_EQ(r.use, IndexUse::kSaved) << r.note;
  {
    std::fstream f(r.index, std::ios::in | std::ios::out | std::ios::binary);
    char magic[8];
    f.read(magic, 8);
    ASSERT_EQ(std::string(magic, 8), "LDINDEX5");
    f.seekp(7);
    f.put('4');
  }
  std::string why;
  EXPECT_FALSE(LoadIndex(r.index, dump_, "", second, &why));
  EXPECT_EQ(why, "an index of another format version");
  r = OpenIndexed(dump_, third, {}, o);
  EXPECT_EQ(r.use, IndexUse::kSaved) << r.note;
  ExpectSameGraph(first, third);
}

TEST_F(IndexCache, RefusesTruncatedOrDamagedIndexes) {
  std::string why;
  ASSERT_TRUE(SaveIndex(index_, dump_, "", graph_, &why)) << why;
  const auto size = fs::file_size(index_);
  HeapGraph g;
  // Cut anywhere (the tag, the middle, the hash): refused, never trusted.
  for (uint64_t cut : {uint64_t{4}, size / 2, size - 1}) {
    fs::copy_file(index_, index_ + ".cut", fs::copy_options::overwrite_existing);
    fs::resize_file(index_ + ".cut", cut);
    EXPECT_FALSE(LoadIndex(index_ + ".cut", dump_, "", g, &why)) << cut;
    EXPECT_EQ(g.size(), 0u);
  }
  // One byte flipped in the body.
  std::fstream f(index_, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(size * 2 / 3));
  char c;
  f.seekg(static_cast<std::streamoff>(size * 2 / 3));
  f.get(c);
  f.seekp(static_cast<std::streamoff>(size * 2 / 3));
  f.put(static_cast<char>(c ^ 0x40));
  f.close();
  EXPECT_FALSE(LoadIndex(index_, dump_, "", g, &why));
  EXPECT_EQ(why, "the index is truncated or damaged");
  // Trailing bytes.
  ASSERT_TRUE(SaveIndex(index_, dump_, "", graph_, &why)) << why;
  std::ofstream(index_, std::ios::app | std::ios::binary) << "x";
  EXPECT_FALSE(LoadIndex(index_, dump_, "", g, &why));
}

// The index file's bytes, and its table of arrays (index_codec.h).
std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void Spill(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}
std::vector<index::ArrayEntry> TableOf(const std::string& file) {
  uint64_t arrays;
  std::memcpy(&arrays, file.data() + 8, 8);
  std::vector<index::ArrayEntry> t(arrays);
  std::memcpy(t.data(), file.data() + 24, arrays * sizeof(index::ArrayEntry));
  return t;
}

TEST_F(IndexCache, RefusesADamagedByteAnywhere) {
  std::string why;
  ASSERT_TRUE(SaveIndex(index_, dump_, "", graph_, &why)) << why;
  const std::string good = Slurp(index_);
  const auto table = TableOf(good);
  ASSERT_GE(table.size(), 10u);
  // The head (magic, sizes, table, meta, its hash), the zeros between the
  // arrays, and the first and last byte of each array.
  std::vector<uint64_t> at = {0, 9, 17, 30, table[0].offset / 3, table[0].offset / 2};
  uint64_t end = 0;
  for (const auto& e : table) {
    if (e.offset > end && end > 0) at.push_back(end + (e.offset - end) / 2);
    if (e.count == 0) continue;
    at.push_back(e.offset);
    end = e.offset + e.count * e.element_size;
    at.push_back(end - 1);
  }
  for (uint64_t k : at) {
    std::string bad = good;
    ASSERT_LT(k, bad.size());
    bad[k] = static_cast<char>(bad[k] ^ 0x10);
    Spill(index_, bad);
    HeapGraph g;
    EXPECT_FALSE(LoadIndex(index_, dump_, "", g, &why)) << "byte " << k;
    EXPECT_EQ(g.size(), 0u);
  }
  Spill(index_, good);
  HeapGraph g;
  EXPECT_TRUE(LoadIndex(index_, dump_, "", g, &why)) << why;
}

// An index whose hashes match but whose arrays send a query out of bounds
// (another build's idea of the graph) is refused: each index array is
// range-checked as it is read.
TEST_F(IndexCache, RefusesIndexesOutOfRangeEvenWithGoodHashes) {
  const Index n = static_cast<Index>(graph_.size());
  ASSERT_GT(n, 2u);
  ASSERT_FALSE(graph_.out.empty());
  ASSERT_FALSE(graph_.top_retainers.empty());
  // out_begin is packed: rebuilt with one value changed.
  auto set_begin = [](HeapGraph& g, size_t i, uint64_t v) {
    PackedU64 p;
    for (size_t k = 0; k < g.out_begin.size(); ++k) p.push_back(k == i ? v : g.out_begin[k]);
    g.out_begin = std::move(p);
  };
  const std::vector<std::function<void(HeapGraph&)>> breaks = {
      [&](HeapGraph& g) { g.out.Set(0, n); },
      [&](HeapGraph& g) { g.out.Set(g.out.size() - 1, kNone); },
      [&](HeapGraph& g) { g.cls[n - 1] = static_cast<uint32_t>(g.classes.size()); },
      [&](HeapGraph& g) { g.idom.Set(1, n); },
      [&](HeapGraph& g) { g.path_parent.Set(n - 1, n + 5); },
      [&](HeapGraph& g) { g.top_retainers.Set(0, n); },
      [&](HeapGraph& g) { set_begin(g, 1, g.out_begin[2] + 1); },
      [&](HeapGraph& g) { set_begin(g, n, g.out.size() + 1); },
      [&](HeapGraph& g) { g.size32[0] = UINT32_MAX; },  // no big_sizes entry
      [&](HeapGraph& g) {
        g.by_id.resize(g.size());
        for (Index i = 0; i < g.size(); ++i) g.by_id.Set(i, i);
        g.by_id.Set(n / 2, n);
      },
  };
  std::string why;
  for (size_t k = 0; k < breaks.size(); ++k) {
    HeapGraph broken = graph_;
    breaks[k](broken);
    ASSERT_TRUE(SaveIndex(index_, dump_, "", broken, &why)) << why;
    HeapGraph g;
    EXPECT_FALSE(LoadIndex(index_, dump_, "", g, &why)) << k;
    EXPECT_EQ(why, "the index is truncated or damaged") << k;
    EXPECT_EQ(g.size(), 0u);
  }
  // The marks an idom or a path parent may hold are in range.
  HeapGraph marked = graph_;
  marked.idom.Set(0, kNone);
  marked.path_parent.Set(0, kSuperRoot);
  ASSERT_TRUE(SaveIndex(index_, dump_, "", marked, &why)) << why;
  HeapGraph g;
  EXPECT_TRUE(LoadIndex(index_, dump_, "", g, &why)) << why;
}

// A table entry of another element width (say, 64-bit object indices) with
// a head whose hash matches: refused, never read as the width expected.
TEST_F(IndexCache, RefusesAnArrayOfAnotherWidth) {
  std::string why;
  ASSERT_TRUE(SaveIndex(index_, dump_, "", graph_, &why)) << why;
  std::string file = Slurp(index_);
  auto table = TableOf(file);
  uint64_t meta;
  std::memcpy(&meta, file.data() + 16, 8);
  const size_t head = 24 + table.size() * sizeof(index::ArrayEntry) + meta;
  // cls (the third array): 4-byte values claimed to be 8 bytes, half as many.
  index::ArrayEntry& e = table[2];
  ASSERT_EQ(e.element_size, 4u);
  e.element_size = 8;
  e.count /= 2;
  std::memcpy(file.data() + 24, table.data(), table.size() * sizeof(index::ArrayEntry));
  index::Hash h;
  h.Add(file.data(), head);
  const uint64_t v = h.Value();
  std::memcpy(file.data() + head, &v, 8);
  Spill(index_, file);
  HeapGraph g;
  EXPECT_FALSE(LoadIndex(index_, dump_, "", g, &why));
  EXPECT_EQ(g.size(), 0u);
  // An index of the previous format: rebuilt, never read.
  file = Slurp(index_);
  file[7] = '2';
  Spill(index_, file);
  EXPECT_FALSE(LoadIndex(index_, dump_, "", g, &why));
  EXPECT_EQ(why, "an index of another format version");
}

TEST_F(IndexCache, RefusesStaleAndForeignIndexes) {
  std::string why;
  ASSERT_TRUE(SaveIndex(index_, dump_, "a", graph_, &why)) << why;
  HeapGraph g;
  EXPECT_FALSE(LoadIndex(index_, dump_, "b", g, &why));
  EXPECT_EQ(why, "built with other options");
  // Another dump (the same bytes elsewhere is another file: inode).
  const std::string other = (dir_ / "other.dump").string();
  fs::copy_file(dump_, other);
  EXPECT_FALSE(LoadIndex(index_, other, "a", g, &why));
  // Touched: the modification time moved.
  ASSERT_TRUE(LoadIndex(index_, dump_, "a", g, &why)) << why;
  struct timespec times[2] = {{0, UTIME_OMIT}, {12345, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dump_.c_str(), times, 0), 0);
  EXPECT_FALSE(LoadIndex(index_, dump_, "a", g, &why));
  EXPECT_EQ(why, "the dump changed since it was indexed");
  // Replaced by a file of another content.
  ASSERT_TRUE(SaveIndex(index_, dump_, "a", graph_, &why)) << why;
  fs::copy_file(std::string(HEAPGRAPH_TESTDATA) + "/seed.dump", dump_, fs::copy_options::overwrite_existing);
  EXPECT_FALSE(LoadIndex(index_, dump_, "a", g, &why));
  // Not an index at all.
  std::ofstream(index_, std::ios::trunc) << "not an index";
  EXPECT_FALSE(LoadIndex(index_, dump_, "a", g, &why));
  EXPECT_EQ(why, "not an index file");
}

TEST_F(IndexCache, OpenIndexedWritesOnceThenReads) {
  IndexOptions o;
  o.dir = (dir_ / "cache" / "deeper").string();
  HeapGraph first, second;
  IndexReport r = OpenIndexed(dump_, first, {}, o);
  EXPECT_EQ(r.use, IndexUse::kSaved) << r.note;
  EXPECT_TRUE(fs::exists(r.index));
  EXPECT_EQ((fs::status(o.dir).permissions() & fs::perms::all), fs::perms::owner_all);
  r = OpenIndexed(dump_, second, {}, o);
  EXPECT_EQ(r.use, IndexUse::kLoaded) << r.note;
  ExpectSameGraph(first, second);
  // Nothing but the index in the directory: no temporary left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(o.dir), fs::directory_iterator()), 1);
  // Disabled, and small dumps without --index-dir: not cached.
  o.enabled = false;
  HeapGraph third, fourth;
  EXPECT_EQ(OpenIndexed(dump_, third, {}, o).use, IndexUse::kNone);
  IndexOptions dflt;
  EXPECT_EQ(OpenIndexed(dump_, fourth, {}, dflt).use, IndexUse::kNone);
  ExpectSameGraph(first, fourth);
}

}  // namespace
}  // namespace libdump::heapgraph
