// The arithmetic of `gridrun status`'s ETA (scheduler/status.hpp): a running job's remaining time
// from its own /steps rows, the steps it will run, and the prediction's remainder.
#include <gtest/gtest.h>

#include <cmath>

#include "gridrun/status/status.hpp"

namespace gs = gridrun::status;

TEST(StatusEta, ProgressRateOfTheRows) {
  // 10 steps a second from step 10 to 50: 50 steps left take 5 s.
  EXPECT_DOUBLE_EQ(gs::progress_eta_s({10, 20, 30, 40, 50}, {1, 2, 3, 4, 5}, 100), 5.0);
}

TEST(StatusEta, UnknownWithoutTwoRowsOrAnEnd) {
  EXPECT_TRUE(std::isnan(gs::progress_eta_s({}, {}, 100)));
  EXPECT_TRUE(std::isnan(gs::progress_eta_s({10}, {1}, 100)));
  EXPECT_TRUE(std::isnan(gs::progress_eta_s({10, 20}, {1, 2}, 0)));    // unbounded job
  EXPECT_TRUE(std::isnan(gs::progress_eta_s({10, 20}, {1, 1}, 100)));  // no time between rows
}

TEST(StatusEta, ZeroOnceTheLastStepIsReached) {
  EXPECT_EQ(gs::progress_eta_s({90, 100}, {1, 2}, 100), 0.0);
  EXPECT_EQ(gs::progress_eta_s({100}, {2}, 100), 0.0);
}

TEST(StatusEta, OnlyTheCurrentAttemptsPace) {
  // Steps 1-40 ran at 1 step/s before a resume from step 40; since then 10 steps/s.
  const std::vector<double> steps = {10, 20, 30, 40, 50, 60, 70};
  const std::vector<double> wall = {10, 20, 30, 40, 41, 42, 43};
  EXPECT_DOUBLE_EQ(gs::progress_eta_s(steps, wall, 100, 40), 3.0);
  // Only one row of the current attempt: not yet known.
  EXPECT_TRUE(std::isnan(gs::progress_eta_s({10, 20, 30, 40, 50}, {10, 20, 30, 40, 41}, 100, 40)));
}

TEST(StatusEta, PlannedStepsFirstLimitWins) {
  EXPECT_EQ(gs::planned_steps(0, 5, 16), 80);
  EXPECT_EQ(gs::planned_steps(50, 5, 16), 50);
  EXPECT_EQ(gs::planned_steps(500, 5, 16), 80);
  EXPECT_EQ(gs::planned_steps(30, 0, 16), 30);
  EXPECT_EQ(gs::planned_steps(0, 5, 0), -1);  // steps_per_epoch not known yet
  EXPECT_EQ(gs::planned_steps(0, 0, 16), -1);
}

TEST(StatusEta, PredictionRemainder) {
  EXPECT_DOUBLE_EQ(gs::predicted_eta_s(100, 30), 70.0);
  EXPECT_EQ(gs::predicted_eta_s(100, 130), 0.0);  // over its prediction: due any moment
  EXPECT_TRUE(std::isnan(gs::predicted_eta_s(std::nan(""), 30)));
  EXPECT_TRUE(std::isnan(gs::predicted_eta_s(100, std::nan(""))));
}
