#include "host.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace workbook {

namespace {
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// One run of the loop on `threads` threads. Returns false when the pace of the rows done so far
// says the whole loop would take longer than `limit` seconds; the loop is then abandoned.
bool run_with_limit(int rows, int threads, const std::function<void(int)>& row, double limit,
                    double settle, double& seconds)
{
    std::atomic<int> done{0};
    std::atomic<bool> stop{false};
    const Clock::time_point start = Clock::now();
    // The thread that finishes the last row stops the clock: the watching loop below only looks
    // every few milliseconds, and its lateness must not count.
    Clock::time_point finish = start;
    // The rows run on a thread of their own, shared out by for_rows(), while this one watches their
    // pace; once told to stop, the rows not yet started are skipped.
    std::thread runner([&] {
        for_rows(rows, threads, [&](int i) {
            if (stop) return;
            row(i);
            if (++done == rows) finish = Clock::now();
        });
    });
    bool within = true;
    while (done < rows) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const double elapsed = seconds_since(start);
        const int finished = done;
        const bool judged = elapsed >= settle || finished * 10 >= rows;
        // The first rows predict the rest: every row of these loops does the same work.
        if (judged && finished > 0 && elapsed * rows / finished > limit) {
            within = false;
            break;
        }
        if (elapsed > limit) {  // not one row finished in the whole allowance
            within = false;
            break;
        }
    }
    stop = true;
    runner.join();
    seconds = within ? std::chrono::duration<double>(finish - start).count() : seconds_since(start);
    return within;
}
}  // namespace

int host_threads()
{
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? static_cast<int>(n) : 1;
}

void for_rows(int rows, int threads, const std::function<void(int)>& row)
{
    if (threads <= 1) {
        for (int i = 0; i < rows; ++i) row(i);
        return;
    }
    std::atomic<int> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (int i = next++; i < rows; i = next++) row(i);
        });
    for (auto& t : pool) t.join();
}

HostTiming time_host(int rows, int threads, const std::function<void(int)>& row,
                     const HostTimingOptions& options)
{
    HostTiming result;
    std::vector<double> samples;
    double total = 0;
    while (static_cast<int>(samples.size()) < options.max_runs &&
           (samples.empty() || total < options.min_total_seconds)) {
        double seconds = 0;
        if (!run_with_limit(rows, threads, row, options.limit_seconds, options.settle_seconds, seconds)) {
            char text[96];
            std::snprintf(text, sizeof text, "left out: over %g s on %d thread%s", options.limit_seconds,
                          threads, threads == 1 ? "" : "s");
            result.note = text;
            return result;
        }
        samples.push_back(seconds * 1e3);
        total += seconds;
    }
    result.measured = true;
    result.ms = summarize(samples);
    return result;
}

void host_matmul_row(const float* a, const float* b, float* c, int k, int n, int i)
{
    const std::size_t row = static_cast<std::size_t>(i);
    for (int j = 0; j < n; ++j) {
        double sum = 0;
        for (int p = 0; p < k; ++p)
            sum += static_cast<double>(a[row * k + p]) * b[static_cast<std::size_t>(p) * n + j];
        c[row * n + j] = static_cast<float>(sum);
    }
}

void host_convolution_row(const float* in, float* out, int height, int width, const float* mask, int k, int y)
{
    const int r = (k - 1) / 2;
    for (int x = 0; x < width; ++x) {
        double sum = 0;
        for (int i = 0; i < k; ++i) {
            const int yy = y + i - r;
            if (yy < 0 || yy >= height) continue;
            for (int j = 0; j < k; ++j) {
                const int xx = x + j - r;
                if (xx >= 0 && xx < width)
                    sum += static_cast<double>(mask[i * k + j]) * in[static_cast<std::size_t>(yy) * width + xx];
            }
        }
        out[static_cast<std::size_t>(y) * width + x] = static_cast<float>(sum);
    }
}

}  // namespace workbook
