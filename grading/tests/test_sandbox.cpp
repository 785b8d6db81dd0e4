// The runner's process and its sandbox, without a GPU: a runner starts, says what it defines,
// exits when asked, and nothing it started outlives it (grading/remote.hpp, grading/sandbox.hpp).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "grading/remote.hpp"
#include "grading/sandbox.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

// The processes whose program is `path` (the runner's copy for nobody keeps the file's name).
int running(const std::string& path)
{
    const std::string name = path.substr(path.find_last_of('/') + 1);
    int count = 0;
    DIR* proc = opendir("/proc");
    while (dirent* entry = proc ? readdir(proc) : nullptr) {
        if (std::atoi(entry->d_name) <= 0) continue;
        char program[4096];
        const ssize_t n = readlink(("/proc/" + std::string(entry->d_name) + "/exe").c_str(), program, sizeof program - 1);
        if (n <= 0) continue;
        program[n] = '\0';
        const std::string found(program);
        count += found.size() >= name.size() && found.compare(found.size() - name.size(), name.size(), name) == 0;
    }
    if (proc) closedir(proc);
    return count;
}

bool eventually(const std::function<bool()>& condition)
{
    for (int i = 0; i < 100; ++i) {
        if (condition()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return condition();
}

}  // namespace

TEST_CASE("the sandbox says what holds and what this machine could not give")
{
    const workbook::Sandbox& box = workbook::runner_sandbox();
    MESSAGE("runner sandbox here: " << box.description);
    for (const std::string& missing : box.missing) MESSAGE("not here: " << missing);
    CHECK(!box.description.empty());
    // Without a PID namespace the checker must reap instead; one of the two always holds.
    CHECK((box.reaper || box.description.find("PID namespace") != std::string::npos));
    if (geteuid() == 0 && !box.reaper) CHECK(box.as_nobody);
}

TEST_CASE("a runner starts, lists its functions and exits when asked")
{
    workbook::remote::Runner runner(WORKBOOK_EMPTY_RUNNER_PATH, "the empty runner");
    CHECK_FALSE(runner.defines("launch_vector_add"));
    CHECK(runner.finish() == 0);
    CHECK(eventually([] { return running(WORKBOOK_EMPTY_RUNNER_PATH) == 0; }));
}

namespace {

// Starts the leaky runner (under `tool`, if any), sees it and the process it left, asleep in a
// session of its own, then stops the runner: neither may be left.
void check_stop_ends_what_was_left(const std::vector<std::string>& tool)
{
    const std::string program = WORKBOOK_LEAKY_RUNNER_PATH;
    workbook::remote::Runner runner(program, "your code", tool);
    CHECK_FALSE(runner.defines("anything"));
    REQUIRE(eventually([&] { return running(program) >= 2; }));
    runner.stop();
    CHECK(eventually([&] { return running(program) == 0; }));
}

}  // namespace

TEST_CASE("a process the runner's code leaves behind ends with the runner")
{
    check_stop_ends_what_was_left({});
}

TEST_CASE("a process left behind ends with the runner when a tool that waits for it runs first")
{
    // As compute-sanitizer does: the namespace's first process is the tool, which waits for
    // the runner and every process it left, and was given no signal to die with its parent.
    check_stop_ends_what_was_left({"/bin/sh", "-c", "\"$0\"; wait; sleep 120"});
}

TEST_CASE("a runner started early and ended before any call is stopped, and nothing of it is left")
{
    const std::string program = WORKBOOK_LEAKY_RUNNER_PATH;
    workbook::remote::Runner runner(program, "your code");
    runner.start_early();
    REQUIRE(eventually([&] { return running(program) >= 2; }));
    runner.end();
    CHECK(eventually([&] { return running(program) == 0; }));
    CHECK_FALSE(runner.defines("anything"));  // and a call after it starts it afresh
    runner.stop_and_wait();
    CHECK(running(program) == 0);
}

TEST_CASE("stop_and_wait returns once nothing of the runner is left, and the next call starts it again")
{
    // As before the reference solution is timed: the student's runner, and what its code left
    // running, must be gone from the machine (and the GPU) before the clock starts.
    const std::string program = WORKBOOK_LEAKY_RUNNER_PATH;
    workbook::remote::Runner runner(program, "your code");
    for (int round = 0; round < 2; ++round) {
        CHECK_FALSE(runner.defines("anything"));
        REQUIRE(eventually([&] { return running(program) >= 2; }));
        runner.stop_and_wait();
        CHECK(running(program) == 0);  // at once, not eventually
    }
}

TEST_CASE("a process left behind ends when the checker itself is killed")
{
    if (workbook::runner_sandbox().reaper) {
        // Only a PID namespace outlives nothing: the reaper's fallback says so in its log line.
        MESSAGE("not checked here: no PID namespace, and a reaper dies with its checker");
        return;
    }
    const std::string program = WORKBOOK_LEAKY_RUNNER_PATH;
    const pid_t checker = fork();
    REQUIRE(checker >= 0);
    if (checker == 0) {
        workbook::remote::Runner runner(program, "your code");
        runner.defines("anything");
        pause();
        _exit(0);
    }
    REQUIRE(eventually([&] { return running(program) >= 2; }));
    kill(checker, SIGKILL);  // as the grader ends a checker that ran past its time
    waitpid(checker, nullptr, 0);
    CHECK(eventually([&] { return running(program) == 0; }));
}
