// Reading the job files of a results folder: every file read at most once per command, all of
// them in one guarded child, and an index beside them so that a file read once is not read again
// until it changes.
//
// Why: `status`, `collect`, `report` and `run` each used to read every job file through a forked
// copy of their own (a fork per file) and then once more in the parent, some of them two or three
// times per command: 10-50 ms per job. Here, the files not answered by the index are read in one
// forked copy (base::run_isolated_each) that sends each decoded record back; a file that crashes or
// hangs libhdf5 costs that copy only, is "damaged", and a new copy goes on with the next file.
//
// One verdict per file: a fresh read always reads the whole file (tables included), so a file that
// any command finds unreadable is unreadable for all of them, whatever depth the caller asked for;
// `gridrun run` quarantines and redoes exactly what the reports cannot read.
//
// The index (`<folder>/.gridrun-index`): per finished file (`<id>.h5`; a live `.partial` is never
// indexed) its size, mtime, ctime and inode, the verdict, and the record to Depth::Summary (no
// tables: they would make the index as large as the run). A file whose stat differs is read again;
// an index that is damaged, of another version or unwritable is ignored and rebuilt, never trusted
// blindly and never fatal. Written atomically (base::write_file_atomic) by whichever command read
// something new, so a `status` after k changed files reads those k.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "gridrun/results/format.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::results {

struct FolderReadOptions {
  Depth depth = Depth::Summary;
  bool use_index = true;                // false: read every file, neither read nor write the index
  double item_timeout_s = kReadGuardS;  // a file whose read hangs this long is damaged
  bool prune_index = false;             // drop index entries of files not asked for (a whole-folder read)
  // Forked copies reading at the same time when many files need reading (64 or more), at most one
  // per CPU this process may use: the reads are CPU-bound, so 2 cores read 10,000 files in about
  // half the time. 1: one copy, as for a few files.
  std::size_t max_copies = 4;
  // Not empty: at Depth::Summary each job's data holds only these /summary figures, and neither
  // its attributes nor its parameters (what `gridrun run` reconciles 100,000 finished jobs with:
  // their status and wall_s; the map of every figure was most of its time).
  std::vector<std::string> summary_keys;
  // A file read from disk this time (not answered by the index) comes back whole (Depth::Full,
  // JobData::depth says so) whatever `depth` asks: its tables were read anyway, and a caller that
  // wants some jobs whole later (the HTML report's drawn series) need not open it again.
  bool whole_when_read = false;
  // A read of many files (a first adoption of 100,000 files no writer journaled: minutes) is done
  // in parts of this many files; after each part the records read so far go to the folder's
  // journal, so that a read cut short (a kill, a Ctrl-C) is resumed by the next command instead of
  // starting over. 0: one part. Nothing is written while an IndexWritesOff lives.
  std::size_t checkpoint_every = 4096;
};

struct JobFileRead {
  std::string name;  // the file name inside the folder, as asked
  std::string path;  // folder / name
  bool ok = false;
  bool missing = false;  // no such file (not an error of the file)
  bool damaged = false;  // reading it crashed or hung libhdf5 (a forked copy took the blow)
  std::string error;     // when !ok: "<path>: reason", one line
  JobData data;          // when ok: to the depth asked (path set)
  bool from_index = false;
};

struct FolderReadStats {
  std::size_t asked = 0, from_index = 0, read = 0, failed = 0;
  bool index_rebuilt = false;  // the index was absent, damaged or of another version
};

// The file name index kept in each results folder.
inline constexpr const char* kIndexName = run::RunDir::kResultsIndexName;

// When a whole index is written again (ResultsFolder::flush). An index of 100,000 jobs is 274 MB:
// rewriting it because 10 files changed made `status` after a change cost as much as the run, so a
// large index takes the records of a few files read again as a delta appended to the folder's
// journal (the file writers append their records to), which readers consult wherever the index
// misses; once the journal passes a fraction of the index, the next flush writes the index whole
// and empties the journal. A small index is always written whole (it costs nothing).
struct IndexWriteOptions {
  std::size_t delta_from_bytes = std::size_t{4} << 20;  // smaller indexes: always written whole
  double max_journal_fraction = 0.125;                  // journal bytes / index bytes, at most
};

// A results folder with its index loaded once, for a caller that reads files of it many times (the
// run loop reads each job's file as the job ends): reads update the index in memory and flush()
// writes it, so a run of 10,000 jobs does not rewrite a 10,000-entry index 10,000 times.
class ResultsFolder {
 public:
  explicit ResultsFolder(std::string folder, bool use_index = true, const IndexWriteOptions& writes = {});
  ~ResultsFolder();  // flush(); a failure to write the index is ignored (it is only a cache)
  ResultsFolder(const ResultsFolder&) = delete;
  ResultsFolder& operator=(const ResultsFolder&) = delete;

  // See read_job_files (opts.use_index is the constructor's).
  std::vector<JobFileRead> read(const std::vector<std::string>& names, const FolderReadOptions& opts,
                                FolderReadStats* stats = nullptr);
  // Writes the index when a read changed it; never throws.
  void flush() noexcept;
  const std::string& folder() const;
  std::string index_path() const;  // folder / kIndexName

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A command that promises to only read the runs it looks at (`gridrun ls`) holds one of these for
// its whole work: while any exists in the process, no index is written (flush() does nothing); an
// index that is there and current is still read, a stale one is ignored for what changed. Why a
// process-wide switch rather than a FolderReadOptions field: the readers such a command calls
// (status, load_run) open their folders several layers down, and "this process writes nothing into
// the runs" is a property of the command, not of one read.
class IndexWritesOff {
 public:
  IndexWritesOff();
  ~IndexWritesOff();
  IndexWritesOff(const IndexWritesOff&) = delete;
  IndexWritesOff& operator=(const IndexWritesOff&) = delete;
};

// Reads `names` (e.g. "<id>.h5", "<id>.h5.partial") of `folder`, in order. Never throws for a
// file's sake: a missing, unreadable or damaged file is reported in its JobFileRead.
std::vector<JobFileRead> read_job_files(const std::string& folder, const std::vector<std::string>& names,
                                        const FolderReadOptions& opts, FolderReadStats* stats = nullptr);

// The job files of a results folder, one per job id: `<id>.h5`, else `<id>.h5.partial`; sorted.
std::vector<std::string> list_job_files(const std::string& folder);

}  // namespace gridrun::results
