// heapview's pages on the test dump (graph H of testdata/README.md), called
// without a socket.
#include "site.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "heapview_test_dump.h"
#include "load.h"
#include "paths.h"

namespace libdump::heapview {
namespace {

using heapgraph::HeapGraph;

class SiteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = new std::string(::testing::TempDir() + "heapview_site_test.dump");
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

TEST_F(SiteTest, EveryPageAnswers) {
  for (const char* p : {"/", "/histogram", "/histogram?sort=retained&platform=0", "/classes", "/classes?platform=0",
                        "/class?name=Node", "/instances?name=Node", "/roots", "/dominators", "/dominators?obj=0x1600",
                        "/suspects", "/finalizers", "/threads", "/query", "/query?class=N*&minretained=40",
                        "/path/0x1500", "/reachable/0x1600", "/api/histogram", "/api/dominators", "/api/path/0x1500",
                        "/api/object/0x1000", "/api/dominators?obj=0x1600&top=1"}) {
    const Response r = site.Handle(p);
    EXPECT_EQ(r.status, 200u) << p;
    // JSON keeps names as they are (served as application/json, nosniff).
    if (r.content_type.starts_with("text/html")) EXPECT_EQ(r.body.find("<script"), std::string::npos) << p;
  }
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

}  // namespace
}  // namespace libdump::heapview
