// heapview's pages: one function from a request target to a response, with
// no network in it, so tests call it directly. The graph is only read, so
// any number of server threads may call Handle at once.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "growth.h"
#include "heap_graph.h"

namespace libdump::heapgraph {
struct FlameTree;
}

namespace libdump::heapview {

struct Response {
  unsigned status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides the type and the server's own
};

class Site {
 public:
  // `baseline` may be null (no --baseline).
  Site(const heapgraph::HeapGraph& g, const heapgraph::HeapGraph* baseline) : g_(g), base_(baseline) {}
  // heapview --series: what grows across the series whose last dump is the
  // graph served (/series, /api/series).
  void SetSeries(const heapgraph::Growth* series) { series_ = series; }
  Response Handle(const std::string& target) const;
  // The flame tree of /flame, built by the first request that needs it (a
  // walk of every object: seconds at 10^7) and kept while the site lives.
  const heapgraph::FlameTree& Flame() const;

 private:
  const heapgraph::HeapGraph& g_;
  const heapgraph::HeapGraph* base_;
  const heapgraph::Growth* series_ = nullptr;
  mutable std::once_flag flame_once_;
  mutable std::shared_ptr<const heapgraph::FlameTree> flame_;
};

}  // namespace libdump::heapview
