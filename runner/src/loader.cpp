// The prefetching loader and the augmentations (see loader.hpp for the contract).
//
// Why a hash and not a random generator: a generator's state would depend on how many samples
// this rank drew before, which differs between 1 rank and R ranks; hashing (seed, epoch, index)
// gives every sample its own draw wherever and whenever it is loaded, also after a resume.
#include "loader.hpp"

#include <ATen/ATen.h>

#include <algorithm>

#include "gridrun/base/splitmix.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

using base::splitmix64_mix;

Augment parse_augment(const std::string& name) {
  if (name == "none" || name.empty()) return Augment::None;
  if (name == "flip") return Augment::Flip;
  if (name == "crop_flip") return Augment::CropFlip;
  throw BadInput("gridrun-train: unknown augment '" + name + "' (known: none, flip, crop_flip)");
}

const char* augment_name(Augment a) {
  switch (a) {
    case Augment::Flip: return "flip";
    case Augment::CropFlip: return "crop_flip";
    default: return "none";
  }
}

AugmentDraw augment_draw(std::uint64_t seed, std::int64_t epoch, std::int64_t index, std::int64_t pad) {
  const std::uint64_t h =
      splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ static_cast<std::uint64_t>(epoch)) ^
                     static_cast<std::uint64_t>(index));
  AugmentDraw d;
  d.flip = (h & 1) != 0;
  const auto span = static_cast<std::uint64_t>(2 * pad + 1);
  d.dy = static_cast<std::int64_t>((h >> 8) % span);
  d.dx = static_cast<std::int64_t>((h >> 32) % span);
  return d;
}

namespace {

// One pass over the pixels of a contiguous float32 CPU batch, in place: out[y][x] =
// in[y + dy - pad][(flip ? w-1-x : x) + dx - pad], 0 outside (zero padding of the normalised
// image = padding with the channel mean). Why not tensor ops: narrow/flip/copy_ per sample are
// 3-4 ATen calls each, which made crop_flip 7.3% of a lenet step at batch 64 (BENCHMARKS.md).
void augment_f32(at::Tensor& x, const std::vector<std::int64_t>& ids, std::int64_t epoch,
                 const AugmentOptions& o, bool crop) {
  const std::int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  float* data = x.data_ptr<float>();
  std::vector<float> sample(static_cast<std::size_t>(c * h * w));
  for (std::int64_t i = 0; i < n; ++i) {
    AugmentDraw d = augment_draw(o.seed, epoch, ids.at(static_cast<std::size_t>(i)), o.pad);
    if (!crop && !d.flip) continue;
    const std::int64_t pad = crop ? o.pad : 0;
    if (!crop) d.dy = d.dx = 0;
    float* img = data + i * c * h * w;
    std::copy(img, img + c * h * w, sample.begin());
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const float* in = sample.data() + ch * h * w;
      float* out = img + ch * h * w;
      for (std::int64_t y = 0; y < h; ++y) {
        const std::int64_t sy = y + d.dy - pad;
        float* row = out + y * w;
        if (sy < 0 || sy >= h) {
          std::fill(row, row + w, 0.0f);
          continue;
        }
        const float* src = in + sy * w;
        for (std::int64_t xx = 0; xx < w; ++xx) {
          const std::int64_t sx = (d.flip ? w - 1 - xx : xx) + d.dx - pad;
          row[xx] = (sx < 0 || sx >= w) ? 0.0f : src[sx];
        }
      }
    }
  }
}

}  // namespace

void augment_batch(at::Tensor& x, const std::vector<std::int64_t>& ids, std::int64_t epoch,
                   const AugmentOptions& o) {
  if (o.mode == Augment::None) return;
  if (x.dim() != 4 || !x.is_floating_point())
    throw BadInput(std::string("gridrun-train: augment=") + augment_name(o.mode) +
                   " needs image inputs, but the data set gives token ids (use augment=none)");
  const bool crop = o.mode == Augment::CropFlip && o.pad > 0;
  if (x.device().is_cpu() && x.scalar_type() == at::kFloat && x.is_contiguous())
    return augment_f32(x, ids, epoch, o, crop);
  const std::int64_t h = x.size(2), w = x.size(3);
  // Other layouts (not produced by gridrun's data sets today): the same result with tensor ops.
  const at::Tensor src = crop ? at::constant_pad_nd(x, {o.pad, o.pad, o.pad, o.pad}, 0.0) : x;
  for (std::int64_t i = 0; i < x.size(0); ++i) {
    const AugmentDraw d = augment_draw(o.seed, epoch, ids.at(static_cast<std::size_t>(i)), o.pad);
    if (!crop && !d.flip) continue;
    at::Tensor s = crop ? src[i].narrow(1, d.dy, h).narrow(2, d.dx, w) : src[i];
    if (d.flip) s = s.flip({2});  // flip() copies, so copying back into x[i] is safe
    x[i].copy_(s);
  }
}

Batch Loader::build(const Dataset& data, const std::vector<std::int64_t>& ids, std::int64_t epoch,
                    const AugmentOptions& o) {
  Batch b = data.get(ids);
  augment_batch(b.x, ids, epoch, o);
  return b;
}

Loader::Loader(std::shared_ptr<const Dataset> data, IndexFn indices, LoaderOptions o)
    : data_(std::move(data)), indices_(std::move(indices)), o_(o) {
  if (o_.steps_per_epoch < 1) o_.steps_per_epoch = 1;
  next_epoch_ = o_.start_epoch;
  next_step_ = o_.start_step;
  expect_epoch_ = next_epoch_;
  expect_step_ = next_step_;
  if (o_.queue_depth > 0) worker_ = std::thread([this] { run(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Loader::advance(std::int64_t& epoch, std::int64_t& step) const {
  if (++step >= o_.steps_per_epoch) {
    step = 0;
    ++epoch;
  }
}

// The worker: prepares batches in order while the queue has room; a failure is kept for get()
// and the worker then waits (for a restart or the end) instead of producing past it.
void Loader::run() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || (!error_ && queue_.size() < o_.queue_depth); });
    if (stop_) return;
    const std::uint64_t gen = generation_;
    Item it{next_epoch_, next_step_, {}};
    advance(next_epoch_, next_step_);
    lk.unlock();
    std::exception_ptr err;
    try {
      it.batch = build(*data_, indices_(it.epoch, it.step), it.epoch, o_.augment);
    } catch (...) {
      err = std::current_exception();
    }
    lk.lock();
    if (gen != generation_) continue;  // restarted meanwhile: this batch is not wanted
    if (err)
      error_ = err;
    else
      queue_.push_back(std::move(it));
    cv_.notify_all();
  }
}

Batch Loader::get(std::int64_t epoch, std::int64_t step) {
  if (o_.queue_depth == 0) return build(*data_, indices_(epoch, step), epoch, o_.augment);
  std::unique_lock<std::mutex> lk(mu_);
  if (epoch != expect_epoch_ || step != expect_step_) {
    queue_.clear();
    error_ = nullptr;
    next_epoch_ = epoch;
    next_step_ = step;
    ++generation_;
    cv_.notify_all();
  }
  cv_.wait(lk, [&] { return !queue_.empty() || error_; });
  if (queue_.empty()) std::rethrow_exception(error_);
  Item it = std::move(queue_.front());
  queue_.pop_front();
  expect_epoch_ = it.epoch;
  expect_step_ = it.step;
  advance(expect_epoch_, expect_step_);
  cv_.notify_all();
  return std::move(it.batch);
}

}  // namespace gridrun::runner
