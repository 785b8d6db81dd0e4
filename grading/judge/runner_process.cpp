// One runner process, the judge's side of it (Runner in calls.hpp): starting it in its
// sandbox, the exchange of a call, its answer and its launch record over the socket, and
// noticing when it dies. calls.cpp decides which runner a call goes to and what it carries.
#include "calls.hpp"
#include "clock.hpp"

#include "sandbox.hpp"

#include "common/check.hpp"
#include "common/launch_record.hpp"

#include <cuda_runtime.h>
#include <fcntl.h>
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
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace workbook::remote {

namespace {

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

// A copy of the runner that the user nobody may run, when the build folder is private (without
// the minimal view, which binds the file itself).
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

// The descriptor of the runner's socket, in the runner.
constexpr int kRunnerFd = 3;

// Says once per checker what the sandbox holds, and what this machine could not give.
void tell_sandbox_once(const Sandbox& sandbox)
{
    static bool told = false;
    if (told) return;
    told = true;
    std::printf("runner sandbox: %s\n", sandbox.description.c_str());
    for (const std::string& missing : sandbox.missing) std::printf("runner sandbox: not here: %s\n", missing.c_str());
    std::fflush(stdout);
}

// The command that starts a runner: the sandbox's namespaces and user, the tool if any, the runner.
std::vector<std::string> runner_command(const Sandbox& sandbox, const std::vector<std::string>& tool,
                                        const std::string& program)
{
    // Every runner runs as the sandbox's user, under a tool too (Nsight Compute included: the
    // student's static initializers run inside whatever it starts). In the minimal view the
    // program file itself is bound where nobody can run it; otherwise nobody needs a copy it
    // can reach where the build folder is private.
    const bool copy = sandbox.as_nobody && !sandbox.minimal_view;
    return sandboxed_command(sandbox, tool, copy ? runnable_copy(program) : program);
}

// The runner's environment: this process's, less the judge's settings, plus where its socket is.
std::vector<std::string> runner_environment(const Sandbox& sandbox)
{
    // Nothing of the judge's settings (the seed, the ceilings) reaches the runner.
    // In the minimal view, the judge's home and temporary folder are not there: both are the
    // view's own empty /tmp.
    const auto replaced = [&](const char* setting) {
        return ((sandbox.as_nobody || sandbox.minimal_view) && std::strncmp(setting, "HOME=", 5) == 0) ||
               (sandbox.minimal_view && std::strncmp(setting, "TMPDIR=", 7) == 0);
    };
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "WORKBOOK_", 9) != 0 && !replaced(*e)) environment.push_back(*e);
    // The user nobody gets a home of its own, where a tool (ncu) keeps its settings.
    if (sandbox.minimal_view) environment.push_back("HOME=/tmp");
    else if (sandbox.as_nobody) environment.push_back("HOME=" + runner_home());
    environment.push_back("WORKBOOK_RUNNER_FD=" + std::to_string(kRunnerFd));
    return environment;
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

// Relays what a runner prints (its standard output and error, through `fd`) to this process's
// output, each line quoted as the student's code's own ("your code: ..."), until kMostPrinted
// bytes; one line then says the rest is not shown. A thread of its own, which ends when every
// process of the runner has closed the pipe.
void relay_output(int fd)
{
    std::thread([fd] {
        constexpr std::size_t kMostPrinted = 64 * 1024, kLongestLine = 1000;
        std::size_t shown = 0;
        bool cut = false;
        std::string line;
        const auto emit = [&] {
            if (line.empty()) return;
            if (line.back() != '\n') line += '\n';
            if (shown + line.size() <= kMostPrinted) {
                std::fprintf(stdout, "your code: %s", line.c_str());
                std::fflush(stdout);
                shown += line.size();
            } else if (!cut) {
                cut = true;
                std::fprintf(stdout, "your code: ... (the rest is not shown: only the first %zu KiB of what the "
                                     "process that runs your code prints is kept)\n", kMostPrinted / 1024);
                std::fflush(stdout);
            }
            line.clear();
        };
        char buffer[4096];
        for (;;) {
            const ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            for (ssize_t i = 0; i < n; ++i) {
                line += buffer[i];
                if (buffer[i] == '\n' || line.size() >= kLongestLine) emit();
            }
        }
        emit();
        ::close(fd);
    }).detach();
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

void Runner::launch()
{
    const Sandbox& sandbox = runner_sandbox();
    tell_sandbox_once(sandbox);
    std::vector<std::string> argv = runner_command(sandbox, tool_, program_);

    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
        throw std::runtime_error(std::string("cannot make a socket for the runner: ") + std::strerror(errno));
    std::vector<std::string> environment = runner_environment(sandbox);

    std::vector<char*> args, envp;
    for (std::string& word : argv) args.push_back(word.data());
    args.push_back(nullptr);
    for (std::string& setting : environment) envp.push_back(setting.data());
    envp.push_back(nullptr);

    // What the runner prints comes through a pipe of the judge's, relayed as the student's own
    // words (relay_output). Under a tool, the tool's report goes straight to this process's
    // output, which the judge that started it as a probe reads, or to the file of
    // keep_tool_output, which a judge running the tool itself reads (tool_output).
    int printed[2] = {-1, -1};
    if (tool_.empty() && pipe2(printed, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("cannot make a pipe for the runner's output: ") + std::strerror(errno));
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("cannot start the runner: ") + std::strerror(errno));
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec.
        if (sandbox.reaper) setsid();  // its own session, which kill_descendants ends
        // Killed with the checker (by a grader's timeout, say), and so is the namespace below it.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (printed[1] >= 0) {
            dup2(printed[1], 1);
            dup2(printed[1], 2);
        } else if (tool_output_ >= 0) {
            dup2(tool_output_, 1);  // dup2 clears close-on-exec; both share one offset
            dup2(tool_output_, 2);
        }
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
    if (printed[1] >= 0) {
        ::close(printed[1]);
        relay_output(printed[0]);
    }
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
