// What the development programs of bench/dev/ share around their versions: the command line's
// list of versions and sizes, and a kernel's registers as ptxas gave them.
#pragma once

#include "common/check.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace dev {

// "1024,2048,4096" -> {1024, 2048, 4096}.
inline std::vector<int> parse_list(const char* text)
{
    std::vector<int> values;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');) values.push_back(std::atoi(item.c_str()));
    return values;
}

// Reads the command line, [VERSION ...] [--sizes 1024,2048,4096], into the versions chosen (all of
// them when none is named) and the sizes; prints the usage and the versions' names and returns
// false on anything else.
template <typename Versions>
bool parse_arguments(int argc, char** argv, const Versions& versions, std::vector<int>& chosen, std::vector<int>& sizes)
{
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            sizes = parse_list(argv[++i]);
        } else if (argv[i][0] >= '0' && argv[i][0] <= '9' && std::atoi(argv[i]) < static_cast<int>(versions.size())) {
            chosen.push_back(std::atoi(argv[i]));
        } else {
            std::fprintf(stderr, "usage: %s [VERSION ...] [--sizes 1024,2048,4096]\nversions:\n", argv[0]);
            for (std::size_t v = 0; v < versions.size(); ++v) std::fprintf(stderr, "  %zu  %s\n", v, versions[v].name);
            return false;
        }
    }
    if (chosen.empty())
        for (std::size_t v = 0; v < versions.size(); ++v) chosen.push_back(static_cast<int>(v));
    return true;
}

// A kernel's registers a thread, and its spills if any; "-" for none (a version that picks its
// kernel at run time).
inline std::string registers_of(const void* kernel)
{
    if (kernel == nullptr) return "-";
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    std::string text = std::to_string(attributes.numRegs);
    if (attributes.localSizeBytes > 0) text += " (" + std::to_string(attributes.localSizeBytes) + " B spilled)";
    return text;
}

}  // namespace dev
