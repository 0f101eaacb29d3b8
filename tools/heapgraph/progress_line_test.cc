// The progress line's text: phase, done of total, rate and time left.
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

}  // namespace
}  // namespace libdump::heapgraph
