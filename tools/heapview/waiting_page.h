// What heapview answers while its dumps open, so that the browser a user
// points at it during a long open says what is happening: every page is the
// waiting page (the phase, done of total, rate, time left; it reloads itself
// and so becomes the page asked for once the open completes), /progress.json
// is the same as JSON for scripts, and the JSON API answers 503 with
// Retry-After. Once the graph is published, every request goes to the site.
#pragma once

#include <atomic>
#include <string>

#include "open_progress.h"
#include "site.h"

namespace libdump::heapview {

// Seconds between the waiting page's reloads.
constexpr unsigned kWaitingRefresh = 1;

Response WaitingPage(const OpenSnapshot& s);
// {"state": "opening", "file": ..., "phase": ..., "done": ..., ...}, or
// {"state": "ready"} once `ready`.
Response ProgressJson(const OpenSnapshot& s, bool ready);

// The server's handler: the waiting pages until Publish, then the site.
class Gate {
 public:
  explicit Gate(const OpenProgress& progress) : progress_(progress) {}
  // Called once the site's graphs are complete, by the thread that built
  // them: the release pairs with Handle's acquire, so no server thread reads
  // a graph before it is whole. The site outlives the server.
  void Publish(const Site* site) { site_.store(site, std::memory_order_release); }
  // Any thread.
  Response Handle(const std::string& target) const;

 private:
  const OpenProgress& progress_;
  std::atomic<const Site*> site_{nullptr};
};

}  // namespace libdump::heapview
