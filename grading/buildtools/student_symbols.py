#!/usr/bin/env python3
"""Reads what a student's compiled file was made from and what it holds, at build time, before its
checker is linked.

First, the files its compilation read (the compiler's dependency file, <object>.d): a file may
include the files of the tree being graded (its own lab folder and the others beside it), the
workbook's common/ headers, and the system's and the toolkit's. Any other file of the workbook or
of its build folders fails the build: the reference solutions above all (solutions/, the buggy
variants made from them, make bench's development versions), which would otherwise compile as
the student's own code. A symbolic link counts as the file it leads to.

Then four jobs, all on `nm`'s listing of the object:
  1. A lab is graded on the kernels the student writes. An object that references cuBLAS, cuDNN
     or CUTLASS (defined or undefined symbols) fails the build here, with a message that says why,
     so that no library can stand in for the student's kernel.
  2. Nor can the reference solution linked beside it: a file that uses any name that
     reference_object.py gave the reference's own symbols, such as reference::launch_matmul_tiled,
     fails here too.
  3. Nor can the CPU: host memory that kernels read and write in place (pinned, mapped or
     registered, HOST_MEMORY below) lets kernels copy the inputs out and the result back while
     the CPU computes, and no copy to the host is recorded for the judge to see. It is refused in
     every lab but lab 01 (--lab), whose host round trip may stage through pinned memory. And
     so, in every lab, is reaching a function by name at run time (BY_NAME below: dlopen, dlsym,
     cudaGetDriverEntryPoint, ...), which would get round this list and the first one.
  4. It writes the names the file defines, one per line, to OUT (`<checker>.kernels`). At run
     time the judge (common/judge.hpp) checks that every kernel CUPTI sees a graded call launch
     is among them: a kernel from a library (loaded by dlopen, say) is not.
     Kernels that Thrust or CUB instantiate inside the file are library code and left out.
"""
import argparse
import os
import re
import subprocess
import sys

FORBIDDEN = [("cuBLAS", re.compile(r"cublas", re.I)),
             ("cuDNN", re.compile(r"cudnn", re.I)),
             ("CUTLASS", re.compile(r"cutlass|N4cute", re.I))]
LIBRARY_TEMPLATES = re.compile(r"N6thrust|N3cub|N4cuda3std")

# Host memory that kernels read and write in place. Kernels of a lab file given such memory can
# copy the inputs into it and the result out of it while the CPU computes: no copy from the
# device to the host is recorded, so the judge's "computed on the host" check cannot see it.
# Refused in every lab but HOST_MEMORY_ALLOWED_IN. Each name is matched as nm shows it: the C
# symbol, a C++ overload of it (the runtime's inline cudaMallocHost(void**, size_t, unsigned) and
# its templates cudaMallocHost<T>, cudaHostAlloc<T>, cudaHostGetDevicePointer<T>, emitted
# where they are not inlined), and with a version or per-thread-stream suffix (_v2, _ptsz).
HOST_MEMORY = {
    # Page-locked host memory. With cudaHostAllocMapped, and on every 64-bit system with unified
    # addressing even without it, a kernel reads and writes it through the host pointer.
    "cudaHostAlloc": "host-mapped memory",
    "cudaMallocHost": "host-mapped memory",  # the same allocation; its C++ overloads call cudaHostAlloc
    # Page-locks and maps memory the file already has (malloc'd, a std::vector's): the same effect.
    "cudaHostRegister": "host-registered memory",
    # The device's address of such memory: there is no other use for it.
    "cudaHostGetDevicePointer": "host-mapped memory",
    # The driver API's same four (cuda.h names the current ones *_v2).
    "cuMemHostAlloc": "host-mapped memory",
    "cuMemAllocHost": "host-mapped memory",
    "cuMemHostRegister": "host-registered memory",
    "cuMemHostGetDevicePointer": "host-mapped memory",
}
# Not listed, on purpose: cudaHostGetFlags, cuMemHostGetFlags (they only ask about such memory,
# whose allocation is refused above); cudaFreeHost, cudaHostUnregister, cuMemFreeHost,
# cuMemHostUnregister (they only release it); cudaMallocManaged (managed memory is correct CUDA,
# and the CPU's reads of it migrate pages, which the judge counts as copies to the host).
HOST_MEMORY_ALLOWED_IN = {"01_vector_add"}  # vector_add_from_host may stage through pinned memory
# Where it is allowed, the runner sees every allocation and release of it (grading/runner/
# device_state.cu wraps each of these runtime calls), and a call of a device function fails if the
# student's code held any while it ran. The runner can wrap only the runtime's calls: the rest
# (the driver API's, and asking for the device's address of such memory) stay refused there too.
HOST_MEMORY_WATCHED = {"cudaHostAlloc", "cudaMallocHost", "cudaHostRegister"}

# Ways to reach a function by name at run time, which would get round HOST_MEMORY and FORBIDDEN
# alike (dlsym(lib, "cublasSgemm_v2"), cudaGetDriverEntryPoint("cuMemHostAlloc")). Refused in
# every lab: a lab file calls what it uses directly. What each does, for the message.
BY_NAME = {
    "dlopen": "loading code by name at run time",
    "dlmopen": "loading code by name at run time",
    "dlsym": "looking up functions by name at run time",
    "dlvsym": "looking up functions by name at run time",
    # The loader's list of loaded libraries, from which their symbol tables are a short walk.
    "dlinfo": "reading the loader's list of loaded libraries at run time",
    "dladdr1": "reading the loader's list of loaded libraries at run time",
    "dl_iterate_phdr": "reading the loader's list of loaded libraries at run time",
    "_dl_find_object": "reading the loader's list of loaded libraries at run time",
    # glibc before 2.34 exported dlopen and dlsym under these private names too.
    "__libc_dlopen_mode": "loading code by name at run time",
    "__libc_dlsym": "looking up functions by name at run time",
    "__libc_dlvsym": "looking up functions by name at run time",
    # The CUDA runtime's and driver's own lookups of driver functions by name.
    "cudaGetDriverEntryPoint": "fetching driver functions by name at run time",
    "cudaGetDriverEntryPointByVersion": "fetching driver functions by name at run time",
    "cuGetProcAddress": "fetching driver functions by name at run time",
    # Their undocumented tables of internal functions, by identifier.
    "cudaGetExportTable": "fetching CUDA's internal function tables at run time",
    "cuGetExportTable": "fetching CUDA's internal function tables at run time",
}
# Not listed, on purpose: syscall (libstdc++'s inline std::atomic::wait, std::counting_semaphore
# and std::latch call it, and it reaches the kernel, not a library); dladdr (address to name, for
# backtraces); dlerror, dlclose (nothing to do without dlopen). A file that finds a library's
# symbol table by parsing memory by hand is not seen here; CUPTI still sees any kernel it launches.

# The grader's own namespaces: the runner (workbook::runner, linked into the student's process, where
# its state of the running call lives) and the judge's side (workbook::remote). No common/ header
# declares them, so a lab file that references one of their names reached past the lab's API.
GRADER_NAMESPACES = re.compile(r"_ZNK?8workbook6(runner|remote)")


def function_name(symbol):
    """The name of the function a symbol is, as the file wrote it: an extern "C" name as it is, a
    C++ function of the global namespace (_Z14cudaMallocHostPPvmj, _ZL14cudaMallocHost...,
    templates too) by its name; a version or per-thread-stream suffix (_v2, _ptsz, _ptds) left off.
    None for anything else."""
    m = re.match(r"_ZL?(\d+)", symbol)
    if m:
        name = symbol[m.end():m.end() + int(m.group(1))]
    elif symbol.startswith("_Z"):
        return None
    else:
        name = symbol
    return re.sub(r"(_v\d+)?(_pt(sz|ds))?$", "", name)


def refused_calls(symbols, lab):
    """The errors a file using `symbols` (defined or undefined) gets in lab `lab`: (name, message)
    for each function of BY_NAME, and in labs other than HOST_MEMORY_ALLOWED_IN of HOST_MEMORY,
    that it uses, each once."""
    found = {}
    for symbol in sorted(symbols):
        name = function_name(symbol)
        if name in BY_NAME and name not in found:
            found[name] = ("this file calls %s: %s is not allowed in a lab file. Remove it, and call "
                           "what you use directly." % (name, BY_NAME[name]))
        elif (name in HOST_MEMORY and name not in found and
              (lab not in HOST_MEMORY_ALLOWED_IN or name not in HOST_MEMORY_WATCHED)):
            found[name] = ("this file calls %s: %s lets the CPU do the work the lab grades your kernel "
                           "on. Remove it; keep the arrays in device memory (cudaMalloc)." % (name, HOST_MEMORY[name]))
    return sorted(found.items())


def symbols(obj, *flags):
    r = subprocess.run(["nm", "--format=posix", *flags, obj], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("student_symbols.py: nm could not read %s:\n%s" % (obj, r.stderr))
    return [line.split()[0] for line in r.stdout.splitlines() if line.split()]


def read_depfile(path):
    """The files a Make-style dependency file lists (`target: dep dep ...`), or None if there
    is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    text = text.replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    words = re.split(r"(?<!\\)\s+", deps.strip())
    return [w.replace("\\ ", " ") for w in words if w]


def under(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def foreign_includes(source, objects, workbook, confined):
    """The files the objects' compilation read that lie in the workbook or one of its build
    folders (`confined`) but neither in the tree being graded (the folder above the source's lab
    folder) nor in the workbook's common/; and whether every object had a dependency file."""
    tree = os.path.dirname(os.path.dirname(os.path.abspath(source)))
    allowed = [os.path.realpath(os.path.join(workbook, "common"))]
    # The tree is its own unless it is a link from elsewhere into the workbook (a submission
    # folder that leads to solutions/, say): the workbook's own builds name its folders by its path.
    named_inside = any(under(tree, os.path.abspath(c)) for c in confined)
    real_confined = [os.path.realpath(c) for c in confined]
    if named_inside or not any(under(os.path.realpath(tree), c) for c in real_confined):
        allowed.append(os.path.realpath(tree))
    confined = real_confined
    found, complete = [], True
    for obj in objects:
        deps = read_depfile(obj + ".d")
        if deps is None:
            complete = False
            continue
        for dep in [source] + deps:
            real = os.path.realpath(dep)
            if any(under(real, c) for c in confined) and not any(under(real, a) for a in allowed):
                if real not in found:
                    found.append(real)
    return found, complete


def as_written(path, workbook):
    """A path as the student would write it: relative to the workbook when it lies in it."""
    workbook = os.path.realpath(workbook)
    return os.path.relpath(path, workbook) if under(path, workbook) else path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True, help="the student's file, for the message")
    p.add_argument("--lab", required=True, help="the lab part's id (01_vector_add): what the file may call")
    p.add_argument("--out", required=True)
    p.add_argument("--reference", nargs="*", default=[], help="the reference objects linked beside it")
    p.add_argument("--workbook", help="the workbook's source folder: its files are not the student's to include")
    p.add_argument("--confined", nargs="*", default=[],
                   help="the build folders, whose files are not the student's to include either")
    p.add_argument("objects", nargs="+")
    a = p.parse_args()
    if a.workbook:
        found, _ = foreign_includes(a.source, a.objects, a.workbook, [a.workbook] + a.confined)
        if found and found[0] == os.path.realpath(a.source):
            print("%s: error: this file is a link to %s, which is not part of the tree being graded: a lab "
                  "is graded on a file of its own. Replace the link with your file."
                  % (a.source, as_written(found[0], a.workbook)))
            return 1
        if found:
            print("%s: error: this file includes %s%s, which %s not part of the tree being graded. A lab's "
                  "file may include the files of its own tree, the workbook's common/ headers and the "
                  "system's; the workbook's other files, its reference solutions above all, are not yours "
                  "to include: write the kernel the lab asks for."
                  % (a.source, ", ".join(as_written(f, a.workbook) for f in found[:3]),
                     ", ..." if len(found) > 3 else "", "is" if len(found) == 1 else "are"))
            return 1
    defined, referenced = set(), set()
    for obj in a.objects:
        defined.update(symbols(obj, "--defined-only"))
        referenced.update(symbols(obj, "--undefined-only"))
    of_reference = set()  # the names reference_object.py gave the reference's own symbols
    for obj in a.reference:
        with open(obj + ".renames") as f:
            of_reference.update(line.split()[1] for line in f if line.strip())
    called = sorted(referenced & of_reference)
    if called:
        shown = subprocess.run(["c++filt", *called[:3]], stdout=subprocess.PIPE, text=True).stdout.split("\n")
        print("%s: error: this file calls the reference solution (%s%s). A lab is graded on the code "
              "you write yourself: remove the call and write the kernel the lab asks for."
              % (a.source, ", ".join(s for s in shown if s), ", ..." if len(called) > 3 else ""))
        return 1
    for library, pattern in FORBIDDEN:
        used = sorted(s for s in defined | referenced if pattern.search(s))
        if used:
            print("%s: error: this file uses %s (%s%s). A lab is graded on the kernels you write "
                  "yourself: remove every %s call and #include, and write the kernel the lab asks for."
                  % (a.source, library, ", ".join(used[:3]), ", ..." if len(used) > 3 else "", library))
            return 1
    grader = sorted(s for s in referenced if GRADER_NAMESPACES.match(s))
    if grader:
        shown = subprocess.run(["c++filt", *grader[:3]], stdout=subprocess.PIPE, text=True).stdout.split("\n")
        print("%s: error: this file uses the grader's own code (%s%s), which is not part of a lab's API. "
              "Remove it: a lab file uses the workbook's common/ headers and the CUDA runtime."
              % (a.source, ", ".join(s for s in shown if s), ", ..." if len(grader) > 3 else ""))
        return 1
    refused = refused_calls(defined | referenced, a.lab)
    for _, message in refused:
        print("%s: error: %s" % (a.source, message))
    if refused:
        return 1
    with open(a.out, "w") as f:
        for name in sorted(defined):
            if not LIBRARY_TEMPLATES.search(name):
                f.write(name + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
