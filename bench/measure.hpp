// The measuring side of workbook_bench (bench/workbook_bench.cpp holds its tables and main): the
// kinds of work a table's plan is made of (matmul, transpose, convolution, vector add, cuBLAS),
// each a list of steps that check a result against its float64 reference, then time it on the GPU
// or on the CPU, and the writers of the results (one CSV per table, and meta.json).
//
// A table's plan is a list of steps, run in order by main; each step adds its rows to its table.
// A result that does not match its reference is never timed: its row says so, and the run exits 1
// (some_result_wrong).
#pragma once

#include "common/device.hpp"
#include "common/gemm_reference.hpp"

#include <functional>
#include <string>
#include <vector>

namespace workbook::bench {

// ------------------------------------------------------------------------------------------------
// Results: one CSV per table.

struct Row {
    std::string size, implementation, where;
    int threads = 0;
    std::string copies;  // "kernel", "with copies", or "" on the CPU
    bool measured = false;
    double ms = 0;
    std::string note;
};

struct Table {
    std::string id;
    std::vector<Row> rows;
};

void write_csv(const std::string& dir, const Table& table);

// ------------------------------------------------------------------------------------------------
// The plan: every measurement is a step, so that progress can say "step 12 of 58".

struct Step {
    std::string what;
    std::function<std::string()> run;  // returns a short result for the progress line
};

bool some_result_wrong();  // some result did not match its reference

// ------------------------------------------------------------------------------------------------
// The kinds of work, each with its data, its float64 reference, its host loop (as the sources
// wrote it: the plainest loop, one output at a time) and its GPU implementations. Each plan_*
// appends its steps to `plan`; they add their rows to `table`, which must outlive them. `limit`:
// the seconds a host loop may take.

struct MatmulImpl {
    std::string name;
    int threads_per_block;
    std::function<void(const float*, const float*, float*, int, int, int)> launch;
    GemmInputs inputs = GemmInputs::fp32;  ///< what it multiplies, which sets its tolerance
    Architecture needs{};                  ///< the GPUs it runs on (all by default); elsewhere "not measured"
};

/// C = A·B, A m x k, B k x n: host loop on 1 thread and on all (unless !host_loop), then each
/// implementation.
void plan_matmul(std::vector<Step>& plan, Table& table, int m, int k, int n, const std::string& size,
                 const std::vector<MatmulImpl>& impls, double limit, bool host_loop = true);

struct TransposeImpl {
    std::string name;
    int threads_per_block;
    std::function<void(const float*, float*, int, int)> launch;
};

void plan_transpose(std::vector<Step>& plan, Table& table, int rows, int cols, const std::vector<TransposeImpl>& impls,
                    double limit);

struct ConvolutionImpl {
    std::string name;
    int threads_per_block;
    std::function<void(const float*, int)> set_mask;
    std::function<void(const float*, float*, int, int, int)> launch;
};

void plan_convolution(std::vector<Step>& plan, Table& table, int height, int width, int k,
                      const std::vector<ConvolutionImpl>& impls, double limit, bool size_names_k = false);

struct VectorAddImpl {
    std::string name;
    int threads_per_block;
    std::function<void(const float*, const float*, float*, int)> launch;
};

/// c = a + b on n floats: each implementation (no host loop: no source tables vector add).
void plan_vector_add(std::vector<Step>& plan, Table& table, int n, const std::vector<VectorAddImpl>& impls);

/// cuBLAS on n x n x n, as a row of the table: the ceiling at that size, in FP32 (SGEMM, TF32
/// off) or, with tf32, on the tensor cores in TF32 (none before sm_80).
void plan_cublas(std::vector<Step>& plan, Table& table, int n, bool tf32);

// ------------------------------------------------------------------------------------------------
// The machine, for meta.json.

std::string cpu_model();

// DIR/meta.json: the GPU, the CPU, how the times were taken, and `implementations` (a JSON
// object's members: what each implementation does, for the report's notes).
void write_meta(const std::string& dir, const DeviceProbe& probe, bool quick, double limit, double seconds,
                const std::string& implementations);

}  // namespace workbook::bench
