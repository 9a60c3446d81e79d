// Every kind of file gridrun reads, with the rules of its guarded open (base::open_checked): its
// name in messages, its size cap and whether a symbolic link in its place is followed.
//
// Why one table: the caps are what docs/architecture.md ("Hostile input") promises, so they are
// written once, here, beside each other, rather than beside each reader. Why these caps: each is
// far above what gridrun itself writes for the largest run it accepts in practice, and far below
// what would take a command's memory (a link to /dev/zero, a 1 GB sparse file). Files gridrun
// writes itself (through write_file_atomic's rename, never as a link) are not followed; files a
// person hands in (a grid file, a cluster file) are, as any program follows them.
#pragma once

#include <cstdint>

#include "gridrun/base/fs.hpp"

namespace gridrun::base::kinds {

inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

// A person's files, named on the command line or in a grid.
inline constexpr FileKind kGridFile{"grid file", 16 * kMiB, true};
inline constexpr FileKind kClusterFile{"cluster file", 16 * kMiB, true};
inline constexpr FileKind kSbatchTemplate{"sbatch template", 1 * kMiB, true};
inline constexpr FileKind kProbeFile{"probe file", 16 * kMiB, true};
// A model or data file, hashed in 1 MiB blocks (never held whole): the cap only bounds the time.
inline constexpr FileKind kHashedInput{"model or data file", 1024 * kGiB, true};

// A run's own files (runs/<name>/...), all written by gridrun or its jobs.
inline constexpr FileKind kGridCopy{"run's grid copy", 16 * kMiB, false};       // grid.yaml
inline constexpr FileKind kStateFile{"state file", 256 * kMiB, false};          // state.json
inline constexpr FileKind kResultsIndex{"results index", 4 * kGiB, false};      // results/.gridrun-index
inline constexpr FileKind kResultsJournal{"results journal", 4 * kGiB, false};  // results/.gridrun-journal
inline constexpr FileKind kJobFile{"job file", 1 * kMiB, false};                // jobs/<id>.json
inline constexpr FileKind kHeartbeat{"heartbeat", 4 * kKiB, false};             // logs/<id>.out.heartbeat
inline constexpr FileKind kResultsFile{"results file", 1024 * kGiB,
                                       false};                     // results/<id>.h5[.partial], to libhdf5
inline constexpr FileKind kJobLog{"job log", 1024 * kGiB, false};  // logs/<id>.out|.err (tail read)
inline constexpr FileKind kLaunchToken{"launch token", 4 * kKiB, false};         // launch-token
inline constexpr FileKind kLockFile{"lock file", 4 * kKiB, false};               // lock
inline constexpr FileKind kCalibration{"calibration", 64 * kMiB, false};         // calibration.json
inline constexpr FileKind kPrediction{"prediction", 64 * kMiB, false};           // prediction.json
inline constexpr FileKind kRunSummary{"run summary", 16 * kMiB, false};          // .cache/summary.json
inline constexpr FileKind kRunCache{"run cache", 4 * kGiB, false};               // .cache/<name> (status)
inline constexpr FileKind kSlurmEnded{"Slurm exit code", 4 * kKiB, false};       // slurm/ended/<id>
inline constexpr FileKind kSlurmOthers{"Slurm node listing", 16 * kMiB, false};  // logs/<id>.others
inline constexpr FileKind kSubmittedList{"submission list", 64 * kMiB, false};   // slurm/submitted.tsv
// `gridrun export --format tensorboard --out DIR`'s list of the files it wrote (DIR/.gridrun-tensorboard).
inline constexpr FileKind kTensorboardList{"TensorBoard export list", 16 * kMiB, false};
// A multi-rank command job's meeting point (work/<id>/.rendezvous): rank 0's address and port.
inline constexpr FileKind kRendezvous{"rendezvous file", 4 * kKiB, false};
// Another rank's step seconds and utilization for rank 0 (work/<id>/.ranks/<launch>.<rank>), read
// as it grows: a line per step and per sample, so 64 MiB is over a million steps.
inline constexpr FileKind kRankReport{"rank report", 64 * kMiB, false};

// gridrun's own cache in the user's cache folder ($XDG_CACHE_HOME/gridrun/sha256.json).
inline constexpr FileKind kSha256Cache{"SHA-256 cache", 16 * kMiB, false};
// The kernel's files (/proc/<pid>/stat, environ, ...): st_size is 0, so the bounded read is the cap.
inline constexpr FileKind kProcFile{"/proc file", 16 * kMiB, true};

}  // namespace gridrun::base::kinds
