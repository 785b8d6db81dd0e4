/// \file calls.hpp
/// \brief The judge's side of the two processes: calling the student's functions in the runner.
///
/// A checker is two programs. The judge (`check_NN_name`) holds the tests, the data, the float64
/// references, the reference solution, the clock and the signing key; it never loads the
/// student's code. The runner (`check_NN_name_runner`) is the student's file linked with a small
/// dispatcher (grading/runner/runner.hpp): it calls the student's functions when the judge asks, and holds
/// nothing of the judge's.
///
/// In the judge, every API function of the lab is defined by a generated forwarder
/// (grading/buildtools/api_stubs.py writes them from the lab's header) that sends the call to the runner:
///
///     void launch_vector_add(const float* a, const float* b, float* c, int n)
///     {
///         return workbook::remote::forward<decltype(::launch_vector_add)>("launch_vector_add", a, b, c, n);
///     }
///
/// so the checkers call the student's functions as if they were linked in. Arguments travel as
/// they are: numbers as bytes; device arrays as CUDA IPC handles of the judge's own allocations,
/// which the runner maps (the student's kernels write the judge's buffers directly); host arrays
/// as a copy in shared memory, copied back after the call when the parameter is not const.
/// Before each call the judge waits for its own GPU work (poison, inputs, guards), so a call
/// that runs on a stream of its own sees them finished; the runner waits for the GPU before it
/// answers, so the call's work is finished when the forwarder returns.
///
/// The runner runs in a sandbox (sandbox.hpp); if it crashes or its CUDA context is lost, the
/// call fails with what happened and the next call starts a fresh runner.
///
/// Where CUDA IPC is missing (WSL 2, some containers), the checker runs in **practice mode**
/// (find_practice_mode): a device array travels as a host copy of its allocation in shared
/// memory, which the runner copies into a device allocation of its own and, after the call, back
/// (HostCopies::add_device); the judge copies it back into its own allocation and checks as
/// usual. Calls are then timed one at a time, on the runner's own clock, and nothing is graded
/// (docs/grading.md, "Practice mode").
#pragma once

#include "common/launch_record.hpp"
#include "grading/protocol/wire.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace workbook::remote {

/// \brief A runner process: started on first use, restarted after it dies.
class Runner {
public:
    /// \brief A runner of this executable, not started yet.
    /// \param program the runner's path
    /// \param who its name in messages, e.g. "your code"
    /// \param tool the command words of a tool to run it under (compute-sanitizer, ncu), or none
    Runner(std::string program, std::string who, std::vector<std::string> tool = {});
    ~Runner();
    Runner(const Runner&) = delete;
    Runner& operator=(const Runner&) = delete;

    /// \brief Keeps what the tool around this runner writes (its report, and whatever the runner
    /// prints) for tool_output(), instead of letting it through to this process's output: for a
    /// tool run of the judge's own (tools.hpp), which reads the report itself. Before the start.
    void keep_tool_output();

    /// \brief What the tool wrapped around this runner wrote, with keep_tool_output().
    std::string tool_output() const;

    /// \brief Whether the runner runs under a tool (compute-sanitizer, ncu).
    bool under_tool() const { return !tool_.empty(); }

    /// \brief Starts the runner's process without waiting for it, so that its start (CUDA's
    /// above all) overlaps the checker's own; the first call waits for it.
    void start_early();

    /// \brief Something to do once, as soon as the runner has said it is up (its first call
    /// waits for that).
    /// \param then what to do
    void when_ready(std::function<void()> then);

    /// \brief Whether the student's file defines this API function (starts the runner).
    /// \param name the function's name
    bool defines(const std::string& name);

    /// \brief Sends a call or a ping and waits until the runner says it is done; the record
    /// that follows is read later (take_record). Throws std::runtime_error (or CudaError) with
    /// what happened when the call failed or the runner died.
    /// \param request the call
    /// \param name what is called, for messages
    /// \return the done message, positioned at the call's result
    wire::Reader call(const wire::Message& request, const std::string& name);

    /// \brief The judge's clock over the last call, in milliseconds (see round_trip_ms).
    double last_call_ms() const { return last_ms_; }

    /// \brief The moments of the last call that went well, on the monotonic clock both processes
    /// read, in milliseconds: the judge's send, the runner's receipt, the start and end of its
    /// calls (after the GPU's switch to it, after its last waits), the judge's receipt of "done"
    /// and the end of the judge's turn on the GPU. Printed under WORKBOOK_CLOCK_TRACE to show
    /// where a call's time goes; the runner's moments are its own word, never counted.
    struct Timeline {
        double sent = 0;      ///< the judge sent the request
        double received = 0;  ///< the runner read it (the runner's word)
        double started = 0;   ///< its calls started, the GPU switched to it (the runner's word)
        double ended = 0;     ///< its last wait was over (the runner's word)
        double answered = 0;  ///< the judge read "done"
        double turned = 0;    ///< the judge's own kernel ran: the judge's clock stops here
        /// \brief The legs between those moments, as the trace prints them: "to the runner
        /// 0.0122 ms, its first turn 0.3779, its calls 0.0349, back 0.0190, the judge's turn 0.1557".
        std::string legs() const;
    };
    /// \brief The moments of the last call that went well (Timeline).
    const Timeline& last_timeline() const { return timeline_; }

    /// \brief Notes that the next call hands the runner a device allocation: one it has not
    /// mapped yet (or has closed since, as it does with those two calls unused) costs CPU time to
    /// map, so that call's CPU time is not held against the student's code.
    /// \param id the allocation's id (unique for the life of the judge's process)
    void note_allocation(unsigned long long id);

    /// \brief What the runner saw launched and copied since the last take_record (waits for the
    /// record of the last call).
    LaunchRecord take_record();

    /// \brief Asks the runner to exit and waits for it.
    /// \return its exit status (what a tool wrapped around it reports), or -1 if none ran
    int finish();

    /// \brief Stops the runner and every process it started, at once, without waiting for
    /// them to end (a runner's CUDA teardown would delay what follows).
    void stop();

    /// \brief Stops the runner and every process it started, and waits until they have ended
    /// and their GPU contexts with them: when it returns, nothing of the runner is left to run
    /// on the GPU. The next call starts it afresh.
    void stop_and_wait();

    /// \brief Takes the runner off the GPU for a measurement of the judge's (the reference's
    /// timing, the first ping series): every process below it is paused (SIGSTOP), and kept
    /// paused if a kernel of the judge's then finds the GPU idle (gpu_idle in clock.hpp);
    /// otherwise, or where the sandbox gives it no PID namespace of its own, it is stopped
    /// (stop_and_wait) with its GPU context and whatever work it had queued there.
    void hold_off_gpu();

    /// \brief Lets the runner go on after hold_off_gpu(): its processes continue (SIGCONT) where
    /// they were paused, or it starts again where it was stopped, its CUDA start overlapping
    /// what follows.
    void resume();

    /// \brief The end of a checker's run: finish() under a tool, which writes its report as the
    /// runner exits; otherwise the runner lets go of the output and is stopped without waiting
    /// for its exit.
    void end();

    /// \brief Has every call of this runner end with its processes paused (SIGSTOP) until the
    /// next call, once the judge's clock has stopped, and the GPU checked for work it left
    /// running (the record's left_running_ms): the student's runner, unless under a tool.
    void pause_between_calls();

    /// \brief The process the judge started for the runner, or -1 while none runs: the sandbox's
    /// first command (unshare, bwrap), with the runner, and whatever it starts, below it.
    pid_t pid() const { return pid_; }

private:
    void start();   // launches if needed, then waits for the runner's hello
    void launch();  // starts the process
    void read_record();
    void pause_after_call(std::chrono::steady_clock::time_point answered);  // pause_between_calls
    bool freeze();  // pauses every process below it; false where it could not (hold_off_gpu)
    void thaw();    // lets the processes freeze() paused go on
    std::vector<int> kill_process();  // kills it; returns its namespace's first processes
    void forget_process();            // after that: nothing started, nothing pending
    [[noreturn]] void lost(const std::string& during);

    std::string program_, who_;
    std::vector<std::string> tool_;
    pid_t pid_ = -1;
    int socket_ = -1;
    bool greeted_ = false;  // its hello (the functions it defines) was read
    bool record_pending_ = false;
    bool pause_between_calls_ = false;  // pause_between_calls
    double last_ms_ = 0;
    Timeline timeline_;
    double cpu_ms_ = 0;  // the CPU time the runner's processes took during the last call (from /proc)
    bool cpu_counts_ = false;     // that time is the call's own (not a first call, nothing mapped anew)
    bool maps_anew_ = false;      // the next call maps an allocation the runner does not hold
    std::uint64_t calls_ = 0;     // calls and pings sent to this process, as it counts them
    std::map<unsigned long long, std::uint64_t> mapped_;  // allocation -> the last call that used it
    LaunchRecord recorded_;
    std::set<std::string> defined_;
    std::function<void()> when_ready_;
    std::vector<int> frozen_;  // the processes freeze() paused
    int tool_output_ = -1;     // keep_tool_output's file (a memfd), which the tool writes to
};

/// \brief How long the judge waits, at most, for work a runner left running on the GPU after a
/// call returned, in milliseconds; then the runner is stopped, and its work with it.
constexpr double kMostLeftRunningMs = 2000;

/// \brief The runner that holds the student's code: `<this checker>_runner`, beside it.
Runner& student_runner();

/// \brief The runner of the reference solution: the same runner, built from solutions/. The
/// reference is timed there, exactly as the student's code is (time_call in judge.hpp).
Runner& reference_runner();

/// \brief Runs `calls` against `runner` (a runner of the student's code under a tool, for a tool
/// run of the judge's own) instead of the student's runner.
/// \param runner where every call of `calls` goes
/// \param calls what to run
void with_runner(Runner& runner, const std::function<void()>& calls);

/// \brief Whether this checker has a reference solution's runner (the forwarders name it).
bool has_reference_runner();

/// \brief Starts the student's runner, and the reference's if asked, without waiting for either:
/// their start overlaps the checker's own (a whole lab's run, where both are needed).
/// \param reference also the reference solution's runner
void start_runners_early(bool reference);

/// \brief Ends the student's runner and the reference's (Runner::end), at the end of a checker's run.
void end_runners();

/// \brief Where the reference's runner is (the generated forwarders set it, from the build).
/// \param program its path
/// \return true, for a static initializer
bool set_reference_program(const char* program);

/// \brief The runner the forwarders send to: the student's, or the reference's inside
/// as_reference.
Runner& target_runner();

/// \brief Runs `calls` with every forwarder sending to the reference's runner.
/// \param calls code that calls API functions
void as_reference(const std::function<void()>& calls);

/// \brief How many calls were sent to a runner since it was last asked (time_gpu asks whether
/// a launch calls into the runner).
int take_calls_made();

/// \brief What the calls since it was last asked took on the judge's clock: their count, and
/// their time less an empty round trip each (round_trip_ms). The judge's clock (clock.hpp) reads it.
struct Charged {
    int calls = 0;      ///< calls made
    double ms = 0;      ///< milliseconds, on the judge's clock, less a round trip per call
    bool batchable = true;          ///< every call was of a void function on device arrays only
    std::size_t device_bytes = 0;   ///< the bytes of the device allocations the calls were given
    bool reference = false;         ///< the calls went to the reference solution's runner (as_reference)
    /// Practice mode: `ms` is the runner's own time of the calls, less the copies of their arrays,
    /// not the judge's clock (no round trip to take off). Never graded.
    bool own_clock = false;
};

/// \brief Takes what the calls since the last take_charged took, and starts counting afresh.
Charged take_charged();

/// \brief Starts timing in batches (clock.hpp): every call a forwarder makes is queued into the
/// current slot instead of being sent, with each device array it is given copied, as it is now,
/// into that slot's own copy of its allocation, so that every run of the batch has arrays of its
/// own (fresh inputs, its own output, nothing left in L2 by the run before).
/// \param slots how many runs each batch holds
void begin_batches(int slots);

/// \brief Makes the batches hold `slots` runs (more than begin_batches said: new slots are added).
/// \param slots how many runs each batch holds from now on
void resize_batches(int slots);

/// \brief The calls made from now on go into slot `slot` of the next batch.
/// \param slot 0 to slots - 1
void fill_slot(int slot);

/// \brief Sends the queued calls to their runner as one message, which runs them one after
/// another, and waits until their work is finished.
/// \return the batch's time on the judge's clock, less one empty round trip, in milliseconds
double run_batch();

/// \brief The runner's own time of the last batch (from its first call's start to the end of its
/// waits), in milliseconds: printed beside the judge's under WORKBOOK_CLOCK_TRACE, to tell the
/// GPU's work from the round trip's; never counted (the runner's process is the student's).
double last_batch_own_ms();

/// \brief Copies slot `slot`'s arrays, as its run left them, back into the judge's originals, so
/// that the run can be checked as if it had run on them (its record included: see take_record).
/// \param slot the slot
void restore_slot(int slot);

/// \brief Ends timing in batches and frees the slots' copies.
void end_batches();

/// \brief Launches a kernel of the judge's and waits for it: the GPU is the judge's again.
void wait_for_judge_turn();

/// \brief Has the next call push the NVTX range "workbook-profile" around itself in the
/// runner, for Nsight Compute (explain_slowness in tools.hpp).
void profile_next_call();

/// \brief Installs the recorder that reads the runner's launch records (checker_main.cpp).
void record_from_runner();

/// \brief Registers a generated forwarder, so that have_function asks the runner about it.
/// \param address the forwarder
/// \param name the API function's name
/// \return true, for a static initializer
bool register_forwarder(const void* address, const char* name);

/// \brief The API function a forwarder stands for, or null when `address` is no forwarder.
/// \param address a function's address
const char* forwarder_name(const void* address);

/// \brief Why this checker runs in practice mode ("CUDA IPC is not available: ..."), or "" when it
/// does not: its results are then not for grading (docs/grading.md, "Practice mode").
const std::string& practice_reason();

/// \brief Tells the judge's side which test runs now (the checker's test_started), for
/// reference_run_ms.
/// \param name the doctest test case's name
void set_running_test(const std::string& name);

/// \brief The reference run's own figure for timed call `call` of the running test, in
/// milliseconds per run: what the grade handed this checker in WORKBOOK_REFERENCE_FIGURES (lines of
/// "call<TAB>ms<TAB>test name", kept from a grade of the reference solution on this GPU), or 0
/// where none is known. The judge checks the reference's figure against it (set_reference_record
/// in common/judge.hpp).
/// \param call which timed call of the test (0 for the first)
/// \return milliseconds per run, or 0
double reference_run_ms(int call);

/// \brief Decides, once at the checker's start, whether it runs in practice mode, and why:
/// WORKBOOK_FORCE_NO_IPC=1 (the tests of practice mode), cudaIpcGetMemHandle failing here, or a
/// runner failing to open the handle. A checker run by a tool for one probe (`--workbook-probe`)
/// takes its parent's decision, from WORKBOOK_PRACTICE_MODE, which this sets for it.
/// \param probe_the_runners ask a runner to open a handle (false: the environment only, as in a
/// probe run or a checker without GPU code)
/// \return the reason, or "" (practice_reason)
const std::string& find_practice_mode(bool probe_the_runners);

/// \brief One host array of a call, copied into shared memory for the runner.
struct SharedCopy {
    void* original = nullptr;  ///< the judge's array (in practice mode, its device allocation)
    void* shared = nullptr;    ///< its copy, mapped from the shared-memory file
    std::size_t bytes = 0;     ///< the size of both
    int fd = -1;               ///< the shared-memory file
    bool writable = false;     ///< copied back after the call
    bool device = false;       ///< practice mode: `original` is device memory (add_device)
    unsigned long long id = 0; ///< practice mode: the device allocation's id
};

/// \brief Host copies of a call's host arrays; copied back after the call where writable.
class HostCopies {
public:
    HostCopies() = default;
    HostCopies(const HostCopies&) = delete;
    HostCopies& operator=(const HostCopies&) = delete;
    ~HostCopies();
    /// \brief Copies the heap block at `data` into shared memory and attaches it to `request`.
    /// \param request the call
    /// \param data the array (the start of a heap block, as a std::vector's data() is)
    /// \param writable whether the function may write it (the parameter is not const)
    void add(wire::Message& request, const void* data, bool writable);
    /// \brief Practice mode: copies a whole device allocation of the judge's into shared memory
    /// and encodes the argument as that copy (Kind::device_copy). An allocation already shared
    /// with this call is not copied again: the runner gives both arguments one device copy.
    /// \param request the call
    /// \param base the allocation's start
    /// \param bytes its size
    /// \param id its id
    /// \param offset where the array starts in it
    /// \param extent the array's size (the runner under a sanitizer copies exactly that)
    /// \param writable whether the function may write it
    void add_device(wire::Message& request, void* base, std::size_t bytes, unsigned long long id, std::size_t offset,
                    std::size_t extent, bool writable);
    /// \brief Copies the writable arrays back where they came from.
    void copy_back();
    /// \brief Whether the call has no host array.
    bool empty() const { return copies_.empty(); }

private:
    std::vector<SharedCopy> copies_;
};

/// \brief Encodes one argument of a call.
/// \param request the call
/// \param copies the host arrays of the call
/// \param pointer the argument, when it is a pointer
/// \param writable whether the pointer is to non-const data
void put_pointer(wire::Message& request, HostCopies& copies, const void* pointer, bool writable);

/// \brief Encodes one argument of a call: a number, or an array (put_pointer).
template <class T>
void put_argument(wire::Message& request, HostCopies& copies, T value)
{
    if constexpr (std::is_pointer<T>::value) {
        put_pointer(request, copies, static_cast<const void*>(value),
                    !std::is_const<std::remove_pointer_t<T>>::value);
    } else {
        static_assert(std::is_arithmetic<T>::value, "an API function takes numbers and arrays");
        request.put(wire::Kind::value);
        request.put(static_cast<std::uint32_t>(sizeof value));
        request.put(value);
    }
}

/// \brief Decodes a call's result: a number, or a std::vector of plain values.
template <class R>
R get_result(wire::Reader& reply)
{
    if constexpr (std::is_arithmetic<R>::value) {
        return reply.get<R>();
    } else {
        using Element = typename R::value_type;
        static_assert(std::is_trivially_copyable<Element>::value, "an API function returns plain values");
        R result(static_cast<std::size_t>(reply.get<std::uint64_t>()));
        for (Element& element : result) element = reply.get<Element>();
        return result;
    }
}

/// \brief The start of one call's description: the function's name and whether to profile it;
/// its arguments follow (put_argument).
/// \param name the API function
wire::Message call_body(const char* name);

/// \brief Queues a call into the current batch slot, when timing in batches (begin_batches).
/// \param body the call's description
/// \return whether it was queued (otherwise it must be sent now)
bool queue_in_batch(const wire::Message& body);

/// \brief Sends one call to its runner and waits until its work is finished on the GPU.
/// \param body the call's description
/// \param batchable whether it could have been queued in a batch (a void function, no host arrays)
/// \param name the function's name, for messages
/// \return the done message, positioned at the call's result
wire::Reader send_call(const wire::Message& body, bool batchable, const char* name);

/// \brief Calls a student's function in the runner: what a generated forwarder does.
/// \tparam Function the function's type, e.g. decltype(::launch_vector_add)
/// \param name its name
/// \param args its arguments
template <class Function, class... Args>
auto forward(const char* name, Args... args)
{
    using Result = decltype(std::declval<Function*>()(args...));
    wire::Message body = call_body(name);
    HostCopies copies;
    (put_argument(body, copies, args), ...);
    const bool batchable = std::is_void<Result>::value && copies.empty();
    if constexpr (std::is_void<Result>::value) {
        if (batchable && queue_in_batch(body)) return;
    }
    wire::Reader reply = send_call(body, batchable, name);
    copies.copy_back();
    if constexpr (!std::is_void<Result>::value) return get_result<Result>(reply);
}

}  // namespace workbook::remote
