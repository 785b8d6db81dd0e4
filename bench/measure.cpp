// The measuring side of workbook_bench (bench/measure.hpp says what it offers; the tables and main
// are in bench/workbook_bench.cpp).
//
// Every GPU result is checked against the float64 reference before it is timed, and every CPU
// result too: a fast wrong answer is not a figure.
#include "measure.hpp"

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/compare.hpp"
#include "common/convolution_reference.hpp"
#include "common/device.hpp"
#include "common/exact_references.hpp"
#include "common/gemm_reference.hpp"
#include "common/host.hpp"
#include "common/judge.hpp"
#include "common/random.hpp"
#include "common/sweep.hpp"
#include "common/timing.hpp"
#include "common/json.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace workbook::bench {

// ------------------------------------------------------------------------------------------------
// Results: one CSV per table.

namespace {

std::string csv_field(const std::string& text)
{
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

}  // namespace

void write_csv(const std::string& dir, const Table& table)
{
    std::ofstream out(dir + "/" + table.id + ".csv");
    out << "table,size,implementation,where,threads,copies,ms,note\n";
    for (const Row& r : table.rows) {
        char ms[32] = "";
        if (r.measured) std::snprintf(ms, sizeof ms, "%.6g", r.ms);
        out << table.id << ',' << csv_field(r.size) << ',' << csv_field(r.implementation) << ',' << r.where << ','
            << r.threads << ',' << r.copies << ',' << ms << ',' << csv_field(r.note) << '\n';
    }
}

// ------------------------------------------------------------------------------------------------
// The plan: its steps, and whether one of them found a wrong result.

namespace {

bool g_wrong = false;  // some result did not match its reference

// The host loop runs on one thread, as in the sources, and on every core.
std::vector<int> host_thread_counts()
{
    if (host_threads() == 1) return {1};
    return {1, host_threads()};
}

// ------------------------------------------------------------------------------------------------
// Timing on each side.

std::string ms_text(double ms)
{
    char text[32];
    std::snprintf(text, sizeof text, ms < 1 ? "%.4f ms" : ms < 100 ? "%.3f ms" : "%.0f ms", ms);
    return text;
}

void wrong_result(Table& table, const std::string& size, const std::string& implementation, const std::string& where,
                  int threads, const std::string& report)
{
    g_wrong = true;
    std::fprintf(stderr, "\n%s %s at %s: WRONG RESULT, not timed\n%s\n", implementation.c_str(), where.c_str(),
                 size.c_str(), report.c_str());
    table.rows.push_back({size, implementation, where, threads, where == "gpu" ? "kernel" : "", false, 0,
                          "wrong result: not timed"});
}

/// One GPU implementation on a table's data: checked by the judge (common/judge.hpp: poisoned,
/// guarded output, three runs against the float64 reference, a kernel must run; a wrong result
/// is reported and never timed), then timed twice:
/// the kernel alone, and with the copies of `inputs` to the device and of the output back.
/// `launch` runs the implementation on the device copies of `inputs`, in their order, into `out`.
using GpuLaunch = std::function<void(const std::vector<DeviceBuffer<float>>& in, float* out)>;

std::string check_and_time_gpu(Table& table, const std::string& size, const std::string& implementation,
                               int threads_per_block, const std::vector<const std::vector<float>*>& inputs,
                               const Reference& expected, const Shape& shape, const Tolerance& tolerance,
                               const GpuLaunch& launch)
{
    std::vector<DeviceBuffer<float>> in;
    in.reserve(inputs.size());
    for (const std::vector<float>* input : inputs) in.emplace_back(*input);
    Call call;
    call.function = implementation;
    call.what = size;
    call.shape = shape;
    call.tolerance = tolerance;
    call.expected = [&]() -> const Reference& { return expected; };
    call.run = [&](float* out) { launch(in, out); };
    // The solutions are linked into the bench itself: any kernel of this program counts.
    const Verdict verdict = judge_call(call, JudgeOptions{kJudgeRuns, false});
    if (!verdict.ok) {
        wrong_result(table, size, implementation, "gpu", threads_per_block, verdict.message);
        return "wrong result";
    }
    DeviceBuffer<float> out(expected.size());
    std::vector<float> host_out(expected.size());
    TimingOptions every_run;  // the bench keeps all 15 runs, where a grade run stops at 100 ms
    every_run.min_repetitions = every_run.repetitions;
    const Timing kernel = time_gpu([&] { launch(in, out.data()); }, every_run);
    const Timing copies = time_gpu([&] {
        for (std::size_t i = 0; i < in.size(); ++i)
            CUDA_CHECK(cudaMemcpy(in[i].data(), inputs[i]->data(), in[i].bytes(), cudaMemcpyHostToDevice));
        launch(in, out.data());
        CUDA_CHECK(cudaMemcpy(host_out.data(), out.data(), host_out.size() * sizeof(float), cudaMemcpyDeviceToHost));
    }, every_run);
    table.rows.push_back({size, implementation, "gpu", threads_per_block, "kernel", true, kernel.ms.median, ""});
    table.rows.push_back({size, implementation, "gpu", threads_per_block, "with copies", true, copies.ms.median, ""});
    return ms_text(kernel.ms.median) + " kernel, " + ms_text(copies.ms.median) + " with copies";
}

std::string time_cpu_case(Table& table, const std::string& size, int threads, int rows,
                          const std::function<void(int)>& row, const std::function<Comparison()>& verify,
                          double limit)
{
    HostTimingOptions options;
    options.limit_seconds = limit;
    const HostTiming t = time_host(rows, threads, row, options);
    if (!t.measured) {
        table.rows.push_back({size, "host loop", "cpu", threads, "", false, 0, t.note});
        return t.note;
    }
    const Comparison result = verify();
    if (!result.ok()) {
        wrong_result(table, size, "host loop", "cpu", threads, result.report());
        return "wrong result";
    }
    table.rows.push_back({size, "host loop", "cpu", threads, "", true, t.ms.median, ""});
    return ms_text(t.ms.median);
}

// ------------------------------------------------------------------------------------------------
// The three kinds of work, each with its data, its float64 reference, its host loop (as the
// sources wrote it: the plainest loop, one output at a time) and its GPU implementations.

// One step per GPU implementation, labelled with its block size. The work's data is shared by the
// steps (made by the first that needs it) and freed after the last, so that one table's large
// inputs are not held while the next table runs.
template <typename Impl, typename Data>
void plan_gpu_impls(std::vector<Step>& plan, const std::string& label, const std::vector<Impl>& impls,
                    const std::shared_ptr<Data>& data, const std::function<std::string(const Impl&)>& measure)
{
    for (std::size_t i = 0; i < impls.size(); ++i) {
        const Impl impl = impls[i];
        const bool last = i + 1 == impls.size();
        plan.push_back({label + impl.name + ", " + std::to_string(impl.threads_per_block) + " threads per block",
                        [=] {
                            const std::string text = measure(impl);
                            if (last) *data = Data{};
                            return text;
                        }});
    }
}

}  // namespace

/// C = A·B, A m x k, B k x n: host loop on 1 thread and on all (unless !host_loop), then each
/// implementation.
void plan_matmul(std::vector<Step>& plan, Table& table, int m, int k, int n, const std::string& size,
                 const std::vector<MatmulImpl>& impls, double limit, bool host_loop)
{
    struct Data {
        std::vector<float> a, b;
        Reference c;
    };
    auto data = std::make_shared<Data>();
    // The data and the reference are made by the first step that needs them, freed by the last.
    const auto prepare = [data, m, k, n, size] {
        if (!data->a.empty()) return;
        data->a = random_floats(static_cast<std::size_t>(m) * k, seed_for("bench A " + size));
        data->b = random_floats(static_cast<std::size_t>(k) * n, seed_for("bench B " + size));
        data->c = gemm_reference(data->a, data->b, m, k, n);
    };
    const Shape shape = Shape::grid(m, n);
    for (int threads : host_loop ? host_thread_counts() : std::vector<int>{}) {
        plan.push_back({table.id + " " + size + ": host loop, " + std::to_string(threads) + " thread(s)",
                        [=, &table] {
                            prepare();
                            std::vector<float> c(static_cast<std::size_t>(m) * n);
                            const Data& d = *data;
                            // The sources' host loop, row by row (common/host.hpp).
                            const auto row = [&](int i) { host_matmul_row(d.a.data(), d.b.data(), c.data(), k, n, i); };
                            return time_cpu_case(table, size, threads, m, row,
                                                 [&] { return compare("C", c, d.c.host(), shape, gemm_tolerance(k)); },
                                                 limit);
                        }});
    }
    plan_gpu_impls<MatmulImpl>(plan, table.id + " " + size + ": ", impls, data, [=, &table](const MatmulImpl& impl) {
        if (const std::string why = why_not_on_this_gpu(impl.needs); !why.empty()) {
            table.rows.push_back({size, impl.name, "gpu", impl.threads_per_block, "kernel", false, 0, why});
            return why;
        }
        prepare();
        const Data& d = *data;
        return check_and_time_gpu(table, size, impl.name, impl.threads_per_block, {&d.a, &d.b}, d.c, shape,
                                  gemm_tolerance(k, impl.inputs), [&](const std::vector<DeviceBuffer<float>>& in, float* out) {
                                      impl.launch(in[0].data(), in[1].data(), out, m, k, n);
                                  });
    });
}

void plan_transpose(std::vector<Step>& plan, Table& table, int rows, int cols, const std::vector<TransposeImpl>& impls,
                    double limit)
{
    const std::string size = std::to_string(rows) + "x" + std::to_string(cols);
    auto in = std::make_shared<std::vector<float>>(
        random_floats(static_cast<std::size_t>(rows) * cols, seed_for("bench transpose " + size)));
    auto expected = std::make_shared<Reference>(transpose_reference(*in, rows, cols));
    const Shape shape = Shape::grid(cols, rows);
    const Tolerance exact{0, 0, "a transpose moves values without changing them"};
    for (int threads : host_thread_counts()) {
        plan.push_back({table.id + " " + size + ": host loop, " + std::to_string(threads) + " thread(s)", [=, &table] {
                            std::vector<float> out(in->size());
                            // The post's host loop: each input row scattered down a column of out.
                            const auto row = [&](int r) {
                                for (int c = 0; c < cols; ++c)
                                    out[static_cast<std::size_t>(c) * rows + r] = (*in)[static_cast<std::size_t>(r) * cols + c];
                            };
                            return time_cpu_case(table, size, threads, rows, row,
                                                 [&] { return compare("out", out, expected->host(), shape, exact); }, limit);
                        }});
    }
    for (const TransposeImpl& impl : impls) {
        plan.push_back({table.id + " " + size + ": " + impl.name, [=, &table] {
                            return check_and_time_gpu(table, size, impl.name, impl.threads_per_block, {in.get()},
                                                      *expected, shape, exact,
                                                      [&](const std::vector<DeviceBuffer<float>>& d_in, float* out) {
                                                          impl.launch(d_in[0].data(), out, rows, cols);
                                                      });
                        }});
    }
}

void plan_convolution(std::vector<Step>& plan, Table& table, int height, int width, int k,
                      const std::vector<ConvolutionImpl>& impls, double limit, bool size_names_k)
{
    const std::string size = std::to_string(height) + "x" + std::to_string(width) +
                             (size_names_k ? " k" + std::to_string(k) : "");
    auto image = std::make_shared<std::vector<float>>(
        random_floats(static_cast<std::size_t>(height) * width, seed_for("bench image " + size)));
    auto mask = std::make_shared<std::vector<float>>(random_floats(static_cast<std::size_t>(k) * k, seed_for("bench mask")));
    auto expected = std::make_shared<std::optional<Reference>>();
    const Shape shape = Shape::grid(height, width);
    const auto reference = [=]() -> const Reference& {
        if (!*expected) *expected = convolution_reference(*image, height, width, *mask, k);
        return **expected;
    };
    for (int threads : host_thread_counts()) {
        plan.push_back({table.id + " " + size + ": host loop, " + std::to_string(threads) + " thread(s)", [=, &table] {
                            std::vector<float> out(image->size());
                            // One output row of the host baseline (common/host.hpp).
                            const auto row = [&](int y) {
                                host_convolution_row(image->data(), out.data(), height, width, mask->data(), k, y);
                            };
                            return time_cpu_case(
                                table, size, threads, height, row,
                                [&] { return compare("out", out, reference().host(), shape, convolution_tolerance(k)); }, limit);
                        }});
    }
    for (const ConvolutionImpl& impl : impls) {
        plan.push_back({table.id + " " + size + ": " + impl.name, [=, &table] {
                            impl.set_mask(mask->data(), k);
                            return check_and_time_gpu(table, size, impl.name, impl.threads_per_block, {image.get()},
                                                      reference(), shape, convolution_tolerance(k),
                                                      [&](const std::vector<DeviceBuffer<float>>& in, float* out) {
                                                          impl.launch(in[0].data(), out, height, width, k);
                                                      });
                        }});
    }
}

/// c = a + b on n floats: each implementation (no host loop: no source tables vector add).
void plan_vector_add(std::vector<Step>& plan, Table& table, int n, const std::vector<VectorAddImpl>& impls)
{
    const std::string size = std::to_string(n);
    struct Data {
        std::vector<float> a, b;
        Reference c;
    };
    auto data = std::make_shared<Data>();
    const auto prepare = [data, n, size] {
        if (!data->a.empty()) return;
        data->a = random_floats(n, seed_for("bench va " + size));
        data->b = random_floats(n, seed_for("bench vb " + size));
        data->c = sum_reference(data->a, data->b);
    };
    const Tolerance one_rounding{0, 0x1p-23, "one rounding of a + b"};
    plan_gpu_impls<VectorAddImpl>(plan, table.id + " " + size + ": ", impls, data, [=, &table](const VectorAddImpl& impl) {
        prepare();
        const Data& d = *data;
        return check_and_time_gpu(table, size, impl.name, impl.threads_per_block, {&d.a, &d.b}, d.c, Shape::vector(n),
                                  one_rounding, [&](const std::vector<DeviceBuffer<float>>& in, float* out) {
                                      impl.launch(in[0].data(), in[1].data(), out, n);
                                  });
    });
}

/// cuBLAS on n x n x n, as a row of the table: the ceiling at that size, in FP32 (SGEMM, TF32
/// off) or, with tf32, on the tensor cores in TF32 (none before sm_80).
void plan_cublas(std::vector<Step>& plan, Table& table, int n, bool tf32)
{
    const std::string name = tf32 ? "cuBLAS TF32" : "cuBLAS SGEMM";
    plan.push_back({table.id + " " + std::to_string(n) + ": " + name, [=, &table] {
                        if (const std::string why = tf32 ? why_not_on_this_gpu(kTf32TensorCores) : "";
                            !why.empty()) {
                            table.rows.push_back({std::to_string(n), name, "gpu", 0, "kernel", false, 0, why});
                            return why;
                        }
                        const double gflops = tf32 ? tf32_gemm_gflops(n, n, n) : sgemm_gflops(n, n, n);
                        const double ms = 2.0 * n * n * static_cast<double>(n) / gflops / 1e6;
                        table.rows.push_back({std::to_string(n), name, "gpu", 0, "kernel", true, ms,
                                              tf32 ? "TF32 tensor cores, FP32 sums" : "FP32, TF32 off"});
                        return ms_text(ms);
                    }});
}

// ------------------------------------------------------------------------------------------------
// The machine, for meta.json.

std::string cpu_model()
{
    std::ifstream info("/proc/cpuinfo");
    std::string line;
    while (std::getline(info, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
        }
    return "unknown CPU";
}

namespace {

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

void write_meta(const std::string& dir, const DeviceProbe& probe, bool quick, double limit, double seconds,
                const std::string& implementations)
{
    const DeviceFacts& facts = device_facts();
    char date[16];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
    std::ofstream out(dir + "/meta.json");
    out << "{\n"
        << " \"date\": " << json_quote(date) << ",\n"
        << " \"gpu\": " << json_quote(facts.name) << ",\n"
        << " \"gpu_facts\": " << json_quote(facts.describe()) << ",\n"
        << " \"sm\": " << json_quote(std::to_string(facts.cc_major) + "." + std::to_string(facts.cc_minor)) << ",\n"
        << " \"driver\": " << json_quote("CUDA " + version_text(probe.driver_version)) << ",\n"
        << " \"cuda\": " << json_quote(version_text(probe.runtime_version)) << ",\n"
        << " \"cpu\": " << json_quote(cpu_model()) << ",\n"
        << " \"cpu_threads\": " << host_threads() << ",\n"
        << " \"cpu_flags\": " << json_quote("-O3 (CMake Release)") << ",\n"
        << " \"copy_gbs\": " << copy_ceiling_gbs() << ",\n"
        << " \"sgemm_gflops\": " << sgemm_ceiling_gflops() << ",\n"
        << " \"cpu_limit_s\": " << limit << ",\n"
        << " \"gpu_timing\": " << json_quote("median of 15 CUDA-event timings after a warm-up run, the L2 cache flushed "
                                             "before each; 'with copies' adds cudaMemcpy of the inputs from pageable host "
                                             "memory and of the output back, inside the same events") << ",\n"
        << " \"cpu_timing\": " << json_quote("steady_clock around the whole loop; loops under 2 s repeated up to 5 "
                                             "times, the median kept; a loop whose first rows show it would pass the "
                                             "limit is stopped and left out") << ",\n"
        << " \"seed\": " << run_seed() << ",\n"
        << " \"quick\": " << (quick ? "true" : "false") << ",\n"
        << " \"seconds\": " << seconds << ",\n"
        << " \"implementations\": {" << implementations << "}\n"
        << "}\n";
}

bool some_result_wrong() { return g_wrong; }

}  // namespace workbook::bench
