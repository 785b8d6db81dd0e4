// The judge's side of the two processes (remote.hpp): starting the runner in its sandbox,
// sending calls, reading what came back, and noticing when the runner dies.
#include "remote.hpp"

#include "sandbox.hpp"

#include "common/buffers.hpp"
#include "common/check.hpp"
#include "common/judge.hpp"
#include "common/launch_record.hpp"
#include "common/stats.hpp"
#include "common/timing.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <fcntl.h>
#include <malloc.h>
#include <pwd.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

extern char** environ;

namespace workbook::remote {

namespace {

bool g_profile_next = false;
CallTime g_timed;                    // calls since the clock was last read, and their times
Runner* g_target = nullptr;          // as_reference's runner, or null for the student's
// set_reference_program's path; a function's static, as forwarders set it from static initializers
std::string& reference_program()
{
    static std::string program;
    return program;
}

std::map<const void*, const char*>& forwarders()
{
    static std::map<const void*, const char*> table;
    return table;
}

// The words of WORKBOOK_RUNNER_TOOL (one per line): a tool the student's runner runs under, in
// its sandbox, for a checker started by run_self_under (tools.hpp).
std::vector<std::string> runner_tool()
{
    std::vector<std::string> words;
    const char* tool = std::getenv("WORKBOOK_RUNNER_TOOL");
    if (tool == nullptr) return words;
    std::istringstream lines(tool);
    std::string word;
    while (std::getline(lines, word))
        if (!word.empty()) words.push_back(word);
    return words;
}

// Whether the user nobody can reach and run `path`: every folder above it searchable by others.
bool others_can_run(const std::string& path)
{
    struct stat info;
    if (stat(path.c_str(), &info) != 0 || (info.st_mode & S_IXOTH) == 0) return false;
    for (std::string dir = path; dir.size() > 1;) {
        dir.resize(dir.find_last_of('/') == 0 ? 1 : dir.find_last_of('/'));
        if (stat(dir.c_str(), &info) != 0 || (info.st_mode & S_IXOTH) == 0) return false;
    }
    return true;
}

// A copy of the runner that the user nobody may run, when the build folder is private.
std::string runnable_copy(const std::string& program)
{
    if (others_can_run(program)) return program;
    static std::map<std::string, std::string> copies;
    std::string& copy = copies[program];
    if (!copy.empty()) return copy;
    char dir[] = "/tmp/workbook-runner-XXXXXX";
    if (mkdtemp(dir) == nullptr) return program;
    chmod(dir, 0755);
    copy = std::string(dir) + "/" + program.substr(program.find_last_of('/') + 1);
    std::ifstream in(program, std::ios::binary);
    std::ofstream out(copy, std::ios::binary);
    out << in.rdbuf();
    out.close();
    chmod(copy.c_str(), 0755);
    return copy;
}

// A folder for this checker's runners as the user nobody, removed when the checker exits.
const std::string& runner_home()
{
    struct Home {
        std::string path = "/nonexistent";  // where no folder could be made: nothing to write
        std::string made;
        Home()
        {
            char dir[] = "/tmp/workbook-home-XXXXXX";
            const passwd* nobody = getpwnam("nobody");
            if (nobody == nullptr || mkdtemp(dir) == nullptr) return;
            made = dir;
            if (chown(dir, nobody->pw_uid, nobody->pw_gid) == 0) path = made;
        }
        ~Home()
        {
            std::error_code ignored;
            if (!made.empty()) std::filesystem::remove_all(made, ignored);
        }
    };
    static const Home home;
    return home.path;
}

// Waits up to `ms` milliseconds for `pid` to end: its pid then, or 0.
pid_t wait_a_while(pid_t pid, int& status, int ms)
{
    pid_t done = 0;
    for (int waited = 0; (done = waitpid(pid, &status, WNOHANG)) == 0 && waited < ms; waited += 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done;
}

std::string describe_status(int status)
{
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const int signal = WTERMSIG(status);
        const char* abbreviation = sigabbrev_np(signal);
        return "crashed: it was killed by signal " + std::to_string(signal) + " (" +
               (abbreviation ? "SIG" + std::string(abbreviation) + ", " : std::string()) + strsignal(signal) + ")";
    }
    return "stopped";
}

}  // namespace

Runner::Runner(std::string program, std::string who, std::vector<std::string> tool)
    : program_(std::move(program)), who_(std::move(who)), tool_(std::move(tool))
{
}

Runner::~Runner() { stop(); }

void Runner::start_early()
{
    if (pid_ < 0) launch();
}

void Runner::when_ready(std::function<void()> then)
{
    when_ready_ = std::move(then);
}

void Runner::end()
{
    if (pid_ < 0) return;
    if (!tool_.empty()) {
        finish();
        return;
    }
    // Asked to exit, the runner lets go of the output first and then closes its socket: it is
    // stopped once it has, so the grader waits neither for its exit nor for its GPU context.
    if (record_pending_) read_record();
    if (wire::send(socket_, wire::Message(wire::Op::exit))) {
        wire::Reader ignored;
        pollfd closed{socket_, POLLIN, 0};
        if (poll(&closed, 1, 2000) > 0) wire::receive(socket_, ignored);
    }
    stop();
}

void Runner::start()
{
    if (pid_ < 0) launch();
    if (greeted_) return;
    greeted_ = true;
    wire::Reader hello;
    if (!wire::receive(socket_, hello)) lost("its start (before the first test could call it)");
    if (hello.get<wire::Op>() != wire::Op::hello) lost("its start");
    for (auto count = hello.get<std::uint32_t>(); count > 0; --count) defined_.insert(hello.get_string());
    if (when_ready_) std::exchange(when_ready_, nullptr)();
}

void Runner::launch()
{
    const Sandbox& sandbox = runner_sandbox();
    static bool told = false;
    if (!told) {
        told = true;
        std::printf("runner sandbox: %s\n", sandbox.description.c_str());
        for (const std::string& missing : sandbox.missing) std::printf("runner sandbox: not here: %s\n", missing.c_str());
        std::fflush(stdout);
    }
    std::vector<std::string> argv = sandbox.spaces;
    // Every runner runs as the sandbox's user, under a tool too (Nsight Compute included: the
    // student's static initializers run inside whatever it starts).
    argv.insert(argv.end(), sandbox.user.begin(), sandbox.user.end());
    argv.insert(argv.end(), tool_.begin(), tool_.end());
    argv.push_back(sandbox.as_nobody ? runnable_copy(program_) : program_);

    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::runtime_error(std::string("cannot make a socket for the runner: ") + std::strerror(errno));
    // Nothing of the judge's settings (the seed, the ceilings) reaches the runner.
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "WORKBOOK_", 9) != 0 && !(sandbox.as_nobody && std::strncmp(*e, "HOME=", 5) == 0))
            environment.push_back(*e);
    // The user nobody gets a home of its own, where a tool (ncu) keeps its settings.
    if (sandbox.as_nobody) environment.push_back("HOME=" + runner_home());
    constexpr int kRunnerFd = 3;
    environment.push_back("WORKBOOK_RUNNER_FD=" + std::to_string(kRunnerFd));

    std::vector<char*> args, envp;
    for (std::string& word : argv) args.push_back(word.data());
    args.push_back(nullptr);
    for (std::string& setting : environment) envp.push_back(setting.data());
    envp.push_back(nullptr);

    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("cannot start the runner: ") + std::strerror(errno));
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec.
        if (sandbox.reaper) setsid();  // its own session, which kill_descendants ends
        // Killed with the checker (by a grader's timeout, say), and so is the namespace below it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        // The runner gets its socket and the standard streams, no other descriptor of the
        // judge's (the results pipe above all).
        if (pair[1] != kRunnerFd) dup2(pair[1], kRunnerFd);
        fcntl(kRunnerFd, F_SETFD, 0);
        close_range(kRunnerFd + 1, ~0U, 0);
        if (chdir("/") != 0) _exit(126);
        execve(args[0], args.data(), envp.data());
        _exit(127);
    }
    ::close(pair[1]);
    pid_ = pid;
    socket_ = pair[0];
    record_pending_ = false;
    greeted_ = false;
    defined_.clear();
}

void Runner::lost(const std::string& during)
{
    int status = 0;
    // The runner may close its end without exiting: wait a little, then end it.
    const pid_t done = wait_a_while(pid_, status, 2000);
    std::string what;
    if (done == pid_) {
        what = describe_status(status);
        pid_ = -1;
    } else {
        what = "stopped answering (it closed its connection to the checker)";
    }
    stop();
    throw std::runtime_error("the process that runs " + who_ + " " + what + " during " + during +
                             ". The next call starts it afresh.");
}

bool Runner::defines(const std::string& name)
{
    start();
    return defined_.count(name) > 0;
}

wire::Reader Runner::call(const wire::Message& request, const std::string& name)
{
    start();
    if (record_pending_) read_record();
    // The judge's own work (poison, inputs, guards) is finished before the call starts: a call
    // that runs on a stream of its own sees it done.
    CUDA_CHECK(cudaDeviceSynchronize());
    //! [judge clock]
    // The judge's clock: from the request to the moment the GPU runs the judge's own kernel
    // again, after the runner said "done". A runner that answered early gains nothing: the
    // judge's kernel waits until the runner's work is off the GPU.
    const auto start = std::chrono::steady_clock::now();
    if (!wire::send(socket_, request)) lost(name);
    wire::Reader done;
    if (!wire::receive(socket_, done) || done.get<wire::Op>() != wire::Op::done) lost(name);
    wait_for_judge_turn();
    last_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    //! [judge clock]
    record_pending_ = true;
    const auto status = done.get<wire::Status>();
    const auto code = static_cast<cudaError_t>(done.get<std::int32_t>());
    const bool sticky = done.get<unsigned char>() != 0;
    const std::string text = done.get_string();
    if (status == wire::Status::ok) {
        reported_ms_ = done.get<float>();
        return done;
    }
    read_record();
    if (sticky) {
        stop();
        throw CudaError(code, text + "\nThis error is sticky: it destroyed the GPU context of the process that "
                                     "runs your code, which is started afresh for the next call.");
    }
    if (status == wire::Status::cuda_error) throw CudaError(code, text);
    throw std::runtime_error(text);
}

LaunchRecord Runner::take_record()
{
    if (record_pending_) read_record();
    LaunchRecord record = std::move(recorded_);
    recorded_ = LaunchRecord{};
    return record;
}

void Runner::read_record()
{
    record_pending_ = false;
    LaunchRecord& record = recorded_;
    wire::Reader message;
    if (!wire::receive(socket_, message) || message.get<wire::Op>() != wire::Op::record)
        lost("the report of what the last call launched");
    for (auto count = message.get<std::uint32_t>(); count > 0; --count) record.kernels.push_back(message.get_string());
    record.device_to_host_bytes += static_cast<std::size_t>(message.get<std::uint64_t>());
    for (auto count = message.get<std::uint32_t>(); count > 0; --count)
        record.still_running.push_back(message.get_string());
    const std::string unavailable = message.get_string();
    if (!unavailable.empty()) record.unavailable = unavailable;
}

int Runner::finish()
{
    if (pid_ < 0) return -1;
    if (record_pending_) read_record();
    wire::send(socket_, wire::Message(wire::Op::exit));
    // A tool wrapped around the runner writes its report as it exits: give it time, not forever
    // (compute-sanitizer also waits for every process the runner left, which this stop ends).
    int status = 0;
    if (wait_a_while(pid_, status, 10000) != pid_) {
        stop();
        return 128 + SIGKILL;
    }
    pid_ = -1;
    stop();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void Runner::stop()
{
    if (socket_ >= 0) ::close(socket_);
    socket_ = -1;
    if (pid_ > 0) {
        // The namespace's first process (the runner, or a tool wrapped around it) ends every
        // process of the namespace as it dies, without relying on its death signal.
        if (!runner_sandbox().spaces.empty()) kill_children(pid_);
        kill(pid_, SIGKILL);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    pid_ = -1;
    greeted_ = false;
    record_pending_ = false;
    recorded_ = LaunchRecord{};
    if (runner_sandbox().reaper) kill_descendants();
}

Runner& student_runner()
{
    static Runner runner(this_program() + "_runner", "your code", runner_tool());
    return runner;
}

bool set_reference_program(const char* program)
{
    reference_program() = program;
    return true;
}

Runner& reference_runner()
{
    static Runner runner(reference_program(), "the reference solution");
    return runner;
}

void start_runners_early(bool reference)
{
    student_runner().start_early();
    // Started once the student's runner is up: CUDA starts one process at a time, and the
    // first test needs the student's runner, the first timed one the reference's.
    if (reference && !reference_program().empty()) student_runner().when_ready([] { reference_runner().start_early(); });
}

void end_runners()
{
    student_runner().end();
    if (!reference_program().empty()) reference_runner().end();
}

Runner& target_runner() { return g_target ? *g_target : student_runner(); }

void as_reference(const std::function<void()>& calls)
{
    if (reference_program().empty()) throw std::runtime_error("checker bug: no reference runner was built");
    struct Route {
        Route() { g_target = &reference_runner(); }
        ~Route() { g_target = nullptr; }
    } route;
    calls();
}

wire::Message call_request(const char* name)
{
    wire::Message request(wire::Op::call);
    request.put_string(name);
    request.put(static_cast<unsigned char>(g_profile_next));
    g_profile_next = false;
    return request;
}

void profile_next_call() { g_profile_next = true; }

void charge(double judged, double reported)
{
    ++g_timed.calls;
    g_timed.judged += judged;
    g_timed.reported += reported;
}

double round_trip_ms()
{
    static const double measured = [] {
        // Pinged on the reference solution's runner: the same dispatcher, and no student code
        // that could slow the pings down to have its own calls credited with less.
        if (reference_program().empty()) throw std::runtime_error("checker bug: no reference runner was built");
        Runner& trusted = reference_runner();
        DeviceBuffer<unsigned char> touch(1 << 20);
        std::vector<double> ms;
        constexpr int kWarmup = 5, kTimed = 41;
        for (int i = 0; i < kWarmup + kTimed; ++i) {
            // As before a timed call: the judge's own GPU work (an L2 flush, say) just done.
            CUDA_CHECK(cudaMemsetAsync(touch.data(), i, touch.bytes()));
            trusted.call(wire::Message(wire::Op::ping), "a ping");
            if (i >= kWarmup) ms.push_back(trusted.last_call_ms());
            trusted.take_record();
        }
        const Summary trip = summarize(ms);
        std::printf("round trip to a runner: %.4f ms (median of %zu, spread %.1f%%): taken off each timed call of "
                    "your code\n", trip.median, trip.count, 100.0 * trip.spread());
        std::fflush(stdout);
        return trip.median;
    }();
    return measured;
}

void record_from_runner()
{
    set_recorder({[] { student_runner().take_record(); },
                  [] { return student_runner().take_record(); }});
    // A timed run of the student's code is the judge's clock over its calls, less an empty
    // round trip for each (timing.hpp).
    set_call_clock([] {
        CallTime timed = g_timed;
        g_timed = CallTime{};
        if (timed.calls > 0) timed.judged = std::max(timed.judged - timed.calls * round_trip_ms(), 0.0);
        return timed;
    });
    // The reference is timed in its own runner, the same way as the student's code.
    set_reference_route(as_reference);
}

bool register_forwarder(const void* address, const char* name)
{
    forwarders()[address] = name;
    return true;
}

const char* forwarder_name(const void* address)
{
    const auto found = forwarders().find(address);
    return found == forwarders().end() ? nullptr : found->second;
}

HostCopies::~HostCopies()
{
    for (const SharedCopy& copy : copies_) {
        munmap(copy.shared, copy.bytes);
        ::close(copy.fd);
    }
}

void HostCopies::add(wire::Message& request, const void* data, bool writable)
{
    // A host array is the start of a heap block (a std::vector's storage): its usable size
    // covers the array.
    const std::size_t bytes = malloc_usable_size(const_cast<void*>(data));
    const int fd = memfd_create("workbook-host-array", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0)
        throw std::runtime_error(std::string("cannot share a host array with the runner: ") + std::strerror(errno));
    void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shared == MAP_FAILED) {
        ::close(fd);
        throw std::runtime_error(std::string("cannot map a host array for the runner: ") + std::strerror(errno));
    }
    std::memcpy(shared, data, bytes);
    copies_.push_back({const_cast<void*>(data), shared, bytes, fd, writable});
    request.put(wire::Kind::host);
    request.put(request.attach(fd));
    request.put(static_cast<std::uint64_t>(bytes));
}

void HostCopies::copy_back()
{
    for (const SharedCopy& copy : copies_)
        if (copy.writable) std::memcpy(copy.original, copy.shared, copy.bytes);
}

void put_pointer(wire::Message& request, HostCopies& copies, const void* pointer, bool writable)
{
    if (pointer == nullptr) {
        request.put(wire::Kind::null);
        return;
    }
    cudaPointerAttributes attributes{};
    CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
    if (attributes.type == cudaMemoryTypeUnregistered) {
        copies.add(request, pointer, writable);
        return;
    }
    if (attributes.type != cudaMemoryTypeDevice)
        throw std::runtime_error("checker bug: only device memory from cudaMalloc and host heap arrays can be "
                                 "passed to the student's functions");
    // The driver API's cuMemGetAddressRange and cuPointerGetAttribute, found through the runtime:
    // linking libcuda would stop the checker from starting at all on a machine without a driver.
    using AddressRange = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);
    using PointerAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
    static const auto driver = [](const char* name) {
        void* function = nullptr;
        cudaDriverEntryPointQueryResult found{};
        CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found));
        if (function == nullptr) throw std::runtime_error(std::string("the CUDA driver lacks ") + name);
        return function;
    };
    static const auto address_range = reinterpret_cast<AddressRange>(driver("cuMemGetAddressRange"));
    static const auto attribute = reinterpret_cast<PointerAttribute>(driver("cuPointerGetAttribute"));
    CUdeviceptr base = 0;
    std::size_t size = 0;
    unsigned long long id = 0;  // unique to the allocation for the life of this process
    const auto device_pointer = reinterpret_cast<CUdeviceptr>(pointer);
    if (address_range(&base, &size, device_pointer) != CUDA_SUCCESS ||
        attribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, device_pointer) != CUDA_SUCCESS)
        throw std::runtime_error("checker bug: cannot find the allocation of a device array");
    static std::map<unsigned long long, cudaIpcMemHandle_t> handles;
    if (!handles.count(id)) {
        cudaIpcMemHandle_t handle;
        CUDA_CHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)));
        handles[id] = handle;
    }
    request.put(wire::Kind::device);
    request.put(static_cast<std::uint64_t>(id));
    request.put_bytes(&handles[id], sizeof(cudaIpcMemHandle_t));
    request.put(static_cast<std::uint64_t>(reinterpret_cast<CUdeviceptr>(pointer) - base));
}

}  // namespace workbook::remote
