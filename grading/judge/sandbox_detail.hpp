// What sandbox.cpp and sandbox_view.cpp share (running a command, joining command words), so neither holds a copy.
#pragma once

#include <string>
#include <vector>

namespace workbook::sandbox_detail {

// What a command did: whether it exited 0, and what it wrote on the stream that was kept.
struct Outcome {
    bool succeeded = false;
    std::string status;  // "exited with status 1", say, where it did not succeed
    std::string output;
};

// Runs a command (its first word a path) with this process's environment and no other
// descriptor of ours, and keeps what it writes on `kept` (1: standard output, 2: standard
// error); the other stream, and its input, are /dev/null.
Outcome run_command(std::vector<std::string> command, int kept);

inline std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace workbook::sandbox_detail
