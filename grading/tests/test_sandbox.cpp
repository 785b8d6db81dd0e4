// The runner's process and its sandbox, without a GPU: a runner starts, says what it defines,
// exits when asked, and nothing it started outlives it; in the minimal view it sees none of the
// grader's files (grading/judge/calls.hpp, grading/judge/sandbox.hpp). Started with --look-around, this
// program is the one the view's test starts in the sandbox: it says what it sees there.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "grading/judge/calls.hpp"
#include "grading/judge/sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
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

namespace {

// In the sandbox (--look-around NAME PATH...): says, one line each, who it runs as, what its
// /proc and /tmp hold, whether it may write its own executable or read a file of root's, and
// for each PATH whether it sees it; then leaves a file NAME in its /tmp.
int look_around(int argc, char** argv)
{
    std::printf("uid %d gid %d\n", static_cast<int>(getuid()), static_cast<int>(getgid()));
    int processes = 0, tmp_entries = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc"))
        processes += std::atoi(entry.path().filename().c_str()) > 0;
    for (const auto& entry : std::filesystem::directory_iterator("/tmp")) {
        std::printf("in /tmp: %s\n", entry.path().c_str());
        ++tmp_entries;
    }
    std::printf("processes %d\ntmp entries %d\n", processes, tmp_entries);
    char exe[4096] = {};
    readlink("/proc/self/exe", exe, sizeof exe - 1);
    std::printf("exe %s\n", exe);
    std::printf("exe writable %s\n", access("/proc/self/exe", W_OK) == 0 ? "yes" : "no");
    // The namespace's first process is bubblewrap's, as root: its environment is root's to read.
    const int environ_of_root = open("/proc/1/environ", O_RDONLY);
    std::printf("reads root's /proc/1/environ %s\n", environ_of_root >= 0 ? "yes" : "no");
    for (int i = 1; i < argc; ++i) {
        struct stat info;
        std::printf("%s %s\n", lstat(argv[i], &info) == 0 ? "sees" : "misses", argv[i]);
    }
    std::ofstream(std::string("/tmp/") + argv[0]) << "left by the sandboxed program\n";
    return 0;
}

// Runs a command with `environment`, and returns its exit status and what it wrote (both streams).
int output_of(std::vector<std::string> command, std::vector<std::string> environment, std::string& output)
{
    std::vector<char*> argv, envp;
    for (std::string& word : command) argv.push_back(word.data());
    argv.push_back(nullptr);
    for (std::string& setting : environment) envp.push_back(setting.data());
    envp.push_back(nullptr);
    int pipe[2];
    REQUIRE(pipe2(pipe, O_CLOEXEC) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(pipe[1], 1);
        dup2(pipe[1], 2);
        execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    close(pipe[1]);
    char buffer[4096];
    for (ssize_t n; (n = read(pipe[0], buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<std::size_t>(n));
    close(pipe[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool has_line(const std::string& output, const std::string& line)
{
    return ("\n" + output).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("in the minimal view the runner sees its own executable and libraries, and none of the grader's files")
{
    const workbook::Sandbox& box = workbook::runner_sandbox();
    if (!box.minimal_view) {
        // Only a machine without bubblewrap (or where it fails) goes without, and its log says why
        // (or the sandbox is off: WORKBOOK_SANDBOX=none).
        bool named = false;
        for (const std::string& missing : box.missing)
            named = named || missing.find("bubblewrap") != std::string::npos ||
                    missing.find("WORKBOOK_SANDBOX=none") != std::string::npos;
        CHECK_MESSAGE(named, "no minimal view here, and no line of the log says why: " << box.description);
        return;
    }
    const std::filesystem::path self = std::filesystem::canonical("/proc/self/exe");
    // What must stay outside: the build folder (this program's and every runner's), the project
    // (and its solutions, or in the student edition its compiled reference), the toolkit's compiler, the gcc libraries, the home folders, and a
    // file of our own in this machine's /tmp. Each exists here, or the check could not fail.
    const std::string marker_name = "workbook-sandbox-" + std::to_string(getpid());
    const std::string marker = "/tmp/" + marker_name, left = marker + "-left";
    std::ofstream(marker) << "outside\n";
    std::filesystem::remove(left);
    const std::vector<std::string> hidden = {self.parent_path(), self.parent_path().parent_path(),
                                             WORKBOOK_LEAKY_RUNNER_PATH, WORKBOOK_SOURCE_DIR,
                                             WORKBOOK_SOLUTIONS_DIR, WORKBOOK_NVCC,
                                             "/usr/lib/gcc", "/root", marker};
    for (const std::string& path : hidden) REQUIRE_MESSAGE(std::filesystem::exists(path), path << " is not here");

    std::vector<std::string> command = workbook::sandboxed_command(box, {}, self);
    command.push_back("--look-around");
    command.push_back(marker_name + "-left");
    command.insert(command.end(), hidden.begin(), hidden.end());
    std::string output;
    const int status = output_of(command, {"HOME=/tmp", "PATH=/usr/bin:/bin"}, output);
    MESSAGE("what the sandboxed program saw:\n" << output);
    // It ran: its loader and every library it needs were there.
    REQUIRE_MESSAGE(status == 0, "the sandboxed program exited with status " << status);
    if (geteuid() == 0) {
        CHECK(has_line(output, "uid 65534 gid 65534"));
        CHECK(has_line(output, "reads root's /proc/1/environ no"));
    }
    CHECK(has_line(output, "exe /runner/" + self.filename().string()));
    CHECK(has_line(output, "exe writable no"));
    CHECK(has_line(output, "tmp entries 0"));
    // Its /proc shows its namespace alone: bubblewrap's first process and itself.
    CHECK(has_line(output, "processes 2"));
    for (const std::string& path : hidden) CHECK_MESSAGE(has_line(output, "misses " + path), path << " is in the view");
    // Its /tmp is its own: what it left there is not in ours.
    CHECK_FALSE(std::filesystem::exists(left));
    std::filesystem::remove(marker);
}

TEST_CASE("a tool's real executable is found through the script that starts it")
{
    // CUDA's layout: bin/ncu, a script, starts nsight-compute-<version>/target/<platform>/ncu.
    char made[] = "/tmp/workbook-tool-XXXXXX";
    REQUIRE(mkdtemp(made) != nullptr);
    const std::filesystem::path root = made, real = root / "nsight-compute-2099.2/target/linux-x64/ncu";
    std::filesystem::create_directories(root / "bin");
    std::filesystem::create_directories(real.parent_path());
    std::filesystem::create_directories(root / "nsight-compute-2099.1/target/linux-x64");
    for (const std::filesystem::path& elf : {real, root / "nsight-compute-2099.1/target/linux-x64/ncu", root / "bin/elf"})
        std::filesystem::copy_file("/proc/self/exe", elf);
    for (const std::filesystem::path& script : {root / "bin/ncu", root / "nsight-compute-2099.2/ncu"}) {
        std::ofstream(script) << "#!/bin/sh\nexec \"$(dirname \"$0\")/../nsight-compute-2099.2/ncu\" \"$@\"\n";
        std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    }
    std::filesystem::create_symlink(root / "bin/ncu", root / "ncu-link");

    for (const std::filesystem::path& tool : {root / "bin/ncu", root / "ncu-link"}) {
        const workbook::ToolInstall install = workbook::find_tool_install(tool);
        CHECK_MESSAGE(install.why_not.empty(), install.why_not);
        CHECK(install.executable == real.string());  // the newest version's
        CHECK(install.folder == (root / "nsight-compute-2099.2").string());
    }
    const workbook::ToolInstall elf = workbook::find_tool_install(root / "bin/elf");
    CHECK(elf.executable == (root / "bin/elf").string());
    CHECK(elf.folder == (root / "bin").string());
    std::filesystem::remove_all(root / "nsight-compute-2099.2");
    std::filesystem::remove_all(root / "nsight-compute-2099.1");
    // NVIDIA's .deb layout, in a home of its own (/opt/nvidia/nsight-compute/<version>/...).
    const std::filesystem::path home = root / "opt", in_home = home / "nsight-compute/2099.3/target/linux-x64/ncu";
    std::filesystem::create_directories(in_home.parent_path());
    std::filesystem::copy_file("/proc/self/exe", in_home);
    const workbook::ToolInstall installed = workbook::find_tool_install(root / "bin/ncu", {home});
    CHECK_MESSAGE(installed.why_not.empty(), installed.why_not);
    CHECK(installed.executable == in_home.string());
    CHECK(installed.folder == (home / "nsight-compute").string());
    std::filesystem::remove_all(home);
    const workbook::ToolInstall none = workbook::find_tool_install(root / "bin/ncu", {home});
    CHECK(none.executable.empty());
    CHECK_MESSAGE(none.why_not.find("no executable named ncu") != std::string::npos, none.why_not);
    std::filesystem::remove_all(root);
}

int main(int argc, char** argv)
{
    if (argc > 2 && std::strcmp(argv[1], "--look-around") == 0) return look_around(argc - 2, argv + 2);
    return doctest::Context(argc, argv).run();
}
