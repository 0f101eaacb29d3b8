#include "waiting_page.h"

#include <algorithm>
#include <cstdio>

#include "html.h"
#include "page.h"
#include "report.h"

namespace libdump::heapview {
namespace {

const char* UnitName(heapgraph::ProgressUnit u) { return u == heapgraph::ProgressUnit::kObjects ? "objects" : "bytes"; }

uint64_t Rounded(double v) { return v > 0 ? static_cast<uint64_t>(v + 0.5) : 0; }

// Rounded once, then split: 119.6 s is "2 min 00 s", never "1 min 60 s".
std::string Seconds(double s) {
  const unsigned long long t = Rounded(s);
  char b[48];
  if (t < 60) {
    snprintf(b, sizeof b, "%llu s", t);
  } else {
    snprintf(b, sizeof b, "%llu min %02llu s", t / 60, t % 60);
  }
  return b;
}

// Objects as they are; bytes in MB past ten of them (a file's bytes to the
// byte are noise), in one scale for done, total and rate.
struct Amounts {
  bool mb;
  std::string operator()(double v) const { return Thousands(Rounded(mb ? v / 1e6 : v)); }
  const char* unit(heapgraph::ProgressUnit u) const { return mb ? "MB" : UnitName(u); }
};
Amounts AmountsFor(const OpenSnapshot& s) {
  return {s.unit != heapgraph::ProgressUnit::kObjects && std::max(s.done, s.total) >= 10000000};
}

}  // namespace

Response WaitingPage(const OpenSnapshot& s) {
  Html h(s.file.empty() ? std::string("Opening") : "Opening " + s.file);
  h.Refresh(kWaitingRefresh);
  h << "<p>heapview is indexing this dump. The page reloads itself every " << std::to_string(kWaitingRefresh)
    << " s and becomes the page asked for once the open completes.</p><table>";
  if (!s.file.empty()) {
    h << "<tr><th>file</th><td>" << Escape(s.file);
    if (s.files > 1) h << " (" << std::to_string(s.file_no) << " of " << std::to_string(s.files) << ")";
    h << "</td></tr>";
  }
  h << "<tr><th>phase</th><td id=\"phase\">" << Escape(s.step.empty() ? "starting" : s.step) << "</td></tr>";
  const bool known = s.total > 0 && s.done <= s.total;
  const Amounts amount = AmountsFor(s);
  if (s.done > 0 || known) {
    h << "<tr><th>done</th><td class=\"n\" id=\"done\">" << amount(static_cast<double>(s.done));
    if (known) h << " of " << amount(static_cast<double>(s.total));
    h << " " << amount.unit(s.unit);
    if (known) h << " (" << Pct(s.done, s.total) << ")";
    h << "</td></tr>";
  }
  if (const double rate = s.Rate(); rate > 0) {
    h << "<tr><th>rate</th><td class=\"n\">" << amount(rate) << " " << amount.unit(s.unit) << "/s</td></tr>";
  }
  if (const double left = s.SecondsLeft(); left >= 0) {
    h << "<tr><th>time left in this phase</th><td class=\"n\">" << Seconds(left) << "</td></tr>";
  }
  h << "<tr><th>elapsed</th><td class=\"n\">" << Seconds(s.seconds) << "</td></tr></table>";
  if (known) {
    h << "<p><progress max=\"" << std::to_string(s.total) << "\" value=\"" << std::to_string(s.done)
      << "\" style=\"width:30em\">" << Pct(s.done, s.total) << "</progress></p>";
  }
  h << "<p class=\"muted\">JSON: <a href=\"/progress.json\">/progress.json</a></p>";
  Response r;
  r.body = h.Finish(Nav(false));
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

Response ProgressJson(const OpenSnapshot& s, bool ready) {
  Response r = JsonResponse([&](heapgraph::JsonWriter& j) {
    j.BeginObject();
    j.Field("state", ready ? "ready" : "opening");
    if (!ready) {
      j.Field("file", s.file);
      j.Field("file_no", s.file_no);
      j.Field("files", s.files);
      j.Field("phase", s.step);
      j.Field("done", s.done);
      j.Field("total", s.total);
      j.Field("unit", UnitName(s.unit));
      j.Key("per_second");
      j.Uint(Rounded(s.Rate()));
      j.Key("seconds_left");
      if (const double left = s.SecondsLeft(); left >= 0) {
        j.Uint(Rounded(left));
      } else {
        j.Null();
      }
      j.Field("seconds", Rounded(s.seconds));
      j.Field("line", s.Line());
    }
    j.EndObject();
  });
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

Response Gate::Handle(const std::string& target) const {
  const Site* site = site_.load(std::memory_order_acquire);
  const std::string path = ParseTarget(target).path;
  if (path == "/progress.json") return ProgressJson(site ? OpenSnapshot{} : progress_.Snapshot(), site != nullptr);
  if (site) return site->Handle(target);
  if (path.starts_with("/api/")) {
    Response r = ProgressJson(progress_.Snapshot(), false);
    r.status = 503;
    r.headers.emplace_back("Retry-After", std::to_string(kWaitingRefresh + 1));
    return r;
  }
  return WaitingPage(progress_.Snapshot());
}

}  // namespace libdump::heapview
