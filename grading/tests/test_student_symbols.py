#!/usr/bin/env python3
"""What a student's file may call (grading/buildtools/student_symbols.py, HOST_MEMORY and BY_NAME):
tiny .cu files compiled with nvcc -c (no GPU needed) and read by the script as the build reads them.

    python3 grading/tests/test_student_symbols.py [--nvcc PATH]

Host memory that kernels reach in place (cudaHostAlloc, cudaMallocHost, cudaHostRegister, the
driver's cuMemHostAlloc, ...) is refused in every lab but 01_vector_add; reaching a function by
name at run time (dlopen, dlsym, cudaGetDriverEntryPoint, cuGetProcAddress, ...) in every lab.
Correct CUDA written any way (managed memory, streams, graphs, cooperative launches,
cudaLaunchKernelEx, C++20 waits that call syscall) builds in every lab.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "buildtools", "student_symbols.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import student_symbols  # noqa: E402

NVCC = None  # set in main

HOST_MEMORY = r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <vector>
__global__ void copy_kernel(const float* from, float* to, int n) { if (threadIdx.x < n) to[threadIdx.x] = from[threadIdx.x]; }
void run(const float* device, int n)
{
    float *typed = nullptr, *flagged = nullptr, *mapped = nullptr, *on_device = nullptr;
    void* raw = nullptr;
    cudaMallocHost(&typed, n * sizeof(float));              // C++ template overload
    cudaMallocHost(&raw, n * sizeof(float));                 // the C function
    cudaMallocHost(&raw, n * sizeof(float), 0);              // C++ overload with flags
    cudaHostAlloc(&mapped, n * sizeof(float), cudaHostAllocMapped);
    std::vector<float> host(n);
    cudaHostRegister(host.data(), n * sizeof(float), cudaHostRegisterMapped);
    cudaHostGetDevicePointer(&on_device, mapped, 0);
    CUdeviceptr address;
    cuMemHostAlloc(&raw, n * sizeof(float), CU_MEMHOSTALLOC_DEVICEMAP);
    cuMemAllocHost(&raw, n * sizeof(float));                 // cuMemAllocHost_v2
    cuMemHostRegister(host.data(), n * sizeof(float), 0);   // cuMemHostRegister_v2
    cuMemHostGetDevicePointer(&address, raw, 0);             // cuMemHostGetDevicePointer_v2
    copy_kernel<<<1, 32>>>(device, on_device, n);
    (void)typed; (void)flagged;
}
"""
HOST_MEMORY_CALLS = ["cudaMallocHost", "cudaHostAlloc", "cudaHostRegister", "cudaHostGetDevicePointer",
                     "cuMemHostAlloc", "cuMemAllocHost", "cuMemHostRegister", "cuMemHostGetDevicePointer"]

# Pinned staging only through the C++ template overloads, which nvcc inlines at -O3.
PINNED_TEMPLATE_ONLY = r"""
#include <cuda_runtime.h>
void stage(int n) { float* staging = nullptr; cudaMallocHost(&staging, n * sizeof(float)); cudaFreeHost(staging); }
"""

BY_NAME = r"""
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <link.h>
static int each(struct dl_phdr_info*, size_t, void*) { return 0; }
void* reach(const char* name)
{
    void* library = dlopen("libcuda.so.1", RTLD_NOW);
    void* other = dlmopen(LM_ID_NEWLM, "libcuda.so.1", RTLD_NOW);
    void* function = dlsym(library, name);
    function = dlvsym(other, name, "GLIBC_2.2.5");
    struct link_map* map = nullptr;
    dlinfo(library, RTLD_DI_LINKMAP, &map);
    dl_iterate_phdr(each, nullptr);
    cudaDriverEntryPointQueryResult found;
    cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found);
    CUdriverProcAddressQueryResult status;
    cuGetProcAddress(name, &function, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    return function;
}
"""
BY_NAME_CALLS = ["dlopen", "dlmopen", "dlsym", "dlvsym", "dlinfo", "dl_iterate_phdr",
                 "cudaGetDriverEntryPointByVersion", "cuGetProcAddress"]

# cudaGetDriverEntryPoint is deprecated in CUDA 13: on its own, so that its warning is all.
ENTRY_POINT = r"""
#include <cuda_runtime.h>
void* reach(const char* name)
{
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found;
    cudaGetDriverEntryPoint(name, &function, cudaEnableDefault, &found);
    return function;
}
"""

CORRECT = r"""
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <atomic>
#include <semaphore>
namespace cg = cooperative_groups;
__global__ void add_kernel(const float* a, const float* b, float* c, int n)
{
    cg::this_grid().sync();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
std::counting_semaphore<4> slots(4);  // its wait calls syscall(SYS_futex) inline
std::atomic<int> ready{0};
void run(const float* a, const float* b, float* c, int n)
{
    slots.acquire();
    ready.wait(1);
    float* managed = nullptr;
    cudaMallocManaged(&managed, n * sizeof(float));
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    void* arguments[] = {&a, &b, &c, &n};
    cudaLaunchCooperativeKernel((void*)add_kernel, dim3(1), dim3(256), arguments, 0, stream);
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(1);
    config.blockDim = dim3(256);
    config.stream = stream;
    cudaLaunchKernelEx(&config, add_kernel, a, b, managed, n);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    add_kernel<<<1, 256, 0, stream>>>(a, b, c, n);
    cudaStreamEndCapture(stream, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphLaunch(exec, stream);
    cudaStreamSynchronize(stream);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    cudaFree(managed);
    slots.release();
}
"""

# Declares names of the grader's own code, linked into the runner beside the lab file, as a file
# that read the grader's sources could: the runner's state of the running call, its device reset.
GRADER_INTERNALS = r"""
namespace workbook::runner { extern int g_call; void reset_device_state(); }
namespace workbook::remote { double round_trip_ms(); }
void run(float* c)
{
    workbook::runner::g_call = 0;
    workbook::runner::reset_device_state();
    c[0] = static_cast<float>(workbook::remote::round_trip_ms());
}
"""


class Compiled:
    """Compiles each source once per set of flags, into one temporary folder."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="test_student_symbols.")
        self.objects = {}

    def object(self, source, *flags):
        key = (source, flags)
        if key not in self.objects:
            name = os.path.join(self.folder, "%d" % len(self.objects))
            with open(name + ".cu", "w") as f:
                f.write(source)
            r = subprocess.run([NVCC, "-c", "-std=c++20", *flags, name + ".cu", "-o", name + ".o"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                raise AssertionError("nvcc failed on a test file:\n%s" % r.stdout)
            self.objects[key] = name + ".o"
        return self.objects[key]


COMPILED = None


class CallsByLab(unittest.TestCase):
    def check(self, source, lab, *flags):
        """student_symbols.py on `source` compiled with `flags` as lab `lab`: exit status and output."""
        obj = COMPILED.object(source, *flags)
        out = obj + "." + lab + ".kernels"
        if os.path.exists(out):
            os.remove(out)
        r = subprocess.run([sys.executable, SCRIPT, "--source", "lab.cu", "--lab", lab, "--out", out, "--", obj],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(r.returncode != 0, not os.path.exists(out), r.stdout)
        return r.returncode, r.stdout

    def assert_refused(self, source, lab, calls, why, *flags):
        status, output = self.check(source, lab, *flags)
        self.assertNotEqual(status, 0, "lab %s built a file that calls %s" % (lab, ", ".join(calls)))
        for call in calls:
            self.assertIn("lab.cu: error: this file calls %s: %s" % (call, why[call] if isinstance(why, dict) else why),
                          output)
        return output

    def assert_built(self, source, lab, *flags):
        status, output = self.check(source, lab, *flags)
        self.assertEqual(status, 0, "lab %s refused a file it must build:\n%s" % (lab, output))
        self.assertEqual(output, "")

    def test_host_memory_is_refused_outside_lab_01(self):
        for lab in ("02_naive_transpose", "04_naive_matmul", "05_tiled_matmul", "05_wgmma", "07_coarsened"):
            for flags in (("-O0",), ("-O3",)):
                with self.subTest(lab=lab, flags=flags):
                    output = self.assert_refused(HOST_MEMORY, lab, HOST_MEMORY_CALLS, "host-", *flags)
                    self.assertIn("host-mapped memory lets the CPU do the work the lab grades your kernel on. "
                                  "Remove it; keep the arrays in device memory (cudaMalloc).", output)
                    self.assertIn("calls cudaHostRegister: host-registered memory", output)

    def test_lab_01_may_use_pinned_memory(self):
        # Only through the runtime calls the runner watches (HOST_MEMORY_WATCHED): the driver API's
        # and the device's address of such memory stay refused in lab 01 too.
        unwatched = [name for name in HOST_MEMORY_CALLS if name not in student_symbols.HOST_MEMORY_WATCHED]
        for flags in (("-O0",), ("-O3",)):
            with self.subTest(flags=flags):
                self.assert_refused(HOST_MEMORY, "01_vector_add", unwatched, "host-", *flags)
                self.assert_built(PINNED_TEMPLATE_ONLY, "01_vector_add", *flags)
                self.assert_refused(PINNED_TEMPLATE_ONLY, "03_shared_transpose", ["cudaHostAlloc"],
                                    "host-mapped memory", *flags)

    def test_reaching_functions_by_name_is_refused_in_every_lab(self):
        for lab in ("01_vector_add", "04_naive_matmul", "05_tiled_matmul"):
            # The per-thread default stream names some of them *_ptsz.
            for flags in ((), ("--default-stream", "per-thread")):
                with self.subTest(lab=lab, flags=flags):
                    self.assert_refused(BY_NAME, lab, BY_NAME_CALLS, student_symbols.BY_NAME, *flags)
                    self.assert_refused(ENTRY_POINT, lab, ["cudaGetDriverEntryPoint"],
                                        "fetching driver functions by name at run time is not allowed "
                                        "in a lab file. Remove it", *flags)

    def test_the_graders_own_names_are_refused_in_every_lab(self):
        for lab in ("01_vector_add", "05_tiled_matmul"):
            with self.subTest(lab=lab):
                status, output = self.check(GRADER_INTERNALS, lab, "-O0")
                self.assertNotEqual(status, 0, "lab %s built a file that uses the runner's own names" % lab)
                self.assertIn("lab.cu: error: this file uses the grader's own code (", output)
                self.assertIn("workbook::runner::g_call", output)

    def test_correct_cuda_builds_in_every_lab(self):
        for lab in ("01_vector_add", "02_naive_transpose", "04_naive_matmul", "05_tiled_matmul"):
            for flags in (("-O0",), ("-O3",), ("--default-stream", "per-thread")):
                with self.subTest(lab=lab, flags=flags):
                    self.assert_built(CORRECT, lab, *flags)
        # The file does call what syscall and cudaMallocManaged are, so its passing means something.
        obj = COMPILED.object(CORRECT, "-O3")
        names = {student_symbols.function_name(s) for s in student_symbols.symbols(obj, "--undefined-only")}
        for call in ("syscall", "cudaMallocManaged", "cudaLaunchCooperativeKernel", "cudaLaunchKernelExC",
                     "cudaGraphLaunch", "cudaStreamCreateWithFlags"):
            self.assertIn(call, names)


class FunctionNames(unittest.TestCase):
    def test_names_as_nm_shows_them(self):
        for symbol, name in [("cudaHostAlloc", "cudaHostAlloc"),
                             ("_Z13cudaHostAllocIfE9cudaErrorPPT_mj", "cudaHostAlloc"),   # template, -O0
                             ("_Z14cudaMallocHostIfE9cudaErrorPPT_mj", "cudaMallocHost"),
                             ("_ZL14cudaMallocHostPPvmj", "cudaMallocHost"),              # static inline overload
                             ("cuMemAllocHost_v2", "cuMemAllocHost"),
                             ("cudaGetDriverEntryPoint_ptsz", "cudaGetDriverEntryPoint"),
                             ("cuGetProcAddress_v2_ptsz", "cuGetProcAddress"),
                             ("_Z11copy_kernelPKfPfi", "copy_kernel"),
                             ("_ZN4dim3C1Ejjj", None),
                             ("_ZN5local6dlopenEv", None)]:                              # not the loader's
            self.assertEqual(student_symbols.function_name(symbol), name, symbol)

    def test_mangled_overloads_are_refused_on_their_own(self):
        refused = dict(student_symbols.refused_calls({"_Z14cudaMallocHostIfE9cudaErrorPPT_mj"}, "04_naive_matmul"))
        self.assertIn("cudaMallocHost", refused)
        self.assertEqual(student_symbols.refused_calls({"_Z14cudaMallocHostIfE9cudaErrorPPT_mj"}, "01_vector_add"), [])
        self.assertEqual(student_symbols.refused_calls({"_Z14my_dlopen_thingv", "dladdr", "syscall"}, "04_naive_matmul"), [])


def main():
    global NVCC, COMPILED
    args = sys.argv[1:]
    if "--nvcc" in args:
        i = args.index("--nvcc")
        NVCC = args[i + 1]
        del args[i:i + 2]
    NVCC = NVCC or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    COMPILED = Compiled()
    try:
        unittest.main(argv=[sys.argv[0]] + args)
    finally:
        shutil.rmtree(COMPILED.folder, ignore_errors=True)


if __name__ == "__main__":
    main()
