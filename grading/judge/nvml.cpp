// The device memory of given processes, from NVML loaded at run time (nvml.hpp).
#include "nvml.hpp"

#include <cuda_runtime.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace workbook::nvml {

namespace {

// The little of nvml.h this needs (the toolkit does not always ship the header).
using Return = int;  // nvmlReturn_t
constexpr Return kSuccess = 0, kInsufficientSize = 7;
using Device = struct DeviceOpaque*;  // nvmlDevice_t
constexpr unsigned long long kValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE
// nvmlProcessInfo_t, as _v2 and _v3 of nvmlDeviceGetComputeRunningProcesses fill it.
struct ProcessInfo {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};

// libnvidia-ml.so.1, loaded and initialised once; what went wrong when it could not be.
struct Library {
    Return (*get_handle)(const char*, Device*) = nullptr;            // nvmlDeviceGetHandleByPciBusId_v2
    Return (*get_processes)(Device, unsigned int*, ProcessInfo*) = nullptr;  // ..._v3 or _v2
    const char* (*error_string)(Return) = nullptr;
    std::string error;

    Library()
    {
        void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            error = "NVML (libnvidia-ml.so.1) could not be loaded";
            return;
        }
        const auto init = reinterpret_cast<Return (*)()>(dlsym(handle, "nvmlInit_v2"));
        get_handle = reinterpret_cast<decltype(get_handle)>(dlsym(handle, "nvmlDeviceGetHandleByPciBusId_v2"));
        get_processes = reinterpret_cast<decltype(get_processes)>(dlsym(handle, "nvmlDeviceGetComputeRunningProcesses_v3"));
        if (get_processes == nullptr)
            get_processes = reinterpret_cast<decltype(get_processes)>(dlsym(handle, "nvmlDeviceGetComputeRunningProcesses_v2"));
        error_string = reinterpret_cast<decltype(error_string)>(dlsym(handle, "nvmlErrorString"));
        if (init == nullptr || get_handle == nullptr || get_processes == nullptr) {
            error = "this NVML is too old (no nvmlDeviceGetComputeRunningProcesses_v2)";
            get_processes = nullptr;
            return;
        }
        if (const Return status = init(); status != kSuccess) {
            error = "NVML did not start: " + describe(status);
            get_processes = nullptr;
        }
    }

    std::string describe(Return status) const
    {
        const char* text = error_string ? error_string(status) : nullptr;
        return text ? std::string(text) : "error " + std::to_string(status);
    }
};

const Library& library()
{
    static const Library loaded;
    return loaded;
}

// NVML's handle of the judge's current CUDA device, by its PCI bus id.
std::optional<Device> current_device(std::string& why_not)
{
    static std::map<std::string, Device> found;
    int device = 0;
    char bus_id[64] = {};
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
        why_not = "CUDA did not say which GPU this is";
        return std::nullopt;
    }
    if (const auto known = found.find(bus_id); known != found.end()) return known->second;
    Device handle = nullptr;
    if (const Return status = library().get_handle(bus_id, &handle); status != kSuccess) {
        why_not = std::string("NVML does not know the GPU at PCI bus id ") + bus_id + ": " + library().describe(status);
        return std::nullopt;
    }
    return found[bus_id] = handle;
}

// The processes NVML lists on `device`, with the memory each holds there.
std::optional<std::vector<ProcessInfo>> running_processes(Device device, std::string& why_not)
{
    std::vector<ProcessInfo> infos(64);
    for (int attempt = 0; attempt < 4; ++attempt) {
        auto count = static_cast<unsigned int>(infos.size());
        const Return status = library().get_processes(device, &count, infos.data());
        if (status == kSuccess) {
            infos.resize(std::min<std::size_t>(count, infos.size()));
            return infos;
        }
        if (status != kInsufficientSize) {
            why_not = "NVML did not list the GPU's processes: " + library().describe(status);
            return std::nullopt;
        }
        infos.resize(std::max<std::size_t>(count, infos.size()) + 16);  // more started meanwhile: room to spare
    }
    why_not = "NVML's list of the GPU's processes kept growing";
    return std::nullopt;
}

std::string pid_list(const std::vector<pid_t>& pids)
{
    std::string text;
    for (std::size_t i = 0; i < pids.size() && i < 8; ++i) text += (i ? ", " : "") + std::to_string(pids[i]);
    if (pids.size() > 8) text += ", ...";
    return text.empty() ? "none" : text;
}

// The parent of `pid` from /proc/PID/stat, or 0 when it is gone. Read with read(2): a process
// that ends while it is read fails the read with ESRCH, on which a stream would throw.
pid_t parent_of(const char* pid)
{
    const int fd = open((std::string("/proc/") + pid + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buffer[1024];
    const ssize_t n = read(fd, buffer, sizeof buffer);
    close(fd);
    const std::string text = n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
    const std::size_t end_of_name = text.rfind(')');  // the name may hold spaces and parentheses
    if (end_of_name == std::string::npos) return 0;
    std::istringstream fields(text.substr(end_of_name + 1));
    char state = 0;
    pid_t parent = 0;
    fields >> state >> parent;
    return parent;
}

}  // namespace

std::vector<pid_t> process_tree(pid_t root)
{
    std::multimap<pid_t, pid_t> children;
    bool root_found = false;
    if (DIR* proc = opendir("/proc")) {
        while (const dirent* entry = readdir(proc)) {
            const pid_t pid = std::atoi(entry->d_name);
            if (pid <= 0) continue;
            const pid_t parent = parent_of(entry->d_name);
            if (pid == root) root_found = parent != 0;
            if (parent != 0) children.emplace(parent, pid);
        }
        closedir(proc);
    }
    std::vector<pid_t> tree;
    if (root_found) tree.push_back(root);
    std::vector<pid_t> below = {root};
    while (!below.empty()) {
        const pid_t parent = below.back();
        below.pop_back();
        for (auto [child, end] = children.equal_range(parent); child != end; ++child) {
            if (std::find(tree.begin(), tree.end(), child->second) != tree.end()) continue;
            tree.push_back(child->second);
            below.push_back(child->second);
        }
    }
    return tree;
}

std::optional<std::size_t> device_bytes_of(const std::vector<pid_t>& pids, std::string* why_not)
{
    std::string why;
    const auto answer = [&](std::optional<std::size_t> bytes) {
        if (why_not != nullptr) *why_not = bytes ? "" : why;
        return bytes;
    };
    if (!library().get_processes) {
        why = library().error;
        return answer(std::nullopt);
    }
    const std::optional<Device> device = current_device(why);
    if (!device) return answer(std::nullopt);
    const std::optional<std::vector<ProcessInfo>> infos = running_processes(*device, why);
    if (!infos) return answer(std::nullopt);
    const std::set<pid_t> wanted(pids.begin(), pids.end());
    std::size_t bytes = 0;
    bool matched = false;
    std::vector<pid_t> listed;
    for (const ProcessInfo& info : *infos) {
        listed.push_back(static_cast<pid_t>(info.pid));
        if (wanted.count(static_cast<pid_t>(info.pid)) == 0) continue;
        if (info.usedGpuMemory == kValueNotAvailable) {
            why = "NVML gives no per-process figure of device memory here";
            return answer(std::nullopt);
        }
        matched = true;
        bytes += static_cast<std::size_t>(info.usedGpuMemory);
    }
    if (!matched) {
        why = "NVML lists processes " + pid_list(listed) + " on this GPU, none of them " + pid_list(pids);
        return answer(std::nullopt);
    }
    return answer(bytes);
}

}  // namespace workbook::nvml
