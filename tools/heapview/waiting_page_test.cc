// The pages heapview serves while its dump opens, and the gate that switches
// to the real pages: the snapshot as HTML and JSON, escaping, 503 for the
// API; and, under TSan, server threads reading while the opening thread
// reports and then publishes the graph it built.
#include "waiting_page.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "heapview_test_dump.h"
#include "load.h"

namespace libdump::heapview {
namespace {

using heapgraph::ProgressUnit;

std::string Header(const Response& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

TEST(WaitingPage, PhaseDoneOfTotalAndItReloads) {
  OpenSnapshot s;
  s.file = "/tmp/<b>big</b>.dump";
  s.file_no = 2;
  s.files = 3;
  s.step = "dominators: semidominators";
  s.done = 2500000;
  s.total = 10000000;
  s.unit = ProgressUnit::kObjects;
  s.step_seconds = 2;
  s.seconds = 75;
  const Response r = WaitingPage(s);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(Header(r, "Cache-Control"), "no-store");
  EXPECT_NE(r.body.find("<meta http-equiv=\"refresh\" content=\"1\">"), std::string::npos);
  // The file's name is text, never markup.
  EXPECT_EQ(r.body.find("<b>big"), std::string::npos);
  EXPECT_NE(r.body.find("/tmp/&lt;b&gt;big&lt;/b&gt;.dump (2 of 3)"), std::string::npos);
  EXPECT_NE(r.body.find("<td id=\"phase\">dominators: semidominators</td>"), std::string::npos);
  EXPECT_NE(r.body.find("2,500,000 of 10,000,000 objects (25.0%)"), std::string::npos);
  EXPECT_NE(r.body.find("1,250,000 objects/s"), std::string::npos);
  EXPECT_NE(r.body.find("<th>time left in this phase</th><td class=\"n\">6 s</td>"), std::string::npos);
  EXPECT_NE(r.body.find("<th>elapsed</th><td class=\"n\">1 min 15 s</td>"), std::string::npos);
}

// Minutes and seconds come from one rounding: 119.6 s was "1 min 60 s".
TEST(WaitingPage, SecondsRoundedBeforeMinutesAreSplitOff) {
  const auto elapsed = [](double seconds) {
    OpenSnapshot s;
    s.seconds = seconds;
    const std::string body = WaitingPage(s).body;
    const std::string th = "<th>elapsed</th><td class=\"n\">";
    const size_t at = body.find(th);
    if (at == std::string::npos) return std::string("no elapsed row");
    return body.substr(at + th.size(), body.find("</td>", at) - at - th.size());
  };
  EXPECT_EQ(elapsed(59.4), "59 s");
  EXPECT_EQ(elapsed(59.6), "1 min 00 s");
  EXPECT_EQ(elapsed(119.4), "1 min 59 s");
  EXPECT_EQ(elapsed(119.6), "2 min 00 s");
  EXPECT_EQ(elapsed(3599.7), "60 min 00 s");
}

TEST(WaitingPage, BeforeTheFirstReportAndWithoutATotal) {
  OpenSnapshot s;
  s.file = "-";
  s.files = 1;
  const Response r = WaitingPage(s);
  EXPECT_NE(r.body.find("<td id=\"phase\">starting</td>"), std::string::npos);
  EXPECT_EQ(r.body.find("id=\"done\""), std::string::npos);
  // A compressed dump: bytes read, no total, so no time left and no bar.
  s.step = "objects";
  s.done = 5000000;
  s.step_seconds = 1;
  const Response b = WaitingPage(s);
  EXPECT_NE(b.body.find("<td class=\"n\" id=\"done\">5,000,000 bytes</td>"), std::string::npos);
  EXPECT_EQ(b.body.find("time left"), std::string::npos);
  EXPECT_EQ(b.body.find("<progress"), std::string::npos);
}

TEST(WaitingPage, BytesOfALargeFileInMegabytes) {
  OpenSnapshot s;
  s.file = "big.dump";
  s.step = "references";
  s.done = 318644295;
  s.total = 1120000225;
  s.step_seconds = 1.5;
  const Response r = WaitingPage(s);
  EXPECT_NE(r.body.find("id=\"done\">319 of 1,120 MB (28.5%)</td>"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("<th>rate</th><td class=\"n\">212 MB/s</td>"), std::string::npos) << r.body;
}

TEST(WaitingPage, APhaseNamedWithoutACountShowsNoCount) {
  // The typing pass names its rules as offset 0 of the file: no "0 of N bytes".
  OpenProgress p;
  p.StartFile("/proc/self/exe", 1, 1);
  p.Update("references", 4096, 0, ProgressUnit::kFileBytes);
  EXPECT_GT(p.Snapshot().total, 0u);
  p.Update("typing: holders", 0, 0, ProgressUnit::kFileBytes);
  const Response r = WaitingPage(p.Snapshot());
  EXPECT_NE(r.body.find("<td id=\"phase\">typing: holders</td>"), std::string::npos);
  EXPECT_EQ(r.body.find("id=\"done\""), std::string::npos);
}

TEST(WaitingPage, ProgressJson) {
  OpenSnapshot s;
  s.file = "a\"b.dump";
  s.file_no = s.files = 1;
  s.step = "writing the index";
  s.done = 400000000;
  s.total = 1000000000;
  s.unit = ProgressUnit::kBytes;
  s.step_seconds = 2;
  const std::string j = ProgressJson(s, false).body;
  for (const char* want : {"\"state\": \"opening\"", "\"file\": \"a\\\"b.dump\"", "\"phase\": \"writing the index\"",
                           "\"done\": 400000000", "\"total\": 1000000000", "\"unit\": \"bytes\"",
                           "\"per_second\": 200000000", "\"seconds_left\": 3",
                           "\"line\": \"writing the index 400/1000 MB, 200 MB/s, 3 s left\""}) {
    EXPECT_NE(j.find(want), std::string::npos) << want << " in " << j;
  }
  EXPECT_NE(ProgressJson(s, true).body.find("\"state\": \"ready\""), std::string::npos);
}

class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "heapview_waiting_test." + std::to_string(::getpid()) + ".dump";
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    testing::WriteTestDump(out);
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  std::string path_;
};

TEST_F(GateTest, WaitsThenServesTheSite) {
  OpenProgress progress;
  Gate gate(progress);
  progress.StartFile(path_, 1, 1);
  progress.Update("paths", 65536, 131072, ProgressUnit::kObjects);
  Response r = gate.Handle("/histogram?sort=retained");
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find("<td id=\"phase\">paths</td>"), std::string::npos);
  r = gate.Handle("/api/histogram");
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(Header(r, "Retry-After"), "2");
  EXPECT_NE(gate.Handle("/progress.json").body.find("\"done\": 65536"), std::string::npos);

  heapgraph::HeapGraph g;
  heapgraph::Open(path_, g);
  const Site site(g, nullptr);
  gate.Publish(&site);
  EXPECT_NE(gate.Handle("/").body.find("<h1>Heap " + path_ + "</h1>"), std::string::npos);
  EXPECT_EQ(gate.Handle("/api/histogram").status, 200u);
  EXPECT_NE(gate.Handle("/progress.json").body.find("\"state\": \"ready\""), std::string::npos);
}

// Readers on other threads all along: every answer is a whole waiting page
// or a whole summary, and once one reader sees the summary, the graph
// behind it is complete (TSan checks the publication's ordering).
TEST_F(GateTest, ReadersDuringTheOpenAndThePublication) {
  OpenProgress progress;
  Gate gate(progress);
  std::atomic<bool> stop{false};
  std::atomic<int> waiting{0}, served{0}, bad{0};
  std::vector<std::thread> readers;
  for (int k = 0; k < 3; ++k) {
    readers.emplace_back([&] {
      for (uint64_t n = 0; !stop.load(); ++n) {
        const Response r = gate.Handle(n % 2 ? "/progress.json" : "/");
        if (r.body.find("<h1>Opening") != std::string::npos || r.body.find("\"state\": \"opening\"") != std::string::npos) {
          ++waiting;
        } else if (r.body.find("<h1>Heap ") != std::string::npos) {
          if (r.body.find("<th>objects</th><td class=\"n\">9</td>") == std::string::npos) ++bad;
          ++served;
        } else if (r.body.find("\"state\": \"ready\"") == std::string::npos) {
          ++bad;
        }
      }
    });
  }
  progress.StartFile(path_, 1, 1);
  for (uint64_t done = 0; done <= 1000; ++done) progress.Update("dominators: numbering", done, 1000, ProgressUnit::kObjects);
  // Some reader has seen the waiting page before the graph exists.
  while (waiting.load() == 0) std::this_thread::yield();
  heapgraph::HeapGraph g;
  heapgraph::Open(path_, g, [&](const char* step, uint64_t done, uint64_t total, ProgressUnit unit) {
    progress.Update(step, done, total, unit);
  });
  const Site site(g, nullptr);
  gate.Publish(&site);
  while (served.load() < 10) std::this_thread::yield();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace libdump::heapview
