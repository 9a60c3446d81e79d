// The training input pipeline: batches are gathered from a Dataset and augmented on a worker
// thread that runs ahead of the training loop by a bounded number of steps, so indexing, the
// normalisation done by Dataset::get and augmentation overlap the previous step's compute instead
// of adding to it (the `data_s` phase then only measures the wait for a ready batch).
//
// Determinism is the data-parallel contract: the augmentation of a sample depends only on
// (seed, epoch, the sample's index in the split), never on the rank, the position in the batch or
// the thread, so R ranks x batch b see exactly the augmented samples that 1 rank x batch R*b sees.
// Semantics and constants: docs/runner.md, "Input pipeline".
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gridrun/runner/dataset.hpp"

namespace gridrun::runner {

// `augment` grid parameter: none | flip (horizontal flip with probability 1/2) | crop_flip (random
// 32x32-style crop of the image zero-padded by `pad` pixels on every side, then the flip).
enum class Augment { None, Flip, CropFlip };

// Throws BadInput naming the parameter and the known values.
Augment parse_augment(const std::string& name);
const char* augment_name(Augment a);

struct AugmentOptions {
  Augment mode = Augment::None;
  std::uint64_t seed = 0;  // the job's seed
  std::int64_t pad = 4;    // crop_flip: zero padding in pixels (zero = the channel mean, since
                           // batches are already normalised)
};

// Augments image batch `x` [N, C, H, W] in place: sample i with the key (seed, epoch, ids[i]).
// A no-op for Augment::None. Throws BadInput for non-image input with an augmentation.
void augment_batch(at::Tensor& x, const std::vector<std::int64_t>& ids, std::int64_t epoch,
                   const AugmentOptions& o);

// The per-sample decision, exposed for tests: flip, and the crop's offsets in [0, 2*pad].
struct AugmentDraw {
  bool flip = false;
  std::int64_t dy = 0, dx = 0;
};
AugmentDraw augment_draw(std::uint64_t seed, std::int64_t epoch, std::int64_t index, std::int64_t pad);

// Sample indices of this rank for (epoch, step); EpochSampler::indices fits.
using IndexFn = std::function<std::vector<std::int64_t>(std::int64_t epoch, std::int64_t step)>;

struct LoaderOptions {
  AugmentOptions augment;
  std::int64_t steps_per_epoch = 1;              // after the last step of an epoch comes step 0 of the next
  std::int64_t start_epoch = 0, start_step = 0;  // first batch prepared (a resumed loop's position)
  // Batches prepared ahead. 0: no thread, get() builds the batch on the caller's thread (for
  // device-resident data sets, whose indexing is an asynchronous device launch anyway).
  std::size_t queue_depth = 2;
};

class Loader {
 public:
  Loader(std::shared_ptr<const Dataset> data, IndexFn indices, LoaderOptions o);
  // Stops and joins the worker; never blocks on a full queue.
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // The batch of (epoch, step). In the normal order (the step after the previous call's, or the
  // start position) it is the one the worker prepared; any other position restarts the worker
  // there (so a caller that skips around still gets correct batches, only without the overlap).
  // An exception thrown by the worker (dataset or index function) is rethrown here.
  Batch get(std::int64_t epoch, std::int64_t step);

  // Builds one batch on the calling thread, exactly as the worker does.
  static Batch build(const Dataset& data, const std::vector<std::int64_t>& ids, std::int64_t epoch,
                     const AugmentOptions& o);

 private:
  struct Item {
    std::int64_t epoch = 0, step = 0;
    Batch batch;
  };
  void run();
  void advance(std::int64_t& epoch, std::int64_t& step) const;

  std::shared_ptr<const Dataset> data_;
  IndexFn indices_;
  LoaderOptions o_;

  std::mutex mu_;
  std::condition_variable cv_;  // one variable for both sides: few waiters, simple predicates
  std::deque<Item> queue_;
  std::int64_t next_epoch_ = 0, next_step_ = 0;      // what the worker produces next
  std::int64_t expect_epoch_ = 0, expect_step_ = 0;  // what get() is expected to ask next
  std::uint64_t generation_ = 0;                     // bumped by a restart: in-flight work is dropped
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread worker_;  // last member: started after everything it reads is initialised
};

}  // namespace gridrun::runner
