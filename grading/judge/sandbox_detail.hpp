/// \file sandbox_detail.hpp
/// \brief What sandbox.cpp and sandbox_view.cpp share (running a command, joining command words),
/// so neither holds a copy.
#pragma once

#include <string>
#include <vector>

namespace workbook::sandbox_detail {

/// \brief What a command did (run_command): whether it exited 0, how it ended, and what it wrote
/// on the stream that was kept.
struct Outcome {
    /// Whether the command exited with status 0.
    bool succeeded = false;
    /// How it ended: "exited with status 1" or "was killed by signal 9", say ("exited with status
    /// 0" where it succeeded), or why it could not be started; empty where its end could not be
    /// waited for.
    std::string status;
    /// What the command wrote on the kept stream.
    std::string output;
};

/// \brief Runs a command (its first word a path) with this process's environment and no other
/// descriptor of ours, waits for it, and keeps what it writes on `kept`; the other stream, and its
/// input, are /dev/null. A path that cannot be run gives "exited with status 127".
/// \param command the command's words, the first the program's path (no search of PATH)
/// \param kept the stream to keep: 1, standard output, or 2, standard error
/// \return what the command did
Outcome run_command(std::vector<std::string> command, int kept);

/// \brief Joins two lists of command words: the words of `a`, then those of `b`.
/// \param a the first words
/// \param b the words that follow them
inline std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace workbook::sandbox_detail
