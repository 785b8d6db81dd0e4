// What the checkers of lab 07 and its going-further part share: the test image and masks, the
// float64 reference, the tolerance derived from k, the correctness check with a diagnosis, and
// the bandwidth test against the reference solution.
#pragma once

#include "grading/judge/checker.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace convolution {

using namespace workbook;

/// A convolution launch on the device: out = in ⊛ mask for a height x width image, with the
/// k x k mask already copied into the implementation's constant memory by its set_mask.
using Launch = std::function<void(const float* in, float* out, int height, int width, int k)>;
/// An implementation's set_mask: copies a k x k host mask into its constant memory.
using SetMask = void (*)(const float* mask, int k);

constexpr int kMaxK = 15;
constexpr int kTimedSize = 8192;  // the size of the H100 calibration figures
// The source post's case: a 2000 x 5000 image and a 3 x 3 mask.
constexpr int kPostHeight = 2000, kPostWidth = 5000, kPostK = 3;

/// What a check runs: an implementation's launch and set_mask, and how its blocks cut the output.
struct Kernel {
    Launch launch;               ///< the launch under test
    SetMask set_mask = nullptr;  ///< the set_mask of the same file
    std::string function;        ///< its name in the lab, for every message
    int tile_w = 0;              ///< output columns per block, for the diagnosis (0: not tiled)
    int tile_h = 0;              ///< output rows per block
    int stride = 1;              ///< the stride the launch applies (the optional exercise)
    const void* address = nullptr;  ///< the student's launch function (null when the file lacks it)
};

inline std::string size_text(int height, int width) { return std::to_string(height) + " x " + std::to_string(width); }

/// Whether the student's file defines the kernel's launch and set_mask; fails the test if not.
inline bool present(const Kernel& kernel)
{
    return have_function(kernel.address, kernel.function.c_str()) &&
           have_function(reinterpret_cast<const void*>(kernel.set_mask), "set_mask");
}
inline int out_size(int size, int stride) { return (size + stride - 1) / stride; }

inline std::vector<float> make_image(int height, int width)
{
    return random_floats(static_cast<std::size_t>(height) * width, seed_for("in " + size_text(height, width)));
}

/// Random values in [-1, 1): no symmetry, so a flipped mask gives a different result.
inline std::vector<float> make_mask(int k)
{
    return random_floats(static_cast<std::size_t>(k) * k, seed_for("mask k=" + std::to_string(k)));
}

/// The tolerance of every output with a k x k mask (common/convolution_reference.hpp says why).
//! [tolerance]
inline Tolerance tolerance(int k) { return convolution_tolerance(k); }
//! [tolerance]

/// Where the failing outputs lie, for the diagnosis.
struct Pattern {
    std::size_t written = 0;         ///< outputs that were written
    std::size_t zeros = 0;           ///< written outputs that are exactly 0
    bool all_near_border = true;     ///< every failing output's window crosses an edge of the image
    bool top_or_left_alone = false;  ///< some failing output is at the top or left edge only
    bool all_right_bottom = true;    ///< every failing output is at the right or bottom edge
    bool all_tile_edges = true;      ///< every failing output lies within r of its block's edge
};

inline Pattern find_pattern(const Kernel& kernel, int height, int width, int k,
                            const std::vector<double>& expected, const std::vector<float>& got)
{
    Pattern p;
    const Tolerance tol = tolerance(k);
    const int r = (k - 1) / 2, s = kernel.stride, reach = std::max(r, 1);
    const int out_h = out_size(height, s), out_w = out_size(width, s);
    for (int y = 0; y < out_h; ++y)
        for (int x = 0; x < out_w; ++x) {
            const std::size_t index = static_cast<std::size_t>(y) * out_w + x;
            const float value = got[index];
            const bool unwritten = is_poison(value);
            if (!unwritten) {
                ++p.written;
                p.zeros += value == 0.0f;
                if (tol.accepts(value, expected[index])) continue;
            }
            // The window of output (y, x) reaches past an edge of the image; for the right and
            // bottom edges, the last column and row count even when r = 0.
            const bool top = y * s < r, left = x * s < r;
            const bool bottom = y * s + reach >= height, right = x * s + reach >= width;
            p.all_near_border &= top || left || bottom || right;
            p.top_or_left_alone |= (top || left) && !(bottom || right);
            p.all_right_bottom &= bottom || right;
            if (kernel.tile_w > 0) {
                const int tx = x % kernel.tile_w, ty = y % kernel.tile_h;
                p.all_tile_edges &= tx < r || tx >= kernel.tile_w - r || ty < r || ty >= kernel.tile_h - r;
            }
        }
    return p;
}

/// Whether the first failing outputs equal the convolution with the mask flipped both ways.
inline bool matches_flipped(const std::vector<float>& image, int height, int width,
                            const std::vector<float>& mask, int k, int stride, const Comparison& result)
{
    std::vector<float> flipped(mask.size());
    for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) flipped[i * k + j] = mask[(k - 1 - i) * k + (k - 1 - j)];
    const Tolerance tol = tolerance(k);
    const int out_w = out_size(width, stride);
    int matches = 0;
    for (const Mismatch& m : result.first) {
        if (m.unwritten) continue;
        const int y = static_cast<int>(m.index / out_w), x = static_cast<int>(m.index % out_w);
        if (!tol.accepts(m.got, convolution_reference_at(image, height, width, flipped, k, stride, y, x)))
            return false;
        ++matches;
    }
    return matches > 0;
}

// What the pattern of failures suggests, the likeliest cause first.
inline std::string diagnose(const Kernel& kernel, const std::vector<float>& image, int height, int width,
                            const std::vector<float>& mask, int k, const std::vector<double>& expected,
                            const Failure& f)
{
    const Comparison& result = f.comparison;
    const GuardReport& guards = f.guards;
    const std::vector<float>& got = f.got;
    const int r = (k - 1) / 2;
    if (!guards.intact())
        return "Threads wrote outside `out`. Blocks at the right and bottom edges stick out past the "
               "image: a thread may write only when its output exists, x < width and y < height "
               "(the output's size, with a stride).";
    if (result.unwritten == got.size())
        return "Nothing was written to `out`: does the kernel write out[y * width + x], and does the "
               "launch function launch it?";
    const Pattern p = find_pattern(kernel, height, width, k, expected, got);
    if (result.wrong > 0 && p.zeros == p.written)
        return "Every output is exactly 0, as if the mask were all zeros: does set_mask copy the "
               "k * k floats into c_mask (cudaMemcpyToSymbol(c_mask, mask, k * k * sizeof(float))), "
               "and does the kernel read c_mask[i * k + j]?";
    if (p.all_near_border && p.top_or_left_alone)
        return "Only outputs within r = " + std::to_string(r) + " of the image's border are wrong "
               "(a frame on the map): the zero padding. Input cells outside the image count as 0: "
               "test a cell's row and its column separately, 0 <= row < height and 0 <= col < "
               "width, before reading it, and use 0 otherwise. A test on the flat index "
               "row * width + col alone lets a column past the right edge read the start of the "
               "next row, and one before the left edge the end of the row above.";
    if (k > 1 && matches_flipped(image, height, width, mask, k, kernel.stride, result))
        return "The outputs equal the convolution with the mask flipped, mask[k-1-i][k-1-j]: the "
               "textbook convolution, not this lab's definition. Here out[y][x] sums mask[i][j] * "
               "in[y + i - r][x + j - r], so mask[0][0] multiplies the cell up and to the left of "
               "the centre, c_mask[i * k + j] as it comes.";
    if (p.all_right_bottom)
        return "Only the last columns and rows, at the right and bottom edges, are wrong: the "
               "output index or its bounds test is off there. A thread writes its own output (y, x) "
               "to out[y * width + x] whenever y < height and x < width: test the output's own "
               "coordinates, not its position in the tile (shifted by r), and read 0 past the last "
               "column and row.";
    if (kernel.tile_w > 0 && p.all_tile_edges)
        return "Outputs within r = " + std::to_string(r) + " of the edges of every " +
               size_text(kernel.tile_w, kernel.tile_h) + " block of outputs are wrong, not only at the "
               "image's border: the halo. A block needs the cells r around its outputs as well, "
               "(" + std::to_string(kernel.tile_h) + " + 2r) x (" + std::to_string(kernel.tile_w) +
               " + 2r) in all, more than it has threads: load the whole tile in a loop (cells t, "
               "t + 256, t + 512, ...), not one cell per thread.";
    if (result.wrong == 0)
        return "Some outputs were never written: does the grid cover the whole image, rounding up in "
               "both directions (x along the columns, y along the rows), and does every thread whose "
               "output exists write it?";
    return "Wrong values: check that out[y][x] sums c_mask[i * k + j] * in[y + i - r][x + j - r] over "
           "i, j in [0, k) with r = (k - 1) / 2, and the map above.";
}

/// A random image of this size, on the host and on the device, and the float64 reference of the
/// latest mask it was checked with (on the GPU for large images, where it takes milliseconds).
struct Image {
    Image(int h, int w) : height(h), width(w), in(make_image(h, w)), device_in(in) {}
    int height, width;
    std::vector<float> in;
    DeviceBuffer<float> device_in;

    /// The reference for the mask of make_mask(k) with this stride; one is kept at a time.
    const Reference& reference(int k, int stride) const
    {
        if (!latest_ || latest_k_ != k || latest_stride_ != stride) {
            latest_.reset();  // free the old one first: at 8192 x 8192 each is 512 MiB
            //! [reference]
            latest_ = std::make_unique<Reference>(convolution_reference(in, height, width, make_mask(k), k, stride));
            //! [reference]
            latest_k_ = k;
            latest_stride_ = stride;
        }
        return *latest_;
    }

private:
    mutable std::unique_ptr<Reference> latest_;
    mutable int latest_k_ = 0, latest_stride_ = 0;
};

/// The image of this size: at 8192 x 8192 the correctness and bandwidth tests of both kernels
/// share one, and its references.
inline std::shared_ptr<const Image> shared_image(int height, int width)
{
    return cached_case<Image>(static_cast<double>(height) * width, height, width);
}

/// One kernel on one image with one k x k mask: what the judge runs and compares. The float64
/// reference is computed when the judge first needs it.
inline Call call(const Kernel& kernel, const std::shared_ptr<const Image>& image, int k)
{
    const auto mask = std::make_shared<const std::vector<float>>(make_mask(k));
    const int h = image->height, w = image->width, s = kernel.stride;
    const auto reference = [image, k, s]() -> const Reference& { return image->reference(k, s); };
    Call c;
    c.function = kernel.set_mask ? kernel.function : "set_mask";
    c.address = kernel.set_mask ? kernel.address : nullptr;
    c.what = size_text(h, w) + " image, k = " + std::to_string(k) + (s > 1 ? ", stride " + std::to_string(s) : "");
    c.shape = Shape::grid(out_size(h, s), out_size(w, s));
    c.tolerance = tolerance(k);
    c.expected = reference;
    c.setup = [kernel, mask, k] { kernel.set_mask(mask->data(), k); };
    c.run = [kernel, image, k](float* out) { kernel.launch(image->device_in.data(), out, image->height, image->width, k); };
    c.inputs = {{image->device_in.data(), image->device_in.size(), "in"}};
    c.diagnose = [=](const Failure& f) { return diagnose(kernel, image->in, h, w, *mask, k, reference().host(), f); };
    c.race_hint = "Threads read tile cells that other threads load: is there a __syncthreads() between "
                  "loading the tile and computing from it, reached by every thread of the block (no early "
                  "return before it)? Or do several threads write the same output?";
    return c;
}

/// The masks a size is checked with: every odd k from 1 to 15, except on the largest images.
/// There each k costs three runs of 64 M outputs and a float64 reference, in every student's
/// grade run, and the smaller images already cover every k on awkward sizes; so they take the
/// smallest, a middle and the largest k, and the bandwidth test checks k = 3, 5 and 7 at that
/// size before timing them.
inline std::vector<int> masks_for(int height, int width)
{
    if (static_cast<double>(height) * width > (1 << 24)) return {1, 7, kMaxK};
    std::vector<int> ks;
    for (int k = 1; k <= kMaxK; k += 2) ks.push_back(k);
    return ks;
}

/// Checks one image size with the masks of masks_for(), on one random image; the test fails at
/// the first k that goes wrong, and says which.
inline void check(const Kernel& kernel, int height, int width)
{
    if (!present(kernel)) return;
    const auto image = shared_image(height, width);
    for (int k : masks_for(height, width))
        if (!workbook::check(call(kernel, image, k))) return;
}

/// The kernel on small images with small and large masks: what compute-sanitizer watches.
inline std::vector<Call> small_calls(const Kernel& kernel, const std::vector<std::array<int, 3>>& cases)
{
    std::vector<Call> calls;
    for (const auto& c : cases) calls.push_back(call(kernel, shared_image(c[0], c[1]), c[2]));
    return calls;
}

/// Output pixels per second, in millions.
inline double megapixels(int height, int width, const Timing& t)
{
    return static_cast<double>(height) * width / t.seconds() / 1e6;
}

/// Effective bandwidth (the input read once and the output written once: 8 bytes a pixel) at
/// 8192 x 8192 for k = 3, 5 and 7, against the reference's; then the time at the source post's
/// case, 2000 x 5000 with k = 3. target_percent, when set, is a goal printed at k = 5.
inline void check_bandwidth(const Kernel& yours, const Kernel& reference, double target_percent = 0)
{
    if (!present(yours)) return;
    const int s = kTimedSize;
    const auto image = shared_image(s, s);
    const double bytes = 2.0 * s * s * sizeof(float);
    bool profiled = false;
    for (int k : {3, 5, 7}) {
        const std::vector<float> mask = make_mask(k);
        reference.set_mask(mask.data(), k);
        const SpeedVerdict verdict = check_speed(call(yours, image, k), [&reference, image, k](float* out) {
            reference.launch(image->device_in.data(), out, image->height, image->width, k);
        }, {bytes, Ceiling::copy});
        profiled = verdict.profiled;
        if (target_percent > 0 && k == 5 && verdict.rate > 0)
            MESSAGE("the goal at k = 5: " << target_percent << "% of copy; yours reaches "
                    << static_cast<int>(100 * verdict.rate / copy_ceiling_gbs()) << "%");
    }
    if (profiled) return;
    // The source post's case, for its Tesla P100 figure (see the lab's README).
    const Image post(kPostHeight, kPostWidth);
    const std::vector<float> mask = make_mask(kPostK);
    DeviceBuffer<float> post_out(post.in.size());
    yours.set_mask(mask.data(), kPostK);
    const Timing at_post = time_gpu([&] { yours.launch(post.device_in.data(), post_out.data(), kPostHeight, kPostWidth, kPostK); });
    MESSAGE("your kernel at " << size_text(kPostHeight, kPostWidth) << " with k = " << kPostK
            << ", the source post's case: " << at_post.describe() << ", "
            << static_cast<long>(megapixels(kPostHeight, kPostWidth, at_post)) << " Mpixel/s");
}

}  // namespace convolution
