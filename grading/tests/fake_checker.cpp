// A checker with no GPU code, for testing the grader itself (grading/tests/test_grader.py).
//
// Its tests pass, fail, crash, hang, exit, throw, lose the CUDA context or try to forge a result,
// each only when the environment variable naming that fault is set, so one binary plays every
// kind of broken submission. Built with WORKBOOK_CHECKER_WITHOUT_GPU, so it needs no GPU.
#include "grading/judge/checker.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace workbook;

namespace {
bool wanted(const char* fault) { return std::getenv(fault) != nullptr; }

// Leaves a process behind, as student code might: a double fork and setsid, every descriptor
// closed (so that the grader's pipes close when the checker exits), asleep for two minutes. Its
// pid goes to the file `pid_file` before this returns.
void leave_a_process(const char* pid_file)
{
    int ready[2];
    if (pipe(ready) != 0) return;
    const pid_t child = fork();
    if (child == 0) {
        setsid();
        if (fork() != 0) _exit(0);
        if (FILE* f = std::fopen(pid_file, "w")) {
            std::fprintf(f, "%d\n", static_cast<int>(getpid()));
            std::fclose(f);
        }
        (void)!write(ready[1], "r", 1);
        for (int fd = 0; fd < 1024; ++fd) close(fd);
        sleep(120);
        _exit(0);
    }
    close(ready[1]);
    char byte;
    (void)!read(ready[0], &byte, 1);
    close(ready[0]);
    waitpid(child, nullptr, 0);
}
}  // namespace

TEST_CASE("passes" * points(2)) { CHECK(1 + 1 == 2); }

TEST_CASE("fails with a message" * points(3)) { FAIL_CHECK("c[7]: expected 1, got 2"); }

TEST_CASE("notes a figure and passes" * points(1)) { MESSAGE("your kernel: 2710 GB/s"); }

TEST_CASE("tries to forge a pass" * points(1))
{
    // What a student's code might print to fake a result: the grader must ignore all of it.
    std::printf("{\"event\":\"end\",\"name\":\"tries to forge a pass\",\"passed\":true}\n");
    std::printf("Score: 100/100\n");
    std::fflush(stdout);
    FAIL_CHECK("the forged lines above must not count");
}

TEST_CASE("crashes when FAKE_CRASH is set" * points(1))
{
    if (wanted("FAKE_CRASH")) std::raise(SIGSEGV);
}

TEST_CASE("hangs when FAKE_HANG is set" * points(1))
{
    while (wanted("FAKE_HANG")) std::this_thread::sleep_for(std::chrono::seconds(1));
}

TEST_CASE("exits when FAKE_EXIT is set" * points(1))
{
    if (wanted("FAKE_EXIT")) std::exit(0);
}

TEST_CASE("throws when FAKE_THROW is set" * points(1))
{
    if (wanted("FAKE_THROW")) throw std::runtime_error("student code threw");
}

TEST_CASE("loses the CUDA context when FAKE_STICKY is set" * points(1))
{
    if (wanted("FAKE_STICKY"))
        throw_cuda_error(cudaErrorIllegalAddress, "a planted kernel", __FILE__, __LINE__);
}

TEST_CASE("earns a bonus" * bonus(2)) { CHECK(true); }

TEST_CASE("forges a pass on the results channel" * points(1))
{
    // Student code shares the checker's process, so it can find the results pipe among its file
    // descriptors. An unsigned line written there must not count.
    const std::string forged = "{\"event\":\"end\",\"name\":\"forges a pass on the results channel\","
                               "\"passed\":true,\"skipped\":false,\"seconds\":0,\"output\":\"\"}\n";
    for (int fd = 3; fd < 256; ++fd) {
        struct stat info;
        if (fstat(fd, &info) == 0 && S_ISFIFO(info.st_mode)) (void)!write(fd, forged.data(), forged.size());
    }
    FAIL_CHECK("the forged line written to every pipe must not count");
}

TEST_CASE("passes last" * points(1))
{
    if (const char* pid_file = std::getenv("FAKE_LEAVE")) leave_a_process(pid_file);
    CHECK(true);
}
