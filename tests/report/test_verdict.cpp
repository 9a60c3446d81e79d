// The verdict of a compare-by run (report/verdict.hpp) against a golden text: a win, a loss, a tie
// inside the noise of the seeds, a phase that ran in two sittings; and complete_phases finding the
// sittings in the jobs' /attempts. On mismatch the text is written to verdict.txt.actual here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gridrun/report/phases.hpp"
#include "gridrun/report/verdict.hpp"

using namespace gridrun::report;
using gridrun::results::Attempt;
using gridrun::results::JobData;

namespace {

// A phase of `jobs` jobs of `value` ranks x 1 thread each.
PhaseFigures phase(const std::string& value, double makespan, int jobs, bool side_by_side) {
  PhaseFigures p;
  p.name = value;
  p.label = "ranks=" + value;
  p.makespan_s = makespan;
  p.side_by_side = side_by_side;
  p.job_resources = std::stod(value);
  for (int k = 0; k < jobs; ++k) p.jobs.push_back(value + "-job" + std::to_string(k));
  p.arrangement = std::to_string(jobs) + (jobs == 1 ? " job x " : " jobs x ") + value +
                  (value == "1" ? " rank" : " ranks") +
                  (jobs == 1      ? ""
                   : side_by_side ? ", side by side"
                                  : ", one after another");
  return p;
}

std::string lines(const std::string& title, const std::vector<PhaseFigures>& phases) {
  std::string out = "## " + title + "\n";
  for (const auto& l :
       verdict_lines(phases, VerdictOptions{"ranks", "gridrun run runs/x/grid.yaml --out runs"}))
    out += l + "\n";
  return out + "\n";
}

JobData job(const std::string& id, const std::string& phase, double start, double end,
            std::vector<std::string> sittings) {
  JobData d;
  d.id = id;
  d.attrs["meta.phase"] = phase;
  d.attrs["start_unix"] = start;
  d.attrs["end_unix"] = end;
  d.summary["samples"] = 1000;
  for (const auto& s : sittings) {
    Attempt a;
    a.sitting = s;
    d.attempts.push_back(a);
  }
  return d;
}

}  // namespace

TEST(Verdict, GoldenTexts) {
  std::string text;
  {
    auto large = phase("2", 14.2, 2, false), small = phase("1", 23.6, 2, true);
    large.time_to_target_s = 8.1;
    small.time_to_target_s = 12.0;
    text += lines("one large job wins", {large, small});
  }
  text += lines("several small win", {phase("2", 30.0, 2, false), phase("1", 20.0, 2, true)});
  {
    auto a = phase("2", 20.0, 2, false), b = phase("1", 21.0, 2, true);
    a.seed_noise = 0.06;
    b.seed_noise = 0.04;
    text += lines("a tie inside the noise of the seeds", {a, b});
  }
  {
    auto a = phase("2", std::nan(""), 2, false), b = phase("1", 21.0, 2, true);
    a.unmeasured = "its jobs ran in 2 sittings (an interruption, a resume, jobs added later or a requeue)";
    text += lines("a phase in two sittings", {a, b});
  }
  text += lines("one phase only: no verdict", {phase("1", 21.0, 2, true)});
  {
    auto large = phase("2", 14.2, 2, false), small = phase("1", 23.6, 2, true);
    large.predicted_makespan_s = 15.0;
    small.predicted_makespan_s = 23.7;
    text += lines("a calibrated prediction that was right", {large, small});
    large.predicted_makespan_s = 25.0;
    text += lines("a calibrated prediction that was wrong", {large, small});
  }
  {
    // zip: {ranks: [1, 2], threads_per_rank: [2, 1]}: one job per phase, same cores: no roles.
    auto a = phase("1", 4.6, 1, false), b = phase("2", 5.7, 1, false);
    a.arrangement = "1 job x 1 rank x 2 threads";
    a.job_resources = b.job_resources = 2;
    a.seed_noise = b.seed_noise = 0.01;
    text += lines("one job per phase: named by arrangement, never several small", {a, b});
  }
  {
    auto large = phase("2", 14.2, 2, false), small = phase("1", 23.6, 2, true);
    large.seed_noise = small.seed_noise = 0.02;
    large.other_cpu_share = 0.01;
    small.other_cpu_share = 0.48;
    text += lines("a phase disturbed by other processes", {large, small});
  }
  {
    auto large = phase("2", 14.2, 2, false), small = phase("1", 10.6, 2, true);
    large.seed_noise = small.seed_noise = 0.02;
    large.sitting = "run-1";
    small.sitting = "run-2";
    large.start_unix = 1795000000;
    small.start_unix = 1795002400;
    large.other_cpu_share = 0.02;
    small.other_cpu_share = 0.16;
    text += lines("phases measured apart under different load", {large, small});
    small.other_cpu_share = 0.04;
    text += lines("phases measured apart under alike load", {large, small});
  }
  {
    auto large = phase("2", 5.7, 2, false), small = phase("1", 2.9, 2, true);
    large.seed_noise = small.seed_noise = 0.03;
    large.time.launch_share = 0.82;
    small.time.launch_share = 0.75;
    large.train_resource_s = 1.9;
    small.train_resource_s = 2.4;
    text += lines("launch-bound: the answer is about start-up", {large, small});
    // Issue 58: one phase above half, one under: "more than half" names only the one above.
    large.time.launch_share = 0.52;
    small.time.launch_share = 0.43;
    text += lines("launch-bound in one phase only: named", {large, small});
  }
  {
    auto a = phase("2", std::nan(""), 1, false), b = phase("1", 2.9, 2, true);
    a.diverged = {"abc123 (training loss NaN at step 12, lr 1e+06)"};
    a.unmeasured =
        "its job " + a.diverged.front() +
        " diverged; a diverged job stops early, so the phase's time says nothing about its arrangement";
    text += lines("a diverged job: its phase left out", {a, b});
  }
  {
    auto large = phase("2", 14.2, 2, false), small = phase("1", 31.0, 2, true);
    large.seed_noise = small.seed_noise = 0.02;
    large.predicted_makespan_s = 14.0;
    small.predicted_makespan_s = 22.0;
    small.other_cpu_share = 0.35;
    large.other_cpu_share = 0.01;
    text += lines("a phase far off its prediction, disturbed", {large, small});
    small.other_cpu_share = 0.01;
    text += lines("a phase far off its prediction, on a quiet machine", {large, small});
  }
  {
    // Issue 58: the cross-check names the direction. Faster than predicted is the calibration's
    // doing (here it was measured under load); slower by more than 15 % is named even under the
    // disturbed threshold, and makes the answer inconclusive when it could turn it.
    auto large = phase("2", 14.2, 2, false), small = phase("1", 23.6, 2, true);
    large.seed_noise = small.seed_noise = 0.02;
    large.predicted_makespan_s = 25.0;
    small.predicted_makespan_s = 24.0;
    large.other_cpu_share = small.other_cpu_share = 0.02;
    large.calibration_other_cpu_share = small.calibration_other_cpu_share = 0.43;
    text += lines("faster than predicted from a calibration taken under load", {large, small});
    large.predicted_makespan_s = 14.0;
    small.makespan_s = 31.0;
    small.predicted_makespan_s = 26.0;
    small.other_cpu_share = 0.16;
    large.calibration_other_cpu_share = small.calibration_other_cpu_share = 0.02;
    text += lines("slower than calibrated under the disturbed threshold: named", {large, small});
    small.makespan_s = 16.0;
    small.predicted_makespan_s = 12.5;
    small.other_cpu_share = 0.09;
    text += lines("slower than calibrated, enough to turn the answer: inconclusive", {large, small});
  }
  {
    // compare.repeats 3, interleaved: the paired ratio with its interval; then one repeat of the
    // winner disturbed (left out of the ratio), then repeats that disagree (interval over 1).
    auto rep = [](const std::string& v, int r, double makespan, int jobs, bool sbs) {
      PhaseFigures p = phase(v, makespan, jobs, sbs);
      p.repeat = r;
      p.value = v;
      if (r > 0) {
        p.name = v + "#" + std::to_string(r + 1);
        p.label += " #" + std::to_string(r + 1);
      }
      p.sitting = "run-1";
      p.other_cpu_share = 0.02;
      return p;
    };
    std::vector<PhaseFigures> ph = {rep("2", 0, 14.2, 2, false), rep("1", 0, 10.9, 2, true),
                                    rep("1", 1, 11.0, 2, true),  rep("2", 1, 14.6, 2, false),
                                    rep("2", 2, 14.0, 2, false), rep("1", 2, 10.6, 2, true)};
    text += lines("3 interleaved repeats: the ratio with its 95 % interval", ph);
    ph[2].other_cpu_share = 0.45;
    text += lines("3 repeats, one disturbed: left out of the ratio", ph);
    ph[2].other_cpu_share = 0.02;
    ph[2].makespan_s = 17.5;
    ph[5].makespan_s = 12.9;
    text += lines("3 repeats that disagree: the interval includes 1", ph);
    // Issue 58: 2 repeats, one disturbed: one measurement counts, never "median of 1".
    ph = {rep("2", 0, 14.2, 2, false), rep("1", 0, 10.9, 2, true), rep("1", 1, 11.0, 2, true),
          rep("2", 1, 14.6, 2, false)};
    ph[2].other_cpu_share = 0.45;
    text += lines("2 repeats, one disturbed: one measurement, not a median", ph);
  }
  const std::string path = std::string(GOLDEN_DIR) + "/verdict.txt";
  std::ifstream in(path);
  std::stringstream golden;
  golden << in.rdbuf();
  if (golden.str() != text) std::ofstream("verdict.txt.actual") << text;
  EXPECT_EQ(golden.str(), text) << "golden " << path << " differs; actual in verdict.txt.actual";
}

// The answer in a few words (`gridrun ls`): winner, ratio, interval, then a mark for each caution.
TEST(Verdict, HeadlineIsTheAnswerFirst) {
  const VerdictOptions opts{"ranks", "gridrun run runs/x/grid.yaml --out runs"};
  auto large = phase("2", 14.2, 2, false), small = phase("1", 23.6, 2, true);
  auto v = verdict_of({large, small}, opts);
  ASSERT_TRUE(v.headline);
  EXPECT_EQ(v.headline->text(), "ranks=2 1.66x");
  EXPECT_EQ(v.lines, verdict_lines({large, small}, opts));
  small.other_cpu_share = 0.48;
  large.time.launch_share = 0.7;
  EXPECT_EQ(verdict_of({large, small}, opts).headline->text(),
            "ranks=2 1.66x; inconclusive, disturbed, start-up");
  small.other_cpu_share = 0.02;
  large.time.launch_share = std::nan("");
  large.predicted_makespan_s = 14.0;
  small.makespan_s = 16.0;
  small.predicted_makespan_s = 12.5;
  EXPECT_EQ(verdict_of({large, small}, opts).headline->text(), "ranks=2 1.13x; inconclusive, slowed");
  EXPECT_FALSE(verdict_of({large}, opts).headline);
}

// Sittings come from the attempts: one sitting is a measurement; a second (a resumed job, a job
// added later) withholds the figures; a Slurm requeue counts as a sitting of its own.
TEST(Phases, SittingsFromAttempts) {
  std::vector<JobData> files = {job("a", "1", 100, 110, {"run-1"}), job("b", "1", 100, 112, {"run-1"}),
                                job("c", "2", 120, 130, {"run-1"}),
                                job("d", "2", 131, 140, {"run-1", "run-2"})};
  std::vector<const JobData*> read;
  for (const auto& f : files) read.push_back(&f);
  PhaseInput in;
  in.compare_by = "ranks";
  auto phases = complete_phases(in, read);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].label, "ranks=1");
  EXPECT_TRUE(phases[0].unmeasured.empty());
  EXPECT_TRUE(phases[0].side_by_side);
  EXPECT_DOUBLE_EQ(phases[0].makespan_s, 12);
  EXPECT_DOUBLE_EQ(phases[0].samples_per_s, 2000.0 / 12);
  EXPECT_EQ(phases[1].sittings, 2);
  EXPECT_NE(phases[1].unmeasured.find("2 sittings"), std::string::npos) << phases[1].unmeasured;
  EXPECT_TRUE(std::isnan(phases[1].makespan_s));

  files[3].attempts = {Attempt{}, Attempt{}};
  files[3].attempts[0].sitting = files[3].attempts[1].sitting = "submit-1";
  files[2].attempts[0].sitting = "submit-1";
  files[3].attempts[1].restart_count = 1;  // requeued by Slurm
  phases = complete_phases(in, read);
  EXPECT_EQ(phases[1].sittings, 2);
  EXPECT_FALSE(phases[1].unmeasured.empty());
}

// Where the time went: a job's split from its /summary, and a phase's launch share weighted by the
// cores each job held (a 2-rank job's launch costs twice the core-seconds of a 1-rank job's).
TEST(Phases, TimeSplitAndLaunchShare) {
  JobData a = job("a", "1", 100, 110, {"run-1"});
  a.summary["launched_unix"] = 100;
  a.summary["process_start_unix"] = 100.1;
  a.summary["first_step_unix"] = 101;
  a.summary["finished_unix"] = 110;
  a.summary["time_train_s"] = 8;
  a.summary["time_eval_s"] = 0.5;
  a.summary["time_checkpoint_s"] = 0.5;
  gridrun::jobs::JobParams pa;
  pa.ranks = 2;
  a.params = pa;
  JobData b = a;
  b.id = "b";
  b.summary["launched_unix"] = 102;  // waited 2 s for its cores
  b.summary["first_step_unix"] = 105;
  b.summary["finished_unix"] = 110;
  gridrun::jobs::JobParams pb;
  pb.ranks = 1;
  b.params = pb;
  const TimeSplit ta = time_split(a);
  EXPECT_DOUBLE_EQ(ta.launch_s, 1);
  EXPECT_DOUBLE_EQ(ta.total_s, 10);
  EXPECT_DOUBLE_EQ(ta.resources, 2);
  EXPECT_DOUBLE_EQ(ta.train_s, 8);
  std::vector<const JobData*> read = {&a, &b};
  PhaseInput in;
  in.compare_by = "ranks";
  const auto phases = complete_phases(in, read);
  ASSERT_EQ(phases.size(), 1u);
  const TimeSummary& t = phases[0].time;
  EXPECT_EQ(t.jobs, 2);
  EXPECT_DOUBLE_EQ(t.mean.launch_s, 2);  // (1 + 3) / 2
  EXPECT_DOUBLE_EQ(t.mean.wait_s, 1);    // (0 + 2) / 2, from the first start at 100
  EXPECT_DOUBLE_EQ(t.launch_share, (1.0 * 2 + 3.0 * 1) / (10.0 * 2 + 8.0 * 1));
  JobData old = job("c", "1", 100, 110, {"run-1"});  // a file from before these figures
  EXPECT_TRUE(std::isnan(time_split(old).launch_s));
}

// A recorded phase (state.json) that does not cover all the phase's jobs is not a measurement:
// its record was written by a sitting that ran only some of them.
TEST(Phases, RecordThatMissesJobs) {
  std::vector<JobData> files = {job("c", "2", 120, 130, {""}), job("d", "2", 131, 140, {""})};
  std::vector<const JobData*> read = {&files[0], &files[1]};
  PhaseInput in;
  gridrun::run::PhaseRecord r;
  r.name = "2";
  r.makespan_s = 9;
  r.jobs = {"d"};
  in.recorded["2"] = r;
  const auto phases = complete_phases(in, read);
  ASSERT_EQ(phases.size(), 1u);
  EXPECT_NE(phases[0].unmeasured.find("covers 1 of its 2 jobs"), std::string::npos) << phases[0].unmeasured;
}

// A phase is named by what it is, from its jobs' parameters; a diverged job withholds its phase,
// and the record's conditions (outside CPU share, sitting) reach the figures.
TEST(Phases, ArrangementDivergedAndConditions) {
  JobData a = job("a", "1", 100, 110, {"run-1"}), b = job("b", "1", 100, 111, {"run-1"});
  JobData c = job("c", "2", 120, 130, {"run-1"});
  gridrun::jobs::JobParams one;
  one.ranks = 1;
  one.threads_per_rank = 2;
  a.params = b.params = one;
  gridrun::jobs::JobParams two;
  two.ranks = 2;
  two.threads_per_rank = 1;
  c.params = two;
  std::vector<const JobData*> read = {&a, &b, &c};
  PhaseInput in;
  in.compare_by = "ranks";
  gridrun::run::PhaseRecord r1;
  r1.name = "1";
  r1.makespan_s = 11;
  r1.max_running = 2;
  r1.other_cpu_share = 0.4;
  r1.sitting = "run-1";
  r1.jobs = {"a", "b"};
  in.recorded["1"] = r1;
  gridrun::run::PhaseRecord r2 = r1;
  r2.name = "2";
  r2.max_running = 1;
  r2.jobs = {"c"};
  in.recorded["2"] = r2;
  auto phases = complete_phases(in, read);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].arrangement, "2 jobs x 1 rank x 2 threads, side by side");
  EXPECT_EQ(phases[1].arrangement, "1 job x 2 ranks");
  EXPECT_DOUBLE_EQ(phases[0].job_resources, 2);
  EXPECT_DOUBLE_EQ(phases[0].other_cpu_share, 0.4);
  EXPECT_EQ(phases[0].sitting, "run-1");
  EXPECT_TRUE(phases[1].unmeasured.empty());
  c.status = "diverged";
  c.exit_reason = "diverged: training loss is NaN at step 3";
  phases = complete_phases(in, read);
  ASSERT_EQ(phases[1].diverged.size(), 1u);
  EXPECT_NE(phases[1].unmeasured.find("diverged"), std::string::npos) << phases[1].unmeasured;
  EXPECT_TRUE(std::isnan(phases[1].makespan_s));
  const auto lines = verdict_lines(phases, VerdictOptions{"ranks", "gridrun run g.yaml"});
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("Left out: ranks=2 (1 job x 2 ranks)", 0), 0u) << lines[0];
}

// GPU conditions (issue 44 point 2): complete_phases takes the worst job's figures from /summary,
// the verdict flags a phase whose GPUs were shared with a stranger's process or throttled as it
// flags a CPU-disturbed one, and phases measured apart are alike only under alike GPU conditions.
TEST(Phases, GpuConditionsFromTheJobs) {
  JobData a = job("a", "1", 100, 110, {"run-1"}), b = job("b", "1", 100, 111, {"run-1"});
  JobData c = job("c", "2", 120, 130, {"run-1"});  // a file without the figures: unknown
  a.summary["gpu_foreign_share"] = 0.05;
  a.summary["gpu_foreign_procs_max"] = 1;
  a.summary["gpu_throttled_share"] = 0.5;
  a.summary["gpu_throttle_reasons"] = 0x4;
  a.summary["gpu_sm_clock_share"] = 0.9;
  b.summary["gpu_foreign_share"] = 0.4;
  b.summary["gpu_foreign_procs_max"] = 2;
  b.summary["gpu_throttled_share"] = 0.1;
  b.summary["gpu_throttle_reasons"] = 0x40;
  b.summary["gpu_sm_clock_share"] = 0.7;
  PhaseInput in;
  in.compare_by = "ranks";
  const auto phases = complete_phases(in, {&a, &b, &c});
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_DOUBLE_EQ(phases[0].gpu_foreign_share, 0.4);
  EXPECT_DOUBLE_EQ(phases[0].gpu_foreign_procs, 2);
  EXPECT_DOUBLE_EQ(phases[0].gpu_throttled_share, 0.5);
  EXPECT_DOUBLE_EQ(phases[0].gpu_sm_clock_share, 0.7);
  EXPECT_EQ(phases[0].gpu_throttle_reasons, 0x44u);
  EXPECT_TRUE(std::isnan(phases[1].gpu_foreign_share));
  EXPECT_TRUE(std::isnan(phases[1].gpu_throttled_share));
}

namespace {
std::string joined(const std::vector<PhaseFigures>& phases) {
  std::string out;
  for (const auto& l :
       verdict_lines(phases, VerdictOptions{"ranks", "gridrun run runs/x/grid.yaml --out runs"}))
    out += l + "\n";
  return out;
}
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(Verdict, GpuSharedOrThrottledIsDisturbed) {
  auto large = phase("2", 14.2, 2, false), small = phase("1", 10.6, 2, true);
  large.seed_noise = small.seed_noise = 0.02;
  large.other_cpu_share = small.other_cpu_share = 0.02;
  for (auto* p : {&large, &small}) {
    p->gpu = true;
    p->gpu_foreign_share = 0;
    p->gpu_throttled_share = 0.01;
    p->gpu_sm_clock_share = 0.98;
  }
  // Quiet GPUs: a verdict, no caveat.
  std::string text = joined({large, small});
  EXPECT_TRUE(has(text, "several small side by side win, 1.34x faster")) << text;
  EXPECT_FALSE(has(text, "GPUs")) << text;
  // At the threshold is not above it.
  small.gpu_foreign_share = kGpuSharedShare;
  small.gpu_throttled_share = kThrottledShare;
  EXPECT_FALSE(has(joined({large, small}), "inconclusive"));
  // A stranger's process beside the phase's own in 40 % of the samples.
  small.gpu_foreign_share = 0.4;
  small.gpu_foreign_procs = 2;
  text = joined({large, small});
  EXPECT_TRUE(has(text, "inconclusive, ranks=1 was disturbed. As measured, ranks=1 was 1.34x faster"))
      << text;
  EXPECT_TRUE(has(text,
                  "ranks=1 was measured while its GPUs ran up to 2 compute processes of no job of this "
                  "run beside its own, in 40 % of the samples (more than 10 %): not comparable. Rerun "
                  "it when its GPUs are free: gridrun run runs/x/grid.yaml --out runs --rerun phase=1"))
      << text;
  // Throttled by heat or power in 60 % of the samples (the idle bit is no throttling).
  small.gpu_foreign_share = 0;
  large.gpu_throttled_share = 0.6;
  large.gpu_throttle_reasons = 0x1 | 0x4 | 0x20;
  large.gpu_sm_clock_share = 0.71;
  text = joined({large, small});
  EXPECT_TRUE(has(text, "inconclusive, ranks=2 was disturbed")) << text;
  EXPECT_TRUE(has(text,
                  "ranks=2 was measured while its GPUs were throttled (power cap, thermal (software)) in "
                  "60 % of the samples (more than 20 %), at 71 % of their highest SM clock on average: "
                  "not comparable. Rerun it once the GPUs are cool and under their power limit: gridrun "
                  "run runs/x/grid.yaml --out runs --rerun phase=2"))
      << text;
  // The likely cause beside a missed prediction.
  large.predicted_makespan_s = 9.0;
  EXPECT_TRUE(has(joined({large, small}),
                  "its GPUs were throttled (power cap, thermal (software)) in 60 % of "
                  "the samples."));
}

TEST(Verdict, GpuConditionsOfPhasesMeasuredApart) {
  auto large = phase("2", 14.2, 2, false), small = phase("1", 10.6, 2, true);
  large.seed_noise = small.seed_noise = 0.02;
  large.sitting = "run-1";
  small.sitting = "run-2";
  large.start_unix = 1795000000;
  small.start_unix = 1795002400;
  large.other_cpu_share = small.other_cpu_share = 0.02;
  large.gpu_throttled_share = 0.0;
  small.gpu_throttled_share = 0.05;
  large.gpu_foreign_share = small.gpu_foreign_share = 0;
  std::string text = joined({large, small});
  EXPECT_TRUE(has(text, "under alike load: compared as they are")) << text;
  EXPECT_TRUE(has(text, "its GPUs throttled in 5 % and shared in 0 % of the samples")) << text;
  // Same CPU load, but one sitting's GPUs throttled in 18 % of the samples and the other's in 0 %:
  // under the disturbed threshold, yet not alike.
  small.gpu_throttled_share = 0.18;
  text = joined({large, small});
  EXPECT_TRUE(has(text, "measured apart under different load")) << text;
  EXPECT_TRUE(has(text, "--rerun compare")) << text;
  // One sitting's files without the figures (an older gridrun): not known alike.
  small.gpu_throttled_share = std::nan("");
  EXPECT_TRUE(has(joined({large, small}), "measured apart under different load"));
}

TEST(Verdict, RepeatWithSharedGpuLeftOut) {
  auto rep = [](const std::string& v, int r, double makespan, bool sbs) {
    PhaseFigures p = phase(v, makespan, 2, sbs);
    p.repeat = r;
    p.value = v;
    if (r > 0) {
      p.name = v + "#" + std::to_string(r + 1);
      p.label += " #" + std::to_string(r + 1);
    }
    p.sitting = "run-1";
    p.other_cpu_share = 0.02;
    p.gpu_foreign_share = 0;
    return p;
  };
  std::vector<PhaseFigures> ph = {rep("2", 0, 14.2, false), rep("1", 0, 10.9, true),
                                  rep("1", 1, 11.0, true),  rep("2", 1, 14.6, false),
                                  rep("2", 2, 14.0, false), rep("1", 2, 10.6, true)};
  ph[2].gpu_foreign_share = 0.9;
  const std::string text = joined(ph);
  EXPECT_TRUE(has(text,
                  "Left out of the ratio, disturbed: ranks=1 #2 (its GPUs shared with other processes in "
                  "90 % of the samples)."))
      << text;
  EXPECT_TRUE(has(text, "2 interleaved repeats")) << text;
}

// Slurm conditions: a task's logs/<id>.others (slurm/src/task_body.sh) read back, carried to the
// phase, and a phase whose nodes ran another Slurm job flagged like a disturbed one.
TEST(Phases, SlurmOthersFromTheTaskFiles) {
  const std::string dir = testing::TempDir() + "verdict-slurm-others";
  std::filesystem::remove_all(dir);
  const gridrun::run::RunDir rd(dir);
  std::filesystem::create_directories(rd.logs_dir());
  std::ofstream(rd.others_file("a"))
      << "start 1795000000 task 40_0\njob 39 alice sleeper\n"
      << "end 1795000010 task 40_0\njob 39 alice sleeper\njob 41 bob two words\n";
  std::ofstream(rd.others_file("b")) << "start 1795000000 task 40_1\nend 1795000010 task 40_1\n";
  std::ofstream(rd.others_file("c")) << "start 1795000000 task 42_0\nunknown squeue: slurm_load_jobs error\n";
  const auto others = read_slurm_others(rd, {"a", "b", "c", "d"});
  ASSERT_EQ(others.size(), 3u) << "no file, no entry";
  EXPECT_TRUE(others.at("a").known);
  EXPECT_EQ(others.at("a").others, (std::vector<std::string>{"39 alice sleeper", "41 bob two words"}));
  EXPECT_TRUE(others.at("b").known);
  EXPECT_TRUE(others.at("b").others.empty());
  EXPECT_FALSE(others.at("c").known) << "squeue failed: not known to be alone";

  JobData a = job("a", "1", 100, 110, {"s1"}), b = job("b", "2", 120, 130, {"s1"});
  PhaseInput in;
  in.compare_by = "ranks";
  in.slurm_others = others;
  const auto phases = complete_phases(in, {&a, &b});
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].slurm_others.size(), 2u);
  EXPECT_TRUE(phases[1].slurm_others_known);
  EXPECT_TRUE(phases[1].slurm_others.empty());
  std::filesystem::remove_all(dir);
}

TEST(Verdict, NodesSharedWithOtherSlurmJobs) {
  auto large = phase("2", 14.2, 2, false), small = phase("1", 10.6, 2, true);
  large.seed_noise = small.seed_noise = 0.02;
  large.slurm_others_known = small.slurm_others_known = true;
  std::string text = joined({large, small});
  EXPECT_TRUE(has(text, "several small side by side win, 1.34x faster")) << text;
  small.slurm_others = {"39 alice sleeper"};
  text = joined({large, small});
  EXPECT_TRUE(has(text, "inconclusive, ranks=1 was disturbed")) << text;
  EXPECT_TRUE(has(text,
                  "ranks=1 shared its nodes with 1 other Slurm job while it ran (39 alice sleeper): not "
                  "comparable. Rerun it when its nodes are free (or with --sbatch-arg=--exclusive): gridrun "
                  "run runs/x/grid.yaml --out runs --rerun phase=1"))
      << text;
}
