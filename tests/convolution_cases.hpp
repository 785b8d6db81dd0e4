// What the checkers of lab 07 and its going-further part share: the test image and masks, the
// float64 reference, the tolerance derived from k, the correctness check with a diagnosis, and
// the bandwidth test against the reference solution.
#pragma once

#include "common/workbook.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
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
// The student's kernel may take up to 1.25x the reference's time before losing the points.
constexpr double kSpeedFloor = 0.8;
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
};

inline std::string size_text(int height, int width) { return std::to_string(height) + " x " + std::to_string(width); }

/// Whether the student's file defines the kernel's launch and set_mask; fails the test if not.
inline bool present(const Kernel& kernel)
{
    if (missing(kernel.launch)) return have_function(nullptr, kernel.function.c_str());
    return have_function(reinterpret_cast<const void*>(kernel.set_mask), "set_mask");
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
                            const Comparison& result, const GuardReport& guards,
                            const std::vector<float>& got, bool changes_between_runs)
{
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
    if (changes_between_runs)
        return "The result changes from one run to the next on the same input: a race. Threads "
               "read tile cells that other threads load: is there a __syncthreads() between loading "
               "the tile and computing from it, reached by every thread of the block (no early "
               "return before it)? Or do several threads write the same output?";
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

/// Runs one mask on poisoned, guarded output twice (three times after a failure, to tell a race).
/// Returns false after failing the test with a diagnosis.
inline bool check_mask(const Kernel& kernel, const std::vector<float>& image, const DeviceBuffer<float>& in,
                       GuardedOutput<float>& out, int height, int width, int k)
{
    const std::vector<float> mask = make_mask(k);
    //! [reference]
    const std::vector<double> expected = convolution_reference(image, height, width, mask, k, kernel.stride);
    //! [reference]
    kernel.set_mask(mask.data(), k);
    const Shape shape = Shape::grid(out_size(height, kernel.stride), out_size(width, kernel.stride));
    bool passed_once = false, changes = false;
    std::vector<float> failed_got;  // the first failing output, kept to compare with the next run
    Comparison failed;
    GuardReport failed_guards;
    for (int run = 1; run <= 3; ++run) {
        out.poison();
        kernel.launch(in.data(), out.data(), height, width, k);
        CUDA_CHECK_LAUNCH(kernel.function.c_str());
        std::vector<float> got = out.download();
        Comparison result = compare("out", got, expected, shape, tolerance(k));
        const GuardReport guards = out.check_guards();
        const bool ok = result.ok() && guards.intact();
        if (failed_got.empty()) {
            if (ok) {
                passed_once = true;
                if (run == 2) return true;
                continue;
            }
            failed = std::move(result);
            failed_guards = guards;
            failed_got = std::move(got);
            if (run < 3) continue;
            changes = passed_once;
            break;
        }
        // The run after a failure: a race shows as a different result on the same input.
        // Compared bit for bit: NaN != NaN would make any NaN output look like a race.
        changes = passed_once || ok ||
                  std::memcmp(failed_got.data(), got.data(), got.size() * sizeof(float)) != 0;
        break;
    }
    FAIL_CHECK(kernel.function << ", " << size_text(height, width) << " image, k = " << k
               << (kernel.stride > 1 ? ", stride " + std::to_string(kernel.stride) : std::string())
               << ":\n"
               << (failed_guards.intact() ? "" : "  " + failed_guards.describe("out", failed_got.size()) + "\n")
               << failed.report() << "Hint: "
               << diagnose(kernel, image, height, width, mask, k, expected, failed, failed_guards,
                           failed_got, changes));
    return false;
}

/// The masks a size is checked with: every odd k from 1 to 15, except on the largest images.
/// There each k costs about a second of host work (the float64 reference and the comparison of
/// 64 M outputs, twice), in every student's grade run, so they take the smallest, a middle and
/// the largest k; the bandwidth test checks k = 3, 5 and 7 at that size before timing them.
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
    const std::vector<float> image = make_image(height, width);
    const DeviceBuffer<float> in(image);
    GuardedOutput<float> out(static_cast<std::size_t>(out_size(height, kernel.stride)) *
                             out_size(width, kernel.stride));
    for (int k : masks_for(height, width)) {
        try {
            if (!check_mask(kernel, image, in, out, height, width, k)) return;
        } catch (const std::exception& e) {
            FAIL_CHECK(kernel.function << ", " << size_text(height, width) << " image, k = " << k
                       << ": " << e.what());
            return;
        }
    }
}

/// The kernel once on random data: what compute-sanitizer observes.
inline void run_once(const Kernel& kernel, int height, int width, int k)
{
    const std::vector<float> image = make_image(height, width);
    const std::vector<float> mask = make_mask(k);
    const DeviceBuffer<float> in(image);
    DeviceBuffer<float> out(image.size());
    kernel.set_mask(mask.data(), k);
    kernel.launch(in.data(), out.data(), height, width, k);
    CUDA_CHECK_LAUNCH(kernel.function.c_str());
}

/// True when the kernel writes every output, inside `out` (a tool's verdict on a kernel that does
/// nothing would mean nothing); `why` receives the comparison's report.
inline bool writes_everything(const Kernel& kernel, int height, int width, int k, std::string& why)
{
    if (!present(kernel)) return false;
    const std::vector<float> image = make_image(height, width);
    const std::vector<float> mask = make_mask(k);
    const DeviceBuffer<float> in(image);
    GuardedOutput<float> out(image.size());
    kernel.set_mask(mask.data(), k);
    kernel.launch(in.data(), out.data(), height, width, k);
    CUDA_CHECK_LAUNCH(kernel.function.c_str());
    const Comparison result = compare("out", out.download(), convolution_reference(image, height, width, mask, k),
                                      Shape::grid(height, width), tolerance(k));
    why = result.report();
    return result.unwritten == 0 && out.check_guards().intact();
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
    const std::vector<float> image = make_image(s, s);
    const DeviceBuffer<float> in(image);
    GuardedOutput<float> out(image.size());
    const double bytes = 2.0 * s * s * sizeof(float);
    std::string slow;
    for (int k : {3, 5, 7}) {
        const std::vector<float> mask = make_mask(k);
        yours.set_mask(mask.data(), k);
        reference.set_mask(mask.data(), k);
        yours.launch(in.data(), out.data(), s, s, k);
        CUDA_CHECK_LAUNCH(yours.function.c_str());
        const Comparison result = compare("out", out.download(), convolution_reference(image, s, s, mask, k),
                                          Shape::grid(s, s), tolerance(k));
        if (!result.ok() || !out.check_guards().intact()) {
            FAIL_CHECK("not timed: " << yours.function << " is wrong at " << size_text(s, s) << " with k = "
                       << k << ". Make the correctness tests pass first.\n" << result.report());
            return;
        }
        const Timing mine = time_gpu([&] { yours.launch(in.data(), out.data(), s, s, k); });
        const Timing theirs = time_gpu([&] { reference.launch(in.data(), out.data(), s, s, k); });
        const double gbs = mine.giga_per_second(bytes);
        MESSAGE("k = " << k << ", your kernel: " << versus_copy(gbs) << ", "
                << static_cast<long>(megapixels(s, s, mine)) << " Mpixel/s, " << mine.describe());
        MESSAGE("k = " << k << ", reference:   " << versus_copy(theirs.giga_per_second(bytes)) << ", "
                << static_cast<long>(megapixels(s, s, theirs)) << " Mpixel/s, " << theirs.describe());
        if (target_percent > 0 && k == 5)
            MESSAGE("the goal at k = 5: " << target_percent << "% of copy; yours reaches "
                    << static_cast<int>(100 * gbs / copy_ceiling_gbs()) << "%");
        const double speed = theirs.seconds() / mine.seconds();
        if (speed < kSpeedFloor)
            slow += "\n  k = " + std::to_string(k) + ": " + std::to_string(1 / speed) + "x the reference's time";
    }
    // The source post's case, for its Tesla P100 figure (see the lab's README).
    const std::vector<float> post = make_image(kPostHeight, kPostWidth);
    const std::vector<float> mask = make_mask(kPostK);
    const DeviceBuffer<float> post_in(post);
    DeviceBuffer<float> post_out(post.size());
    yours.set_mask(mask.data(), kPostK);
    const Timing at_post = time_gpu([&] { yours.launch(post_in.data(), post_out.data(), kPostHeight, kPostWidth, kPostK); });
    MESSAGE("your kernel at " << size_text(kPostHeight, kPostWidth) << " with k = " << kPostK
            << ", the source post's case: " << at_post.describe() << ", "
            << static_cast<long>(megapixels(kPostHeight, kPostWidth, at_post)) << " Mpixel/s");
    if (!slow.empty())
        FAIL_CHECK("your kernel is slower than the reference's time allows (at most " << 1 / kSpeedFloor
                   << "x earns these points):" << slow);
}

}  // namespace convolution
