#include "compare.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace workbook {

namespace {
constexpr std::size_t kShownMismatches = 8;
constexpr std::size_t kShownRuns = 4;
constexpr std::size_t kMapMaxRows = 16;
constexpr std::size_t kMapMaxCols = 64;

std::string number(double v)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.9g", v);
    return text;
}

// Index i falls in cell floor(i * cells / size), so cell c holds the indices from
// ceil(c * size / cells) up to, not including, ceil((c + 1) * size / cells).
std::size_t cell_of(std::size_t i, std::size_t size, std::size_t cells) { return i * cells / size; }
std::size_t cell_start(std::size_t c, std::size_t size, std::size_t cells)
{
    return (c * size + cells - 1) / cells;
}
std::size_t cell_size(std::size_t c, std::size_t size, std::size_t cells)
{
    return cell_start(c + 1, size, cells) - cell_start(c, size, cells);
}
}  // namespace

std::string Tolerance::describe() const
{
    std::string text;
    if (abs == 0 && rel == 0) {
        text = "exact match";
    } else {
        text = "|got - ref| <= ";
        if (abs != 0) text += number(abs);
        if (abs != 0 && rel != 0) text += " + ";
        if (rel != 0) text += number(rel) + "*|ref|";
    }
    if (!why.empty()) text += " (" + why + ")";
    return text;
}

std::size_t Comparison::map_rows() const { return std::min(shape.rows, kMapMaxRows); }
std::size_t Comparison::map_cols() const { return std::min(shape.cols, kMapMaxCols); }

std::string Comparison::element(std::size_t index) const
{
    if (!shape.matrix) return name + "[" + std::to_string(index) + "]";
    return name + "[" + std::to_string(index / shape.cols) + "][" +
           std::to_string(index % shape.cols) + "]";
}

void Comparison::record(std::size_t index, double expected, double got, bool never_written)
{
    if (bad() == 0) first_bad = index;
    last_bad = index;
    (never_written ? unwritten : wrong) += 1;
    if (first.size() < kShownMismatches) first.push_back({index, expected, got, never_written});
    if (!bad_runs.empty() && bad_runs.back().second == index) {
        bad_runs.back().second = index + 1;
    } else {
        ++bad_run_count;
        if (bad_runs.size() < kShownRuns) bad_runs.push_back({index, index + 1});
    }
    if (shape.matrix && shape.cols > 0) {
        const std::size_t cell = cell_of(index / shape.cols, shape.rows, map_rows()) * map_cols() +
                                 cell_of(index % shape.cols, shape.cols, map_cols());
        map_bad[cell] += 1;
        map_unwritten[cell] += never_written;
    }
}

std::string Comparison::map() const
{
    if (!shape.matrix || map_bad.empty()) return "";
    const std::size_t rows = map_rows(), cols = map_cols();
    std::ostringstream out;
    out << "  where the failures are (" << shape.rows << " x " << shape.cols << " " << name
        << ", row 0 at the top; each cell is about " << (shape.rows + rows - 1) / rows << " x "
        << (shape.cols + cols - 1) / cols << " elements):\n";
    out << "    +" << std::string(cols, '-') << "+\n";
    for (std::size_t r = 0; r < rows; ++r) {
        out << "    |";
        for (std::size_t c = 0; c < cols; ++c) {
            const std::size_t cell = r * cols + c;
            const std::size_t total = cell_size(r, shape.rows, rows) * cell_size(c, shape.cols, cols);
            const std::size_t bad_here = map_bad[cell], unwritten_here = map_unwritten[cell];
            char mark = '.';
            if (bad_here > unwritten_here) mark = bad_here == total ? 'X' : 'x';
            else if (bad_here > 0) mark = bad_here == total ? 'U' : 'u';
            out << mark;
        }
        out << "|\n";
    }
    out << "    +" << std::string(cols, '-') << "+\n";
    out << "    . all right   X all wrong   x some wrong   U never written   u some never written\n";
    return out.str();
}

std::string Comparison::report() const
{
    std::ostringstream out;
    const std::size_t total = shape.count();
    if (ok()) {
        out << name << ": all " << total << " elements match (" << tolerance.describe()
            << "; largest error " << number(max_error) << ")\n";
        return out.str();
    }
    out << name << ": " << bad() << " of " << total << " elements are wrong";
    if (unwritten > 0 && wrong > 0)
        out << " (" << unwritten << " never written, " << wrong << " with a wrong value)";
    else if (unwritten > 0)
        out << " (all of them never written: they still hold the poison value)";
    out << "\n  tolerance: " << tolerance.describe() << "\n";
    // When nothing was written, a few lines make the point; the rest would only repeat it.
    const std::size_t shown = wrong == 0 ? std::min<std::size_t>(first.size(), 3) : first.size();
    for (std::size_t k = 0; k < shown; ++k) {
        const Mismatch& m = first[k];
        out << "  " << element(m.index) << ": expected " << number(m.expected) << ", got ";
        out << (m.unwritten ? std::string("nothing (never written)") : number(m.got)) << "\n";
    }
    if (bad() > shown) out << "  ... and " << bad() - shown << " more\n";
    if (shape.matrix) {
        out << map();
    } else {
        out << "  failing indices:";
        for (const auto& run : bad_runs) {
            if (run.second - run.first == 1) out << " " << run.first;
            else out << " " << run.first << ".." << run.second - 1;
        }
        if (bad_run_count > bad_runs.size())
            out << " ... (" << bad_run_count << " separate runs in all)";
        out << "\n";
    }
    return out.str();
}

}  // namespace workbook
