#include "eh_pool_rule.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace libdump::typing {

bool IsEhPoolAtRest(std::span<const uint8_t> payload, uint64_t size, bool points_anywhere) {
  if (points_anywhere || payload.size() < 16 || size < 16) return false;
  uint64_t free_size = 0, next = 0;
  std::memcpy(&free_size, payload.data(), 8);
  std::memcpy(&next, payload.data() + 8, 8);
  return next == 0 && free_size <= size && free_size >= size - size / 8 && free_size >= 16;
}

void ApplyEhPoolRule(Context& ctx) {
  HeapGraph& g = ctx.graph();
  if (ctx.ptr_size() != 8 || g.big_endian) return;  // the layout read is x86-64's
  // The heap blocks held by libstdc++'s data (libstdc++.so.6 and its
  // versions): the pool is the one at rest among them.
  std::vector<Index> held;
  for (const heapgraph::Root& r : g.roots) {
    if (r.kind != 1 || r.object == kNone || !r.module.starts_with("libstdc++.so")) continue;
    if (r.ptr != g.ids[r.object] || ctx.RuleOf(r.object) != Rule::kNothing) continue;
    held.push_back(r.object);
  }
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  // A few candidates, read one by one (libstdc++'s data holds one block or
  // two; more and the rule stays out of the open's cost).
  if (held.empty() || held.size() > 4) return;
  std::vector<Index> pools;
  for (Index i : held) {
    if (!g.Out(i).empty()) continue;  // holds pointers: not at rest, and not worth a read
    if (IsEhPoolAtRest(ctx.Read(i), g.Size(i), false)) pools.push_back(i);
  }
  if (pools.size() != 1) return;  // two would be no proof of either
  ctx.Name(pools[0], ctx.Class(kEhPoolClass, Rule::kShape), Rule::kShape);
}

}  // namespace libdump::typing
