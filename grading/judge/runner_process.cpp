// One runner process, the judge's side of it (Runner in calls.hpp): starting it (the process
// itself, in its sandbox: runner_launch.cpp), the exchange of a call, its answer and its launch
// record over the socket, and noticing when it dies. calls.cpp decides which runner a call goes
// to, arguments.cpp what it carries.
#include "calls.hpp"
#include "clock.hpp"

#include "sandbox.hpp"

#include "common/check.hpp"
#include "common/launch_record.hpp"

#include <cuda_runtime.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

namespace workbook::remote {

namespace {

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
    // bubblewrap, between the judge and the runner, exits with 128 + N when the runner was
    // killed by signal N.
    const bool through_bwrap = runner_sandbox().minimal_view && WIFEXITED(status) && WEXITSTATUS(status) > 128 &&
                               WEXITSTATUS(status) < 128 + 65;
    if (WIFEXITED(status) && !through_bwrap) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status) || through_bwrap) {
        const int signal = through_bwrap ? WEXITSTATUS(status) - 128 : WTERMSIG(status);
        const char* abbreviation = sigabbrev_np(signal);
        return "crashed: it was killed by signal " + std::to_string(signal) + " (" +
               (abbreviation ? "SIG" + std::string(abbreviation) + ", " : std::string()) + strsignal(signal) + ")";
    }
    return "stopped";
}


// What the runner says, quoted as the student's code's own words, cut at a screenful.
std::string as_their_words(const std::string& text)
{
    constexpr std::size_t kMostShown = 2000;
    if (text.size() <= kMostShown) return text;
    return text.substr(0, kMostShown) + "... (" + std::to_string(text.size() - kMostShown) +
           " more characters from your code not shown)";
}

}  // namespace

Runner::Runner(std::string program, std::string who, std::vector<std::string> tool)
    : program_(std::move(program)), who_(std::move(who)), tool_(std::move(tool))
{
}

Runner::~Runner()
{
    stop();
    if (tool_output_ >= 0) ::close(tool_output_);
}

void Runner::keep_tool_output()
{
    if (tool_output_ >= 0) return;
    tool_output_ = memfd_create("workbook-tool-output", MFD_CLOEXEC);
    if (tool_output_ < 0)
        throw std::runtime_error(std::string("cannot make a file for a tool's report: ") + std::strerror(errno));
}

std::string Runner::tool_output() const
{
    std::string text;
    if (tool_output_ < 0) return text;
    char buffer[4096];
    off_t at = 0;
    ssize_t n;
    while ((n = ::pread(tool_output_, buffer, sizeof buffer, at)) > 0) {
        text.append(buffer, static_cast<std::size_t>(n));
        at += n;
    }
    return text;
}

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
    // A runner that has not said hello yet (started early, after the reference was timed, say)
    // has run nothing: it is stopped at once, rather than waited for while CUDA starts in it.
    if (!greeted_) {
        stop();
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

// Runner::launch(), which starts the process itself, is in runner_launch.cpp.

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
    if (!frozen_.empty()) thaw();  // paused since its last call (pause_after_call)
    if (record_pending_) read_record();
    // The judge's own work (poison, inputs, guards) is finished before the call starts: a call
    // that runs on a stream of its own sees it done.
    CUDA_CHECK(cudaDeviceSynchronize());
    // A first call loads the student's module, and mapping an allocation costs CPU time in the
    // runner too: only a call with neither, and not under a tool (which works on the CPU itself),
    // has its CPU time judged.
    ++calls_;
    cpu_counts_ = tool_.empty() && calls_ > 1 && !std::exchange(maps_anew_, false);
    const double cpu_before = cpu_counts_ ? cpu_ms_below(pid_) : 0;
    //! [judge clock]
    // The judge's clock: from the request to the moment the GPU runs the judge's own kernel
    // again, after the runner said "done". A runner that answered early gains nothing: the
    // judge's kernel waits until the runner's work is off the GPU.
    const auto start = std::chrono::steady_clock::now();
    if (!wire::send(socket_, request)) lost(name);
    wire::poll_for_message(socket_, wire::kPollMs);  // "done" read as it comes, not after a wake-up
    wire::Reader done;
    if (!wire::receive(socket_, done) || done.get<wire::Op>() != wire::Op::done) lost(name);
    const auto answered = std::chrono::steady_clock::now();
    wait_for_judge_turn();
    const auto turned = std::chrono::steady_clock::now();
    last_ms_ = std::chrono::duration<double, std::milli>(turned - start).count();
    //! [judge clock]
    const auto ms = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
    };
    timeline_ = Timeline{ms(start), 0, 0, 0, ms(answered), ms(turned)};
    if (last_ms_ > 30 && clock_trace() > 0)
        std::printf("runner: %s (call %d of this process) took %.1f ms\n", name.c_str(), static_cast<int>(calls_), last_ms_);
    // What the runner's processes spent on the CPU meanwhile, as the kernel counts it: the work
    // a lab grades is the GPU's (check_record in common/judge.cu).
    cpu_ms_ = cpu_counts_ ? cpu_ms_below(pid_) - cpu_before : 0;
    record_pending_ = true;
    if (pause_between_calls_) pause_after_call(answered);
    const auto status = done.get<wire::Status>();
    const auto code = static_cast<cudaError_t>(done.get<std::int32_t>());
    const bool sticky = done.get<unsigned char>() != 0;
    // Words from the runner are the student's code's own (an exception's text, a CUDA error
    // where it was caught): shown as such, and no longer than a screen.
    const std::string text = as_their_words(done.get_string());
    if (status == wire::Status::ok) {
        timeline_.received = done.get<double>();
        timeline_.started = done.get<double>();
        timeline_.ended = done.get<double>();
        return done;
    }
    if (record_pending_) read_record();
    // The error's name and words are the judge's own, from its code; the runner's report follows.
    const std::string error = std::string(cudaGetErrorString(code)) + " (" + cudaGetErrorName(code) + ")";
    if (sticky) {
        stop();
        throw CudaError(code, error + "; the process that runs your code reported: " + text +
                                  "\nThis error is sticky: it destroyed the GPU context of the process that "
                                  "runs your code, which is started afresh for the next call.");
    }
    if (status == wire::Status::cuda_error)
        throw CudaError(code, error + "; the process that runs your code reported: " + text);
    throw std::runtime_error("the process that runs your code reported: " + text);
}

void Runner::pause_after_call(std::chrono::steady_clock::time_point answered)
{
    // The record first: the runner sends it once it has read CUPTI, right after "done".
    read_record();
    // Paused until its next call, so that nothing of the student's runs while the judge reads
    // the call's arrays: a thread that launches once the call has returned, a kernel still
    // writing. Its processes go on (thaw) when the next call is sent.
    freeze();
    // Work it had queued still runs: the judge waits for it, and the call loses that run.
    const double busy_ms = gpu_busy_after_ms(answered, kMostLeftRunningMs);
    if (busy_ms <= 0) return;
    recorded_.left_running_ms = std::max(recorded_.left_running_ms, busy_ms);
    if (clock_trace() > 0)
        std::printf("runner: the GPU ran work of %s for %.2f ms after the call returned\n", who_.c_str(), busy_ms);
    // Still busy after that long: the work ends with the process.
    if (busy_ms >= kMostLeftRunningMs) {
        const LaunchRecord kept = recorded_;
        stop_and_wait();
        recorded_ = kept;
    }
}

void Runner::pause_between_calls() { pause_between_calls_ = tool_.empty(); }

void Runner::note_allocation(unsigned long long id)
{
    // The runner closes an allocation that neither of its last two calls used
    // (Arguments::forget_stale_allocations): the same rule, counted the same way, here.
    const std::uint64_t next = calls_ + 1;
    const auto found = mapped_.find(id);
    if (found == mapped_.end() || found->second + 2 < next) maps_anew_ = true;
    mapped_[id] = next;
}

std::string Runner::Timeline::legs() const
{
    char text[200];
    std::snprintf(text, sizeof text, "to the runner %.4f ms, its first turn %.4f, its calls %.4f, back %.4f, "
                  "the judge's turn %.4f", received - sent, started - received, ended - started, answered - ended,
                  turned - answered);
    return text;
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
    if (!unavailable.empty()) record.unavailable = as_their_words(unavailable);
    std::vector<std::string> after_return;
    for (auto count = message.get<std::uint32_t>(); count > 0; --count) after_return.push_back(message.get_string());
    const double after_return_ms = message.get<double>();
    if (record.after_return.empty()) record.after_return_ms = after_return_ms;
    record.after_return.insert(record.after_return.end(), after_return.begin(), after_return.end());
    record.pinned_bytes = std::max(record.pinned_bytes, static_cast<std::size_t>(message.get<std::uint64_t>()));
    // Measured here, by the judge, not reported by the runner.
    record.host_cpu_ms += cpu_ms_;
    record.call_ms += last_ms_;
    record.cpu_counted = cpu_counts_;
}

int Runner::finish()
{
    if (pid_ < 0) return -1;
    if (!frozen_.empty()) thaw();
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

std::vector<int> Runner::kill_process()
{
    if (socket_ >= 0) ::close(socket_);
    socket_ = -1;
    std::vector<int> first;
    if (pid_ > 0) {
        // The namespace's first process (the runner, or a tool wrapped around it) ends every
        // process of the namespace as it dies, without relying on its death signal.
        if (!runner_sandbox().spaces.empty()) first = kill_children(pid_);
        kill(pid_, SIGKILL);
        while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
    return first;
}

void Runner::stop()
{
    kill_process();
    forget_process();
}

void Runner::stop_and_wait()
{
    const auto started = std::chrono::steady_clock::now();
    // Every process below the runner is watched until its exit is done, and so is every PID
    // namespace they were in, until no process is left in it: the exit of a namespace's first
    // process is not always the end of every other (one being forked as they were killed has
    // been seen alive after it, on this project's machines).
    std::set<std::string> spaces;
    if (pid_ > 0)
        for (const int pid : descendants({pid_})) spaces.insert(pid_namespace_of(pid));
    for (const int pid : kill_process())
        if (!wait_until_ended(pid, 10000)) {
            std::printf("the process that runs %s had not ended 10 s after SIGKILL\n", who_.c_str());
            std::fflush(stdout);
        }
    for (const std::string& space : spaces)
        if (!end_namespace(space, 10000)) {
            std::printf("a process of %s's namespace had not ended 10 s after SIGKILL\n", who_.c_str());
            std::fflush(stdout);
        }
    forget_process();
    if (clock_trace() > 0)
        std::printf("runner: stopped and waited for in %.1f ms\n",
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
}

// Pauses the runner and every process below it (SIGSTOP), after reading what its last call left
// to read: none of them can run or launch anything until thaw(). Work already queued on the GPU
// still runs (hold_off_gpu checks). False where the sandbox gives the runner no PID namespace of
// its own (a process could then leave the tree below it), or none runs.
bool Runner::freeze()
{
    if (pid_ < 0 || runner_sandbox().spaces.empty()) return false;
    if (record_pending_) read_record();  // nothing left for the judge to wait for while it is paused
    // In its PID namespace no process can leave the tree below the runner: an orphan goes to the
    // namespace's first process. A process forked while the others are being paused is found on
    // the next pass; the passes end when every live process below the runner is paused.
    for (int pass = 0; pass < 100; ++pass) {
        std::vector<int> all = descendants({pid_});
        all.insert(all.begin(), pid_);
        bool all_paused = true;
        for (const int pid : all) {
            const char state = process_state(pid);
            if (state == '\0' || state == 'Z' || state == 'X' || state == 'T' || state == 't') continue;
            all_paused = false;
            if (kill(pid, SIGSTOP) == 0 &&
                std::find(frozen_.begin(), frozen_.end(), pid) == frozen_.end())
                frozen_.push_back(pid);
        }
        if (all_paused) return !frozen_.empty();
        usleep(pass < 10 ? 50 : 1000);
    }
    return false;  // still changing after 100 passes: the caller stops it instead
}

void Runner::thaw()
{
    for (const int pid : frozen_) kill(pid, SIGCONT);
    frozen_.clear();
}

void Runner::hold_off_gpu()
{
    const bool paused = freeze();
    if (paused && gpu_idle()) return;
    if (paused) {
        std::printf("the GPU was still busy after the process that runs your code was paused: it was stopped "
                    "instead, with its GPU work, and started again afterwards\n");
        std::fflush(stdout);
    }
    stop_and_wait();
}

void Runner::resume()
{
    if (!frozen_.empty())
        thaw();
    else
        start_early();
}

void Runner::forget_process()
{
    frozen_.clear();
    pid_ = -1;
    calls_ = 0;
    mapped_.clear();
    maps_anew_ = false;
    greeted_ = false;
    record_pending_ = false;
    recorded_ = LaunchRecord{};
    if (runner_sandbox().reaper) kill_descendants();
}

}  // namespace workbook::remote
