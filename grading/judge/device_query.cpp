// device_query: prints the GPU's facts and measured ceilings as one JSON object.
//
// The grader runs it once per grade run and hands the ceilings to every checker, so that all
// labs set their figures beside the same measurements. Exits 77 when there is no usable GPU,
// after saying why. Usage: device_query [--sgemm]   (--sgemm also measures cuBLAS SGEMM, and
// cuBLAS in TF32 on GPUs that have TF32 tensor cores: sm_80 and later)
#include "common/json.hpp"

#include "common/check.hpp"
#include "common/device.hpp"
#include "clock.hpp"

#include <cstdio>
#include <cstring>
#include <exception>

int main(int argc, char** argv)
{
    //! [probe]
    const workbook::DeviceProbe probe = workbook::probe_device();
    if (probe.status != workbook::DeviceProbe::Status::ok) {
        std::printf("{\"ok\":false,\"message\":%s}\n", workbook::json_quote(probe.message).c_str());
        std::fprintf(stderr, "%s\n", probe.message.c_str());
        return 77;
    }
    //! [probe]
    const bool sgemm = argc > 1 && std::strcmp(argv[1], "--sgemm") == 0;
    try {
        //! [facts]
        const workbook::DeviceFacts& facts = workbook::device_facts();
        //! [facts]
        std::printf("{\"ok\":true,\"device\":%s,\"name\":%s,\"sm\":\"%d%d\",\"sms\":%d,"
                    "\"peak_gbs\":%.1f,\"copy_gbs\":%.1f,\"sgemm_gflops\":%.1f,\"tf32_gflops\":%.1f,"
                    "\"idle_turn_ms\":%.4f}\n",
                    workbook::json_quote(facts.describe()).c_str(),
                    workbook::json_quote(facts.name).c_str(), facts.cc_major, facts.cc_minor,
                    facts.sms, facts.peak_gbs, workbook::copy_ceiling_gbs(),
                    sgemm ? workbook::sgemm_ceiling_gflops() : 0.0,
                    sgemm && workbook::why_not_on_this_gpu(workbook::kTf32TensorCores).empty()
                        ? workbook::tf32_ceiling_gflops()
                        : 0.0,
                    workbook::remote::median_turn_ms(9));
    } catch (const std::exception& e) {
        std::printf("{\"ok\":false,\"message\":%s}\n", workbook::json_quote(e.what()).c_str());
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
