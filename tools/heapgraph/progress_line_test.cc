// The progress line's text: phase, done of total (bytes of the file, objects,
// bytes of the index), rate and time left; the callback's two forms.
#include "progress_line.h"

#include <gtest/gtest.h>

namespace libdump::heapgraph {
namespace {

TEST(ProgressLine, PhaseDoneTotalRateAndTimeLeft) {
  EXPECT_EQ(ProgressLine::Format("references", 250000000, 1000000000, 2.0),
            "references 250/1000 MB, 125 MB/s, 6 s left");
}

TEST(ProgressLine, NoTotalNoTimeLeft) {
  // A compressed dump: the decompressed bytes have no known total.
  EXPECT_EQ(ProgressLine::Format("objects", 300000000, 0, 3.0), "objects 300 MB, 100 MB/s");
  // Past a total that was wrong, no time left either.
  EXPECT_EQ(ProgressLine::Format("objects", 300000000, 100, 3.0), "objects 300 MB, 100 MB/s");
}

TEST(ProgressLine, AStepWithoutBytesIsItsName) {
  EXPECT_EQ(ProgressLine::Format("dominators", 0, 1000, 1.0), "dominators");
  EXPECT_EQ(ProgressLine::Format("objects", 5000000, 10000000, 0.0), "objects 5/10 MB");
}

TEST(ProgressLine, ObjectsDoneOfTotalRateAndTimeLeft) {
  // 2.6 million of 10 million objects in 2 s: 1.3 M/s, 5.7 s for the rest.
  EXPECT_EQ(ProgressLine::Format("dominators: semidominators", 2600000, 10000000, ProgressUnit::kObjects, 2.0),
            "dominators: semidominators 2.6/10.0 M objects, 1.3 M objects/s, 6 s left");
  // Smaller counts in thousands, then as they are.
  EXPECT_EQ(ProgressLine::Format("paths", 65536, 200000, ProgressUnit::kObjects, 0.5),
            "paths 66/200k objects, 131k objects/s, 1 s left");
  EXPECT_EQ(ProgressLine::Format("paths", 300, 1200, ProgressUnit::kObjects, 3.0),
            "paths 300/1200 objects, 100 objects/s, 9 s left");
}

TEST(ProgressLine, ObjectsAtTheStartOrWithoutATotal) {
  // The step's first report: done and total, no rate yet.
  EXPECT_EQ(ProgressLine::Format("class retained sizes", 0, 3000000, ProgressUnit::kObjects, 0.0),
            "class retained sizes 0.0/3.0 M objects");
  // No total (or one exceeded): the count alone, no time left.
  EXPECT_EQ(ProgressLine::Format("typing: sizes", 2000000, 0, ProgressUnit::kObjects, 1.0),
            "typing: sizes 2.0 M objects");
}

TEST(ProgressLine, IndexWriteInBytesOfItsSize) {
  EXPECT_EQ(ProgressLine::Format("writing the index", 400000000, 1000000000, ProgressUnit::kBytes, 2.0),
            "writing the index 400/1000 MB, 200 MB/s, 3 s left");
}

TEST(ProgressLine, TheFirstFormOfTheCallbackStillHearsEveryReport) {
  // A (pass, offset) callable, as callers wrote before counts existed.
  std::string heard;
  const Progress p = [&](const char* pass, uint64_t offset) { heard += std::string(pass) + "@" + std::to_string(offset) + " "; };
  p("objects", 100);
  p("paths", 5, 10);
  EXPECT_EQ(heard, "objects@100 paths@5 ");
  // A ticker reports its start and every 2^16th item, not each one.
  int reports = 0;
  const Progress counted = [&](const char*, uint64_t, uint64_t total, ProgressUnit unit) {
    EXPECT_EQ(total, 200000u);
    EXPECT_EQ(unit, ProgressUnit::kObjects);
    ++reports;
  };
  ProgressTicker t(counted, "paths", 200000);
  for (uint64_t i = 1; i <= 200000; ++i) t.Tick(i);
  EXPECT_EQ(reports, 1 + 3);
}

}  // namespace
}  // namespace libdump::heapgraph
