// What judge.cu and judge_speed.cu share: the output of a call, the judged runs, the check of the inputs.
#pragma once

#include "buffers.hpp"
#include "compare.hpp"
#include "judge.hpp"
#include "launch_record.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace workbook::detail {

// The fresh value of element i of an input whose values come from `seed`: uniform in [-1, 1), as
// random_floats makes them, from a hash of the seed and the index (splitmix64), so that any timed
// run's values are new. The same on both sides, so the judge can tell what it handed over.
__host__ __device__ inline float fresh_value(std::uint64_t seed, std::size_t i)
{
    std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return -1.0f + 2.0f * static_cast<float>(z >> 40) * 0x1p-24f;
}

int grid_for(std::size_t n);

// The number of 32-bit words in which two device arrays of n floats differ (count: one scratch
// counter on the device).
std::size_t count_differences(const float* a, const float* b, std::size_t n, DeviceBuffer<unsigned long long>& count);

// "" or what a run wrote to `input` (defined in judge.cu, which says more).
std::string written_input(const Call& call, const Input& input, const float* kept, std::uint64_t seed);

//! [output]
// The output of a call: on the device with guard zones, or on the host for a round trip.
class Output {
public:
    explicit Output(const Call& call)
    {
        if (call.host_output) host_.assign(call.shape.count(), 0.0f);
        else device_.emplace(call.shape.count());
    }
    float* data() { return device_ ? device_->data() : host_.data(); }
    void poison()
    {
        if (device_) device_->poison();
        else poison_host(host_);
    }
    std::vector<float> download() const { return device_ ? device_->download() : host_; }
    GuardReport guards() const { return device_ ? device_->check_guards() : GuardReport{}; }
    // Against the reference: on the GPU for a device output, so that a large one stays there.
    Comparison compare_with(const Call& call)
    {
        if (device_) return compare_on_device(call.output, data(), call.expected(), call.shape, call.tolerance);
        return compare(call.output, host_, call.expected().host(), call.shape, call.tolerance);
    }
    // Keeps the output as it is now, for differs_from_kept().
    void keep()
    {
        if (!device_) {
            kept_host_ = host_;
            return;
        }
        if (kept_.size() != device_->size()) kept_ = DeviceBuffer<float>(device_->size());
        if (kept_.size() > 0)
            CUDA_CHECK(cudaMemcpy(kept_.data(), data(), kept_.bytes(), cudaMemcpyDeviceToDevice));
    }
    // Whether the output differs, bit for bit (so NaN equals NaN), from what keep() saved.
    bool differs_from_kept()
    {
        if (!device_) return std::memcmp(kept_host_.data(), host_.data(), host_.size() * sizeof(float)) != 0;
        return count_differences(data(), kept_.data(), kept_.size(), differences_) > 0;
    }

private:
    std::optional<GuardedOutput<float>> device_;
    std::vector<float> host_, kept_host_;
    DeviceBuffer<float> kept_;
    DeviceBuffer<unsigned long long> differences_{1};
};
//! [output]

// What a run's recording says is wrong with how the work was done, or "" (judge.cu).
std::string check_record(const Call& call, const LaunchRecord& record, const JudgeOptions& options);

// judge_call's work, leaving the last run's output in `out` for time_call (judge.cu).
Verdict judge_into(const Call& call, const JudgeOptions& options, Output& out);

}  // namespace workbook::detail
