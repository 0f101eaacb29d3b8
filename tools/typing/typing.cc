#include "typing.h"

#include <chrono>

#include "analyze.h"
#include "eh_pool_rule.h"
#include "go_rule.h"
#include "libdump/format/reader.h"

namespace libdump::typing {

const char* RuleName(Rule r) { return heapgraph::NamedByName(r); }

const char* RuleLegend(Rule r) {
  switch (r) {
    case Rule::kDump: return "the dump's own type (typed API or vtable)";
    case Rule::kDwarf: return "the debug information (DWARF) of a module the dump names";
    case Rule::kShape: return "a standard-library layout its links prove";
    case Rule::kHolder: return "the named object or root that holds it, and the offset it is held at";
    case Rule::kSize: return "nothing names it: untyped objects of one size";
    case Rule::kNothing: break;
  }
  return "untyped";
}

Stats Measure(const HeapGraph& g) {
  Stats s;
  for (Index i = 0; i < g.size(); ++i) {
    heapgraph::big_array::Check();
    const unsigned r = static_cast<unsigned>(g.classes[g.cls[i]].named_by);
    const unsigned k = r < 6 ? r : 0;
    ++s.objects[k];
    s.bytes[k] += g.Size(i);
    ++s.total_objects;
    s.total_bytes += g.Size(i);
  }
  return s;
}

Context::Context(HeapGraph& g, const Options& o, const heapgraph::Progress& progress)
    : g_(g), o_(o), progress_(progress) {
  uint32_t untyped = UINT32_MAX;
  for (uint32_t c = 0; c < g_.classes.size(); ++c) {
    by_name_.try_emplace(g_.classes[c].name, c);
    const heapgraph::ClassInfo& k = g_.classes[c];
    if (k.id == 0 && k.named_by == Rule::kNothing && k.array_type == 0) untyped = c;
  }
  scanned_.resize(g_.size());
  for (Index i = 0; i < g_.size(); ++i) {
    heapgraph::big_array::Check();
    scanned_[i] = g_.cls[i] == untyped;
  }
}

Context::~Context() = default;

uint32_t Context::Class(std::string_view name, Rule rule) {
  auto [it, added] = by_name_.try_emplace(std::string(name), static_cast<uint32_t>(g_.classes.size()));
  if (added) {
    heapgraph::ClassInfo c;
    c.name = std::string(name);
    c.named_by = rule;
    g_.classes.push_back(std::move(c));
  }
  return it->second;
}

bool Context::Name(Index i, uint32_t cls, Rule rule, uint64_t elements) {
  if (i >= g_.size() || cls >= g_.classes.size() || rule == Rule::kNothing) return false;
  const Rule now = RuleOf(i);
  if (now != Rule::kNothing && now <= rule) return false;
  g_.cls[i] = cls;
  if (elements > 0) {
    g_.elements[i] = elements;
  } else if (now != Rule::kNothing) {  // (an object no rule named has no count)
    g_.elements.erase(i);
  }
  return true;
}

void Context::Scan(std::span<const Index> objects, const Visit& fn) {
  if (objects.empty()) return;
  auto reader = format::Reader::Open(g_.path);
  if (reader->dialect() != format::Dialect::kLibdump) return;  // Go dumps: not typed here
  format::Record r;
  const uint64_t total = objects.size();
  uint64_t done = 0;
  for (Index i : objects) {
    Tick(++done, total);
    if (i >= g_.size()) continue;
    if (g_.where[i] < reader->offset()) throw format::FormatError(g_.where[i], "object", "objects scanned out of order");
    reader->Range(g_.where[i], 0);
    if (!reader->Next(r) || r.kind != format::Kind::kObject || r.object.addr != g_.ids[i])
      throw format::FormatError(g_.where[i], "object", "the file changed since it was opened");
    heapgraph::big_array::Check();
    fn(i, reader->Payload(size_t{1} << 32));
  }
}

void Context::ScanAll(const Visit& fn) {
  auto reader = format::Reader::Open(g_.path);
  if (reader->dialect() != format::Dialect::kLibdump) return;
  format::Record r;
  Index i = 0;
  while (reader->Next(r)) {
    if (r.kind != format::Kind::kObject) continue;
    // An object the loader left out (libdump's own memory, heap_graph.h):
    // before the next one the graph holds.
    if (g_.own_objects != 0 && !g_.include_own && (i >= g_.size() || r.offset < g_.where[i])) continue;
    Tick(i, g_.size());
    if (i >= g_.size() || g_.where[i] != r.offset)
      throw format::FormatError(r.offset, "object", "the file changed since it was opened");
    heapgraph::big_array::Check();
    fn(i, reader->Payload(size_t{1} << 32));
    ++i;
  }
  if (i != g_.size()) throw format::FormatError(reader->offset(), "eof", "the file changed since it was opened");
}

std::vector<uint8_t> Context::Read(Index i) {
  std::vector<uint8_t> out;
  const Index one[] = {i};
  Scan(one, [&](Index, std::span<const uint8_t> d) { out.assign(d.begin(), d.end()); });
  return out;
}

Stats Type(HeapGraph& g, const Options& o, const heapgraph::Progress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  Stats s;
  if (o.enabled && g.source == heapgraph::Source::kDump && g.go) {
    Context ctx(g, o, progress);
    ctx.SetStep("typing: Go types");
    ApplyGoRule(ctx);
  } else if (o.enabled && g.source == heapgraph::Source::kDump) {
    Context ctx(g, o, progress);
    ctx.SetStep("typing: roots");
    s.named_roots = NameRoots(ctx);
    ctx.SetStep("typing: DWARF types");
    ApplyDwarfRule(ctx);
    ctx.SetStep("typing: standard-library shapes");
    ApplyShapeRule(ctx);
    ApplyEhPoolRule(ctx);
    ctx.SetStep("typing: holders");
    ApplyHolderRule(ctx);
    ctx.SetStep("typing: sizes");
    ApplySizeRule(ctx);
  }
  const uint64_t roots = s.named_roots;
  s = Measure(g);
  s.named_roots = roots;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return s;
}

void Open(const std::string& path, HeapGraph& g, const Options& o, const heapgraph::Progress& progress, Stats* stats) {
  heapgraph::Load(path, g, progress);
  if (progress) progress("typing", 0);
  const Stats s = Type(g, o, progress);
  if (stats) *stats = s;
  heapgraph::Analyze(g, progress);
}

}  // namespace libdump::typing
