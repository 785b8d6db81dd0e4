// workbook_bench: the source documents' tables, rerun with the workbook's own solutions on this
// GPU and this CPU (`make bench`; bench/README.md says what each table is).
//
//   workbook_bench --out DIR [--quick] [--cpu-limit SECONDS] [--table ID]...
//
// --quick measures the smallest sizes only, with a CPU limit of 2 s instead of 30 (the test).
// For each table it writes DIR/<table>.csv, one row per measurement:
//   table,size,implementation,where,threads,copies,ms,note
// where `where` is cpu or gpu, `threads` the CPU threads or the GPU threads per block, `copies`
// "kernel" (the kernel alone) or "with copies" (inputs to the device, kernel, output back, timed
// together), and `ms` the median time, empty when the run was left out (`note` says why). It also
// writes DIR/meta.json: the GPU, the CPU, and how the times were taken. bench/report.py turns
// them into Markdown tables beside the sources' figures, and plots.
//
// Every GPU result is checked against the float64 reference before it is timed, and every CPU
// result too: a fast wrong answer is not a figure. Exit status 0, 77 without a usable GPU, 1 when
// a result was wrong.
//
// The tables' plans, the options and main are here; the kinds of work those plans build on
// (matmul, transpose, convolution, vector add, cuBLAS), the check-then-time helpers they all call,
// and the CSV and meta.json writers are in bench/measure.cpp (bench/measure.hpp).
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

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <fstream>
#include <functional>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

// The solutions' functions, each lab's API header inside the namespace bench/CMakeLists.txt
// compiles that solution into (generated from labs.json: lab02::, lab05rb::, ...).
#include "bench_solutions.hpp"

using namespace workbook;
using namespace workbook::bench;

namespace {

constexpr int kExitNoDevice = 77;

void usage()
{
    std::printf("usage: workbook_bench --out DIR [--quick] [--cpu-limit SECONDS] [--table ID]...\n"
                "       workbook_bench --launch-transposes   (lab 03's kernels once each, for Nsight Compute)\n"
                "tables: ijcee_table1 ijcee_table2 cis750 stokastik_transpose stokastik_matmul "
                "stokastik_convolution workbook\n");
}

// ------------------------------------------------------------------------------------------------
// The run: options, the plan of steps per table, running it, writing the results.

struct Options {
    std::string out_dir;
    bool quick = false;         // the short plan of the ctest gpu.bench.quick
    double limit = -1;          // seconds a CPU loop may take: 30 by default, 2 with --quick
    std::set<std::string> only; // the tables asked for (all when empty)
    bool launch_transposes = false;  // run under Nsight Compute by run_bench.py: lab 03's two kernels once
    bool wants(const std::string& table) const { return only.empty() || only.count(table) > 0; }
};

std::optional<Options> parse_options(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--out" && i + 1 < argc) o.out_dir = argv[++i];
        else if (arg == "--quick") o.quick = true;
        else if (arg == "--cpu-limit" && i + 1 < argc) o.limit = std::atof(argv[++i]);
        else if (arg == "--table" && i + 1 < argc) o.only.insert(argv[++i]);
        else if (arg == "--launch-transposes") o.launch_transposes = true;
        else return std::nullopt;
    }
    if (o.out_dir.empty() && !o.launch_transposes) return std::nullopt;
    if (o.limit < 0) o.limit = o.quick ? 2 : 30;
    return o;
}

// What each implementation does, for the report's notes (meta.json's "implementations").
const char* const kImplementationNotes =
    "\"lab 04 naive\": \"16 x 16 threads per block, one output each, A and B read from global memory\", "
    "\"lab 04 naive 1-D\": \"1-D blocks of 256 threads, one output each\", "
    "\"lab 05 tiled\": \"16 x 16 shared-memory tiles, 16 x 16 threads\", "
    "\"lab 05 register blocked\": \"128 x 128 outputs per block of 256 threads, 8 x 8 per thread, 8-deep slices\", "
    "\"lab 05 warp tiled\": \"128 x 128 (64 x 64 on small matrices) per block of 256 threads, 32 x 64 per warp, "
    "16-byte loads, double-buffered 16-deep slices\", "
    "\"lab 06 dynamic tile\": \"tile x tile threads and tile x tile dynamic shared-memory tiles\", "
    "\"lab 02 naive\": \"32 x 8 threads per 32 x 32 tile, read coalesced, written strided\", "
    "\"lab 03 unpadded\": \"32 x 32 shared tile, no padding (bank conflicts)\", "
    "\"lab 03 padded\": \"32 x 33 shared tile (padding: no bank conflicts)\", "
    "\"lab 07 direct\": \"32 x 8 threads, one output each, mask in constant memory\", "
    "\"lab 07 tiled\": \"32 x 8 outputs per block, input tile with halo in shared memory\", "
    "\"lab 07 coarsened\": \"8 x 4 outputs per thread, 128 x 32 per block, 16-byte loads into registers, no shared tile\", "
    "\"lab 01 reference\": \"one element per thread, 256 threads per block\", "
    "\"lab 06 vector add\": \"lab 01's kernel with the block size of the threads column\", "
    "\"lab 05 tensor cores\": \"256 x 128 per block of 8 warps (64 x 64 of 4 warps on small matrices), 64 x 64 per warp in m16n8k8 TF32 mma.sync, ldmatrix, 4 TMA stages of 32 along k in the 128-byte swizzle, each refilled by the last warp done with it\", "
    "\"lab 05 wgmma\": \"256 x 128 per block (128 or 64 x 128 when that leaves SMs idle): a producer warpgroup issuing TMA, two consumer warpgroups issuing wgmma m64nNk8 TF32, 4 mbarrier stages of 32 along k, 128-byte swizzle\", "
    "\"lab 05 persistent\": \"one block an SM, each taking 256 x 128 tile after tile, in clusters of 2 that share A's tile by TMA multicast; the wgmma register operand loaded a step of 8 ahead, two commit groups left running; B truncated by the tensor core as A is, a stage freed in both blocks by one arrive a warp\", "
    "\"lab 05 split TF32\": \"FP32's accuracy from three TF32 products: each input split into a TF32 head and tail by one pass over memory, then lab 05 persistent on the copies, one product of 3k terms\", "
    "\"cuBLAS SGEMM\": \"cublasSgemm, FP32 with TF32 off: the ceiling at that size\", "
    "\"cuBLAS TF32\": \"cublasSgemm with CUBLAS_TF32_TENSOR_OP_MATH: inputs rounded to TF32, FP32 sums\", "
    "\"host loop\": \"the sources' plain loop, one output at a time; 'all' threads split the rows\"";

// The matmul implementations the tables compare.
const MatmulImpl kNaive{"lab 04 naive", 256, lab04::launch_matmul_naive};
const MatmulImpl kNaive1d{"lab 04 naive 1-D", 256, lab04::launch_matmul_naive_1d};
const MatmulImpl kTiled{"lab 05 tiled", 256, lab05::launch_matmul_tiled};
const MatmulImpl kBlocked{"lab 05 register blocked", 256, lab05rb::launch_matmul_register_blocked};
const MatmulImpl kWarpTiled{"lab 05 warp tiled", 256, lab05wt::launch_matmul_warp_tiled};
// The tensor-core steps, with TF32's tolerance: inputs rounded to nearest (step 3), or cut by
// the tensor core (step 4, built for sm_90a).
const MatmulImpl kTensorCores{"lab 05 tensor cores", 128, lab05tc::launch_matmul_tensor_cores,
                              GemmInputs::tf32_rounded, kTf32TensorCores};
const MatmulImpl kWgmma{"lab 05 wgmma", 384, lab05wg::launch_matmul_wgmma, GemmInputs::tf32_truncated, kSm90a};
const MatmulImpl kPersistent{"lab 05 persistent", 384, lab05ps::launch_matmul_persistent, GemmInputs::tf32_truncated,
                             kSm90a};
// Step 6 computes to FP32's accuracy, so it meets FP32's tolerance, on step 5's tensor cores.
const MatmulImpl kSplitTf32{"lab 05 split TF32", 384, lab05st::launch_matmul_split_tf32, GemmInputs::fp32, kSm90a};

// IJCEE Table 1: 8n x 8n for n = 10..100, host, global memory (lab 04), shared memory (lab 05).
void plan_ijcee_table1(std::vector<Step>& plan, Table& table, const Options& o)
{
    for (int n = 10; n <= (o.quick ? 20 : 100); n += 10)
        plan_matmul(plan, table, 8 * n, 8 * n, 8 * n, std::to_string(8 * n), {kNaive, kTiled}, o.limit);
}

// IJCEE Table 2: 512 x 512 with 1, 4, 16, 64, 256 (and 1024) threads per block, lab 06's
// dynamically sized tiles; the host loop at 512 beside it.
void plan_ijcee_table2(std::vector<Step>& plan, Table& table, const Options& o)
{
    std::vector<MatmulImpl> tiles;
    for (int tile : {1, 2, 4, 8, 16, 32})
        tiles.push_back({"lab 06 dynamic tile", tile * tile, [tile](const float* a, const float* b, float* c, int m,
                                                                    int k, int n) {
                             lab06::launch_matmul_dynamic_tile(a, b, c, m, k, n, tile);
                         }});
    plan_matmul(plan, table, 512, 512, 512, "512", tiles, o.limit);
}

// CIS-750: four kernels from 32 to 4096, and the host loop on 1 and on all threads.
void plan_cis750(std::vector<Step>& plan, Table& table, const Options& o)
{
    for (int n = 32; n <= (o.quick ? 128 : 4096); n *= 2)
        plan_matmul(plan, table, n, n, n, std::to_string(n), {kNaive1d, kNaive, kTiled, kBlocked, kWarpTiled}, o.limit);
}

// The Stokastik post: transpose 2000 x 5000, matmul 2000 x 1000 x 5000, convolution 2000 x 5000 (3 x 3).
void plan_stokastik_transpose(std::vector<Step>& plan, Table& table, const Options& o)
{
    plan_transpose(plan, table, 2000, 5000,
                   {{"lab 02 naive", 256, lab02::launch_transpose_naive},
                    {"lab 03 unpadded", 256, lab03::launch_transpose_unpadded},
                    {"lab 03 padded", 256, lab03::launch_transpose_padded}},
                   o.limit);
}

void plan_stokastik_matmul(std::vector<Step>& plan, Table& table, const Options& o)
{
    plan_matmul(plan, table, 2000, 1000, 5000, "2000x1000x5000", {kNaive, kTiled, kBlocked, kWarpTiled}, o.limit);
}

void plan_stokastik_convolution(std::vector<Step>& plan, Table& table, const Options& o)
{
    plan_convolution(plan, table, 2000, 5000, 3,
                     {{"lab 07 direct", 256, lab07::set_mask, lab07::launch_convolution_direct},
                      {"lab 07 tiled", 256, lab07::set_mask, lab07::launch_convolution_tiled},
                      {"lab 07 coarsened", 256, lab07c::set_mask, lab07c::launch_convolution_coarsened}},
                     o.limit);
}

// The workbook's own figures, which no source tabled: each lab's reference at the size its checker
// times it, so that the book's lab pages come from this run too (docs/figures/reference_run.csv,
// its bench column). Too large for --quick.
void plan_workbook(std::vector<Step>& plan, Table& table, const Options& o)
{
    if (o.quick) return;
    const auto blocks_of = [](int threads) {
        return VectorAddImpl{"lab 06 vector add", threads, [threads](const float* a, const float* b, float* c, int n) {
                                 lab06::launch_vector_add_blocks(a, b, c, n, threads);
                             }};
    };
    plan_vector_add(plan, table, (1 << 26) + 1, {{"lab 01 reference", 256, lab01::launch_vector_add}, blocks_of(32)});
    std::vector<VectorAddImpl> sweep;
    for (int threads = 32; threads <= 1024; threads *= 2) sweep.push_back(blocks_of(threads));
    plan_vector_add(plan, table, 1 << 26, sweep);
    plan_transpose(plan, table, 8192, 8192,
                   {{"lab 02 naive", 256, lab02::launch_transpose_naive},
                    {"lab 03 unpadded", 256, lab03::launch_transpose_unpadded},
                    {"lab 03 padded", 256, lab03::launch_transpose_padded}},
                   o.limit);
    for (int k : {3, 5, 7})
        plan_convolution(plan, table, 8192, 8192, k,
                         {{"lab 07 direct", 256, lab07::set_mask, lab07::launch_convolution_direct},
                          {"lab 07 tiled", 256, lab07::set_mask, lab07::launch_convolution_tiled},
                          {"lab 07 coarsened", 256, lab07c::set_mask, lab07c::launch_convolution_coarsened}},
                         o.limit, true);
    for (int n : {1024, 2048, 4096}) {
        plan_cublas(plan, table, n, false);
        plan_cublas(plan, table, n, true);
        plan_matmul(plan, table, n, n, n, std::to_string(n), {kTensorCores, kWgmma, kPersistent, kSplitTf32}, o.limit,
                    false);
    }
}

// Every table, in the order they are measured and reported.
using TablePlanner = void (*)(std::vector<Step>&, Table&, const Options&);
const std::pair<const char*, TablePlanner> kTables[] = {
    {"ijcee_table1", plan_ijcee_table1},
    {"ijcee_table2", plan_ijcee_table2},
    {"cis750", plan_cis750},
    {"stokastik_transpose", plan_stokastik_transpose},
    {"stokastik_matmul", plan_stokastik_matmul},
    {"stokastik_convolution", plan_stokastik_convolution},
    {"workbook", plan_workbook},
};

// Lab 03's unpadded then padded kernel, once each at 4096 x 4096 and nothing else: run_bench.py
// runs this under Nsight Compute to count their shared-memory bank conflicts (the lab 03 figures).
constexpr int kProfiledTranspose = 4096;
void launch_transposes()
{
    const std::size_t count = static_cast<std::size_t>(kProfiledTranspose) * kProfiledTranspose;
    const DeviceBuffer<float> in(random_floats(count, seed_for("bench transpose profile")));
    DeviceBuffer<float> out(count);
    lab03::launch_transpose_unpadded(in.data(), out.data(), kProfiledTranspose, kProfiledTranspose);
    lab03::launch_transpose_padded(in.data(), out.data(), kProfiledTranspose, kProfiledTranspose);
    CUDA_CHECK(cudaDeviceSynchronize());
}

double seconds_since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs the steps in order, one progress line each.
void run_plan(const std::vector<Step>& plan, std::chrono::steady_clock::time_point started)
{
    for (std::size_t i = 0; i < plan.size(); ++i) {
        std::printf("[%3zu/%zu %4.0f s] %s ... ", i + 1, plan.size(), seconds_since(started), plan[i].what.c_str());
        std::fflush(stdout);
        const std::string result = plan[i].run();
        std::printf("%s\n", result.c_str());
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv)
{
    const std::optional<Options> options = parse_options(argc, argv);
    if (!options) {
        usage();
        return 2;
    }
    const DeviceProbe probe = probe_device();
    if (probe.status != DeviceProbe::Status::ok) {
        std::printf("make bench: skipped, nothing was measured: %s\n", probe.message.c_str());
        return kExitNoDevice;
    }
    if (options->launch_transposes) {
        launch_transposes();
        return 0;
    }
    ::mkdir(options->out_dir.c_str(), 0755);
    const auto started = std::chrono::steady_clock::now();
    std::printf("%s; copy %.0f GB/s; CPU: %s, %d threads\n", device_facts().describe().c_str(), copy_ceiling_gbs(),
                cpu_model().c_str(), host_threads());

    std::deque<Table> tables;  // a deque: the plan's steps keep references to its tables
    std::vector<Step> plan;
    for (const auto& [id, planner] : kTables) {
        if (!options->wants(id)) continue;
        tables.push_back({id, {}});
        planner(plan, tables.back(), *options);
    }
    if (plan.empty()) {
        usage();
        return 2;
    }
    run_plan(plan, started);
    for (const Table& t : tables) write_csv(options->out_dir, t);
    const double seconds = seconds_since(started);
    write_meta(options->out_dir, probe, options->quick, options->limit, seconds, kImplementationNotes);
    std::printf("measured in %.0f s; results in %s/\n", seconds, options->out_dir.c_str());
    return some_result_wrong() ? 1 : 0;
}
