#include "buffers.hpp"

#include <map>
#include <mutex>

namespace workbook {

namespace {
struct NotedArrays {
    std::mutex mutex;
    std::multimap<const char*, std::size_t> bytes;  // by first byte
};
// Never destroyed: buffers that are statics themselves (a test's cached case, the L2 flush
// buffer) forget their arrays here as the program exits, after a static table would be gone.
NotedArrays& noted()
{
    static NotedArrays* arrays = new NotedArrays;
    return *arrays;
}
}  // namespace

void note_device_array(const void* data, std::size_t bytes)
{
    std::lock_guard<std::mutex> lock(noted().mutex);
    noted().bytes.emplace(static_cast<const char*>(data), bytes);
}

void forget_device_array(const void* data)
{
    std::lock_guard<std::mutex> lock(noted().mutex);
    const auto found = noted().bytes.find(static_cast<const char*>(data));
    if (found != noted().bytes.end()) noted().bytes.erase(found);
}

std::size_t array_extent(const void* pointer)
{
    const char* at = static_cast<const char*>(pointer);
    std::lock_guard<std::mutex> lock(noted().mutex);
    std::size_t extent = 0, smallest = 0;
    for (const auto& [start, bytes] : noted().bytes) {
        if (start > at) break;  // ordered by start: none further holds it
        if (at < start + bytes && (smallest == 0 || bytes < smallest)) {
            smallest = bytes;
            extent = static_cast<std::size_t>(start + bytes - at);
        }
    }
    return extent;
}

namespace {
bool element_changed(const std::vector<unsigned char>& guard, std::size_t element, std::size_t size)
{
    for (std::size_t b = 0; b < size; ++b)
        if (guard[element * size + b] != canary_byte) return true;
    return false;
}
}  // namespace

GuardReport inspect_guards(const std::vector<unsigned char>& guard_before,
                           const std::vector<unsigned char>& guard_after, std::size_t elem_size,
                           std::size_t count)
{
    GuardReport report;
    const std::size_t before_elems = guard_before.size() / elem_size;
    for (std::size_t e = 0; e < before_elems; ++e) {
        if (!element_changed(guard_before, e, elem_size)) continue;
        ++report.before;
        report.first_before = before_elems - e;  // the last hit seen is the nearest to element 0
    }
    const std::size_t after_elems = guard_after.size() / elem_size;
    for (std::size_t e = 0; e < after_elems; ++e) {
        if (!element_changed(guard_after, e, elem_size)) continue;
        if (report.after == 0) report.first_after = count + e;
        ++report.after;
    }
    return report;
}

std::string GuardReport::describe(const std::string& name, std::size_t count) const
{
    std::string text;
    if (after > 0) {
        text += std::to_string(after) + " element(s) written past the end of " + name + " (" +
                name + " has " + std::to_string(count) + " elements; the first stray write is at " +
                name + "[" + std::to_string(first_after) + "])";
    }
    if (before > 0) {
        if (!text.empty()) text += "; ";
        text += std::to_string(before) + " element(s) written before the start of " + name +
                " (the nearest at " + name + "[-" + std::to_string(first_before) + "])";
    }
    return text;
}

}  // namespace workbook
