#include "sweep.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fstream>

namespace workbook {

std::string sweep_table(const Sweep& sweep)
{
    std::string text = sweep.experiment + "\n";
    char line[160];
    std::snprintf(line, sizeof line, "  %8s  %12s  %12s  %10s  %10s\n", "threads", "median ms",
                  sweep.unit.c_str(), ("% " + sweep.ceiling_name).substr(0, 10).c_str(), "occupancy");
    text += line;
    for (const SweepPoint& p : sweep.points) {
        std::snprintf(line, sizeof line, "  %8d  %12.4f  %12.1f  %9.1f%%  %9.0f%%\n", p.threads_per_block,
                      p.ms, p.rate, sweep.ceiling > 0 ? 100 * p.rate / sweep.ceiling : 0.0,
                      100 * p.occupancy);
        text += line;
    }
    return text;
}

void append_sweep_csv(const std::string& path, const Sweep& sweep, long long size)
{
    std::ifstream existing(path);
    const bool fresh = !existing.good();
    existing.close();
    std::ofstream out(path, std::ios::app);
    if (fresh)
        out << "experiment,size,threads_per_block,median_ms,rate,unit,percent_of_ceiling,ceiling,"
               "predicted_occupancy\n";
    for (const SweepPoint& p : sweep.points)
        out << '"' << sweep.experiment << "\"," << size << ',' << p.threads_per_block << ',' << p.ms
            << ',' << p.rate << ',' << sweep.unit << ','
            << (sweep.ceiling > 0 ? 100 * p.rate / sweep.ceiling : 0) << ',' << sweep.ceiling_name
            << ',' << p.occupancy << '\n';
}

std::string output_folder(const std::string& name)
{
    char path[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    std::string exe = n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string("./x");
    std::string bin = exe.substr(0, exe.find_last_of('/'));        // build/bin
    std::string build = bin.substr(0, bin.find_last_of('/'));      // build
    const std::string folder = build + "/" + name;
    mkdir(folder.c_str(), 0755);
    return folder;
}

void progress(int step, int steps, const std::string& what)
{
    std::printf("  [%d/%d] %s\n", step, steps, what.c_str());
    std::fflush(stdout);
}

}  // namespace workbook
