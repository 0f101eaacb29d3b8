// heapview's pages on the test dump (graph H of testdata/README.md), called
// without a socket.
#include "site.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "heapview_test_dump.h"
#include "load.h"
#include "object_detail.h"
#include "paths.h"

namespace libdump::heapview {
namespace {

using heapgraph::HeapGraph;

class SiteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One file per process: ctest runs each case as its own process, two at a time.
    path_ = new std::string(::testing::TempDir() + "heapview_site_test." + std::to_string(::getpid()) + ".dump");
    std::ofstream out(*path_, std::ios::binary | std::ios::trunc);
    testing::WriteTestDump(out);
    out.close();
    graph_ = new HeapGraph;
    heapgraph::Open(*path_, *graph_);
  }
  static void TearDownTestSuite() {
    unlink(path_->c_str());
    delete graph_;
    delete path_;
  }
  static std::string* path_;
  static HeapGraph* graph_;
  const HeapGraph& g = *graph_;
  Site site{*graph_, nullptr};

  uint64_t Retained(uint64_t id) { return g.retained[g.Find(id)]; }
};
std::string* SiteTest::path_;
HeapGraph* SiteTest::graph_;

// The figures worked out by hand in testdata/README.md, graph H.
TEST_F(SiteTest, GraphHRetainedSizes) {
  ASSERT_EQ(g.size(), 9u);
  EXPECT_EQ(Retained(0x1600), 96u);  // G
  EXPECT_EQ(Retained(0x1000), 48u);  // A
  EXPECT_EQ(Retained(0x1100), 24u);  // B
  EXPECT_EQ(Retained(0x1200), 40u);  // C
  EXPECT_EQ(Retained(0x1300), 88u);  // D
  EXPECT_EQ(Retained(0x1400), 16u);  // E
  EXPECT_EQ(Retained(0x1500), 64u);  // F
  EXPECT_EQ(Retained(0x1700), 24u);  // H
  EXPECT_EQ(Retained(0x1800), 24u);  // U, unreachable: its own size
  EXPECT_EQ(g.idom[g.Find(0x1800)], heapgraph::kNone);
  EXPECT_EQ(g.idom[g.Find(0x1300)], heapgraph::kSuperRoot);
  EXPECT_EQ(g.reachable_bytes, 224u);
  std::vector<uint64_t> path;
  for (auto i : heapgraph::PathFromRoot(g, g.Find(0x1500))) path.push_back(g.ids[i]);
  EXPECT_EQ(path, (std::vector<uint64_t>{0x1200, 0x1300, 0x1500}));
}

// Each step of a path names the field that holds the next object: C's `next`
// is D, D's `child` (0x1508) points inside F (testdata/README.md, graph H).
TEST_F(SiteTest, PathNamesTheFieldOfEachStep) {
  EXPECT_EQ(heapgraph::FieldTo(g, g.Find(0x1200), g.Find(0x1300)), "next");
  EXPECT_EQ(heapgraph::FieldTo(g, g.Find(0x1300), g.Find(0x1500)), "child");
  EXPECT_EQ(heapgraph::FieldTo(g, g.Find(0x1600), g.Find(0x1000)), "next");
  EXPECT_EQ(heapgraph::FieldTo(g, g.Find(0x1600), g.Find(0x1700)), "child");
  EXPECT_EQ(heapgraph::FieldTo(g, g.Find(0x1300), g.Find(0x1000)), "");  // D does not refer to A
  const auto path = heapgraph::PathFromRoot(g, g.Find(0x1500));
  EXPECT_EQ(heapgraph::PathFields(g, path), (std::vector<std::string>{"", "next", "child"}));
  EXPECT_EQ(heapgraph::PathFields(g, path, 1), (std::vector<std::string>{"", "", "child"}));  // the last step only
  const Response r = site.Handle("/path/0x1500");
  EXPECT_NE(r.body.find("<li><code class=\"field\">next</code> &rarr; <a href=\"/object/0x1300\">Node@0x1300</a></li>"
                        "<li><code class=\"field\">child</code> &rarr; <a href=\"/object/0x1500\">(untyped)@0x1500</a>"),
            std::string::npos)
      << r.body;
  const Response j = site.Handle("/api/path/0x1500");
  EXPECT_NE(j.body.find("\"id\": \"0x1300\",\n      \"class\": \"Node\",\n      \"field\": \"next\""), std::string::npos)
      << j.body;
  EXPECT_NE(j.body.find("\"field\": \"child\""), std::string::npos) << j.body;
}

TEST_F(SiteTest, HistogramCountsAndEscapedNames) {
  const Response r = site.Handle("/histogram?sort=count");
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find(">Node</a></td><td class=\"n\"><a href=\"/instances?name=Node\">7</a></td><td class=\"n\">168</td>"
                        "<td class=\"n\">224</td>"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(r.body.find("<script>"), std::string::npos);
  EXPECT_NE(r.body.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  // Sorted by count: Node (7) before the classes with one instance.
  EXPECT_LT(r.body.find(">Node<"), r.body.find("(untyped)"));
}

TEST_F(SiteTest, ObjectPageShowsFieldsAndReferrers) {
  const Response r = site.Handle("/object/0x1300");
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find("<td>val</td><td>int64</td><td>4</td>"), std::string::npos) << r.body;
  // Referrers: B and C; the child field's interior pointer resolves to F.
  EXPECT_NE(r.body.find("<li><a href=\"/object/0x1100\">Node@0x1100</a></li>"), std::string::npos);
  EXPECT_NE(r.body.find("<li><a href=\"/object/0x1200\">Node@0x1200</a></li>"), std::string::npos);
  EXPECT_NE(r.body.find("<td>child</td><td>pointer</td><td><a href=\"/object/0x1500\">(untyped)@0x1500</a>"),
            std::string::npos);
  const Response f = site.Handle("/object/0x1500");
  EXPECT_NE(f.body.find("<pre>hello heapview</pre>"), std::string::npos);
}

TEST_F(SiteTest, MissingObjectsAre404) {
  EXPECT_EQ(site.Handle("/object/0x1234").status, 404u);
  EXPECT_EQ(site.Handle("/object/zz").status, 404u);
  EXPECT_EQ(site.Handle("/path/0x99").status, 404u);
  EXPECT_EQ(site.Handle("/api/object/0x99").status, 404u);
  EXPECT_EQ(site.Handle("/class?name=Nope").status, 404u);
  EXPECT_EQ(site.Handle("/no/such/page").status, 404u);
  EXPECT_EQ(site.Handle("/diff").status, 404u);  // no baseline
}

// page * 100 must not wrap around to page 0.
TEST_F(SiteTest, HugePageNumbersAreNotPageZero) {
  const std::string huge = "18446744073709551615";
  EXPECT_NE(site.Handle("/instances?name=Node").body.find("/object/0x1100"), std::string::npos);
  const Response r = site.Handle("/instances?name=Node&page=" + huge);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body.find("/object/0x1100"), std::string::npos) << r.body;
  EXPECT_EQ(site.Handle("/instances?name=Node&page=184467440737095517").body.find("/object/0x1100"), std::string::npos);
  EXPECT_NE(site.Handle("/object/0x1300").body.find("<li><a href=\"/object/0x1100\">"), std::string::npos);
  EXPECT_EQ(site.Handle("/object/0x1300?page=" + huge).body.find("<li><a href=\"/object/0x1100\">"),
            std::string::npos);
  EXPECT_EQ(site.Handle("/dominators?page=" + huge).status, 200u);
  EXPECT_EQ(site.Handle("/object/0x1300?epage=" + huge).status, 200u);
}

TEST_F(SiteTest, EveryPageAnswers) {
  for (const char* p : {"/", "/histogram", "/histogram?sort=retained&platform=0", "/classes", "/classes?platform=0",
                        "/class?name=Node", "/instances?name=Node", "/roots", "/dominators", "/dominators?obj=0x1600",
                        "/suspects", "/leaks", "/flame", "/flame.folded", "/dominators?sort=class&order=desc&filter=%3Cscript",
                        "/histogram?sort=name&order=desc&filter=node", "/finalizers", "/threads", "/query", "/query?class=N*&minretained=40",
                        "/path/0x1500", "/reachable/0x1600", "/api/histogram", "/api/dominators", "/api/path/0x1500",
                        "/api/object/0x1000", "/api/dominators?obj=0x1600&top=1"}) {
    const Response r = site.Handle(p);
    EXPECT_EQ(r.status, 200u) << p;
    // JSON keeps names as they are (served as application/json, nosniff).
    if (r.content_type.starts_with("text/html")) {
      EXPECT_EQ(r.body.find("<script"), std::string::npos) << p;
    }
  }
}

// Tables sort by any column both ways and filter by class name; the filter
// box gives back what was typed, escaped.
TEST_F(SiteTest, TablesSortAndFilter) {
  std::string b = site.Handle("/dominators?sort=retained&order=asc").body;
  EXPECT_LT(b.find("/object/0x1200\""), b.find("/object/0x1300\""));
  EXPECT_LT(b.find("/object/0x1300\""), b.find("/object/0x1600\""));
  EXPECT_NE(b.find("<a href=\"/dominators?sort=retained&amp;order=desc\">retained</a> &#9650;"), std::string::npos);
  b = site.Handle("/histogram?filter=%3Cscr").body;
  EXPECT_NE(b.find("<td><a href=\"/class?name=%3Cscript%3Ealert%281%29%3C%2Fscript%3E\">"), std::string::npos);
  EXPECT_EQ(b.find("/class?name=Node\""), std::string::npos);
  EXPECT_NE(b.find("value=\"&lt;scr\""), std::string::npos);
  b = site.Handle("/histogram?sort=bytes&order=asc").body;
  EXPECT_LT(b.find("/class?name=%3Cscript"), b.find("/class?name=Node\""));  // 16 bytes before 168
  // Instances: file order, or by a column. G (0x1600) retains the most Nodes.
  b = site.Handle("/instances?name=Node").body;
  EXPECT_LT(b.find("/object/0x1000\""), b.find("/object/0x1600\""));
  b = site.Handle("/instances?name=Node&sort=retained").body;
  EXPECT_LT(b.find("/object/0x1600\""), b.find("/object/0x1300\""));  // 96 before 88
  EXPECT_LT(b.find("/object/0x1300\""), b.find("/object/0x1000\""));  // 88 before 48
  // F, untyped and without pointers, is labelled with its text.
  EXPECT_NE(site.Handle("/path/0x1500").body.find("(untyped)@0x1500</a> <span class=\"muted\">&quot;hello heapview&quot;</span>"),
            std::string::npos);
}

// U (0x1800) is the one object no root reaches: the leaks page lists it, and
// class pages say which typing rule named the class (docs/TYPING.md).
TEST_F(SiteTest, LeaksAndTheNamingRule) {
  const Response leaks = site.Handle("/leaks");
  EXPECT_NE(leaks.body.find("Node@0x1800"), std::string::npos) << leaks.body;
  EXPECT_NE(leaks.body.find("<th>unreachable bytes</th><td class=\"n\">24</td>"), std::string::npos) << leaks.body;
  const Response node = site.Handle("/class?name=Node");
  EXPECT_NE(node.body.find("<th>named by</th><td>dump: the dump&#39;s own type"), std::string::npos) << node.body;
  const Response api = site.Handle("/api/histogram");
  EXPECT_NE(api.body.find("\"rule\": \"dump\""), std::string::npos) << api.body;
}

TEST_F(SiteTest, QueryAndJson) {
  const Response q = site.Handle("/query?class=N*&minretained=40");
  // G 96, D 88, A 48, C 40 are Nodes retaining at least 40 bytes.
  EXPECT_NE(q.body.find("<p>4 objects match.</p>"), std::string::npos) << q.body;
  const Response j = site.Handle("/api/dominators?top=2");
  EXPECT_EQ(j.content_type, "application/json");
  EXPECT_NE(j.body.find("\"id\": \"0x1600\""), std::string::npos) << j.body;
  EXPECT_NE(j.body.find("\"retained\": 96"), std::string::npos);
  EXPECT_NE(j.body.find("\"id\": \"0x1300\""), std::string::npos);
  EXPECT_EQ(j.body.find("\"id\": \"0x1200\""), std::string::npos);  // third: cut by top=2
}

TEST_F(SiteTest, BaselineMarksNewObjectsAndDiffs) {
  // The baseline: the same dump less U (0x1800) and E (0x1400).
  HeapGraph base;
  heapgraph::Open(*path_, base);
  (void)base;
  Site with(g, &base);
  const Response d = with.Handle("/diff");
  EXPECT_EQ(d.status, 200u);
  EXPECT_NE(d.body.find("<p>Baseline"), std::string::npos);
  EXPECT_EQ(d.body.find("class=\"new\""), std::string::npos);  // nothing is new against itself
}

// A real Go 1.19 dump (testdata/go-1.19.heapdump: tests/godump/producer.go
// with 20 list nodes, 3 blocked goroutines; testdata/README.md). Values
// checked by hand against the program and `readdump --records`.
TEST(GoDumpSite, PagesOfTheRealGoDump) {
  HeapGraph g;
  heapgraph::Open(std::string(HEAPVIEW_TESTDATA) + "/go-1.19.heapdump", g);
  Site site(g, nullptr);
  auto page = [&](const std::string& p) {
    const Response r = site.Handle(p);
    EXPECT_EQ(r.status, 200u) << p << "\n" << r.body;
    return r.body;
  };
  auto has = [](const std::string& body, const std::string& want) {
    EXPECT_NE(body.find(want), std::string::npos) << want << "\n--- in ---\n" << body;
  };
  // The summary's counts (testdata/go-1.19.heapdump.summary.expected).
  std::string b = page("/");
  has(b, "<th>format</th><td>go1.7 heap dump (Go runtime)</td>");
  has(b, "<th>objects</th><td class=\"n\">163</td>");
  has(b, "<th>bytes</th><td class=\"n\">49,648</td>");
  // The 20 list nodes: 80 bytes, pointers next at 0 and prev at 16.
  has(page("/histogram"), ">obj80[0,16]</a></td><td class=\"n\"><a href=\"/instances?name=obj80%5B0%2C16%5D\">20</a></td>"
                          "<td class=\"n\">1,600 <span class=\"muted\">1.56 KiB</span></td><td class=\"n\">1,600 <span "
                          "class=\"muted\">1.56 KiB</span></td>");
  has(page("/class?name=obj80%5B0%2C16%5D"), "0xc00008a690");
  // Node 0 (the first allocated, lowest address): next nil, val 0, prev is
  // node 1 (0x50 higher), magic "node" little-endian.
  b = page("/object/0xc00008a0a0");
  has(b, "<td>+0</td><td>pointer</td><td>null</td>");
  has(b, "<td>+8</td><td>word</td><td>0x0</td>");
  has(b, "<td>+16</td><td>pointer</td><td><a href=\"/object/0xc00008a0f0\">");
  has(b, "<td>+24</td><td>word</td><td>0x6e6f6465</td>");
  // Goroutine 20, a blocker: its runtime.g is the object at the goroutine
  // record's address; runtime.chanrecv's frame (sp 0xc0000396f0) holds it in
  // the slot at 0xc000039740, 0x50 above sp.
  b = page("/threads");
  has(b, "goroutine 20</h2><p>state waiting (chan receive). object <a href=\"/object/0xc0000844e0\">");
  has(b, "main.blocker\nmain.main.func2\nruntime.goexit");
  has(page("/roots"), "<a href=\"/object/0xc0000844e0\">obj416[32,40,48,80,136,248,304,328,+3]@0xc0000844e0</a> "
                      "<span class=\"muted\">stack runtime.chanrecv sp+0x50 (thread goroutine 20)</span>");
  // The list hangs from one global (head, the last node, 0xc00008a0a0 + 19 *
  // 0x50): it dominates all 20 nodes. Each step of the path is `next`, at +0.
  has(page("/dominators"), "1,600 <span class=\"muted\">1.56 KiB</span></td><td class=\"n\">3.2%</td><td class=\"n\">80</td><td><a href=\"/object/0xc00008a690\">");
  b = page("/path/0xc00008a5f0");
  has(b, "<li><code class=\"field\">+0</code> &rarr; <a href=\"/object/0xc00008a640\">obj80[0,16]@0xc00008a640</a></li>"
         "<li><code class=\"field\">+0</code> &rarr; <a href=\"/object/0xc00008a5f0\">");
  has(b, "root: global slot 0x5330c0");
  EXPECT_EQ(site.Handle("/object/0xc00008a0a1").status, 404u);  // inside node 0, not an object's address
}

}  // namespace
}  // namespace libdump::heapview
