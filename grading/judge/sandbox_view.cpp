// The runner's minimal view of the files that bubblewrap builds (sandbox.hpp, level 4), apart from finding the sandbox.
#include "sandbox.hpp"

#include "sandbox_detail.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace workbook {

using namespace sandbox_detail;

namespace {

namespace fs = std::filesystem;

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// The system's dynamic loader: the one that loaded this process, as its map of files names it
// (ld-linux-x86-64.so.2 on x86-64, ld-linux-aarch64.so.1 on ARM), or "".
const std::string& dynamic_loader()
{
    static const std::string loader = [] {
        std::ifstream maps("/proc/self/maps");
        for (std::string line; std::getline(maps, line);) {
            const std::size_t path = line.find('/');
            if (path == std::string::npos) continue;
            const std::string file = line.substr(path);
            if (starts_with(file.substr(file.find_last_of('/') + 1), "ld-linux")) return file;
        }
        return std::string();
    }();
    return loader;
}

// The files the system's loader opens to start `object` (a program or a library): its DT_NEEDED
// closure and the loader itself, under the names it opens them by, as `ld.so --list` says.
// That loader is always the system's, never the one `object` names (PT_INTERP): listing maps
// the files and runs none of their code. Asked once per object and process.
std::vector<std::string> libraries_of(const std::string& object)
{
    static std::mutex mutex;
    static std::map<std::string, std::vector<std::string>> known;
    const std::lock_guard<std::mutex> lock(mutex);
    const auto found = known.find(object);
    if (found != known.end()) return found->second;
    std::vector<std::string>& libraries = known[object];
    if (dynamic_loader().empty()) return libraries;
    // Lines such as "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and, for the loader,
    // "/lib64/ld-linux-x86-64.so.2 (0x...)"; a library not found says "=> not found" and is left
    // out (the program then fails to start, saying which).
    std::istringstream lines(run_command({dynamic_loader(), "--list", object}, 1).output);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string word, path;
        words >> word;
        if (starts_with(word, "/")) path = word;
        else if (words >> word && word == "=>" && words >> word && starts_with(word, "/")) path = word;
        if (!path.empty()) libraries.push_back(path);
    }
    return libraries;
}

// The CUDA driver's libraries, which the CUDA runtime opens at run time (no DT_NEEDED names
// them): libcuda.so*, libcudadebugger.so* and libnvidia-*.so* (the PTX compiler, NVML, ...)
// beside libcuda.so.1, where this process finds it and where the file it names is, and what
// libcuda.so.1 needs in turn. None where there is no driver (no GPU).
const std::vector<std::string>& driver_libraries()
{
    static const std::vector<std::string> libraries = [] {
        std::vector<std::string> files;
        // The judge loads the driver anyway; loading it here finds it where the runner's loader
        // will, with the same LD_LIBRARY_PATH and cache.
        void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        link_map* map = nullptr;
        if (driver == nullptr || dlinfo(driver, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr ||
            map->l_name == nullptr || map->l_name[0] != '/')
            return files;
        const fs::path as_found = map->l_name;
        std::error_code error;
        std::set<fs::path> folders = {as_found.parent_path()};
        if (const fs::path real = fs::canonical(as_found, error); !error) folders.insert(real.parent_path());
        for (const fs::path& folder : folders)
            for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
                const std::string name = entry.path().filename();
                const bool driver_file = starts_with(name, "libcuda.so") || starts_with(name, "libcudadebugger.so") ||
                                         (starts_with(name, "libnvidia-") && name.find(".so") != std::string::npos);
                std::error_code ignored;
                if (driver_file && entry.is_regular_file(ignored)) files.push_back(entry.path());
            }
        // Those of the others a CUDA program opens (the PTX compiler, NVVM, NVML) need no more of
        // the system's than libcuda.so.1 does (libc, libm, libdl, libpthread, librt; seen on the
        // H100 machine, driver 580); the graphics ones need X11's, and no CUDA program opens them.
        for (const std::string& library : libraries_of(as_found)) files.push_back(library);
        return files;
    }();
    return libraries;
}

// Whether `path` is an executable in ELF, for this machine's processor (as this process is).
bool is_native_executable(const std::string& path)
{
    const auto machine = [](const std::string& file) {
        unsigned char header[20] = {};
        std::ifstream in(file, std::ios::binary);
        in.read(reinterpret_cast<char*>(header), sizeof header);
        if (!in || std::memcmp(header, "\177ELF", 4) != 0) return -1;
        return header[18] | header[19] << 8;  // e_machine, little-endian on the machines CUDA runs on
    };
    return access(path.c_str(), X_OK) == 0 && machine(path) >= 0 && machine(path) == machine("/proc/self/exe");
}

// The GPU's device files: /dev/nvidia0..., nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-caps/.
std::vector<std::string> gpu_devices()
{
    std::vector<std::string> devices;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator("/dev", error))
        if (starts_with(entry.path().filename(), "nvidia")) devices.push_back(entry.path());
    std::sort(devices.begin(), devices.end());
    return devices;
}

// What Nsight Compute shares between its runs on this machine: /tmp/nvidia, where it keeps one
// lock file per GPU (nsight_compute/lock.<the GPU's UUID>, seen with ncu 2025.3) by which one
// process at a time profiles it. The runner's own /tmp must hold the machine's folder, or a
// reading in one view would profile while another does. Made if missing, open to every user as
// /tmp is (ncu as root outside the view, and as nobody inside, both use it).
std::vector<std::string> nsight_compute_shared()
{
    const std::string folder = "/tmp/nvidia";
    if (mkdir(folder.c_str(), 01777) == 0) chmod(folder.c_str(), 01777);
    struct stat info;
    if (lstat(folder.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) return {folder};
    return {};
}

// The words that build the runner's view of the files with bubblewrap: an empty root (its
// tmpfs) into which only the folders and files named are bound, read-only, at their own paths;
// and what a tool shares with its other runs, writable.
class View {
public:
    void folder(const std::string& path) { folders_.push_back(path); }
    void file(const std::string& path) { files_.insert(path); }
    void files(const std::vector<std::string>& paths) { files_.insert(paths.begin(), paths.end()); }
    void shared(const std::string& path) { shared_.push_back(path); }

    std::vector<std::string> words(const std::string& program, const std::string& program_inside) const
    {
        // What is bound, at which path: a file in a folder bound already is there (bubblewrap
        // could not make its mount point in a read-only folder).
        std::vector<std::pair<std::string, std::string>> binds;
        for (const std::string& folder : folders_) binds.emplace_back(folder, folder);
        for (const std::string& file : files_) {
            const bool inside = std::any_of(folders_.begin(), folders_.end(), [&](const std::string& folder) {
                return starts_with(file, folder + "/");
            });
            if (!inside) binds.emplace_back(file, file);
        }
        // The loader's cache of where each library is, read when the CUDA runtime opens libcuda.so.1.
        if (access("/etc/ld.so.cache", R_OK) == 0) binds.emplace_back("/etc/ld.so.cache", "/etc/ld.so.cache");
        binds.emplace_back(program, program_inside);
        // The folders above them, made first and open to every user: bubblewrap makes those it
        // needs open to root alone (0700).
        std::set<std::string> above;
        for (const auto& bind : binds)
            for (fs::path folder = fs::path(bind.second).parent_path(); folder != folder.root_path();
                 folder = folder.parent_path())
                above.insert(folder);
        std::vector<std::string> words;
        for (const std::string& folder : above)  // in order: a folder before what it holds
            words = words + std::vector<std::string>{"--perms", "0755", "--dir", folder};
        for (const auto& [from, to] : binds) words = words + std::vector<std::string>{"--ro-bind", from, to};
        // Its own /proc, which CUDA IPC needs to show the namespace's processes; a /dev of the
        // usual few (null, zero, urandom, ...) and the GPU's; an empty /tmp and /dev/shm that
        // every user may write (sticky), as on any machine. And /sys, read-only: CUPTI reads the
        // clock source there (devices/system/clocksource) to put the GPU's timestamps on the
        // CPU's clock, and the NUMA nodes and PCI devices. Without it, on the H100 machine, the
        // recordings of lab 03's runner missed every kernel from its twelfth test on
        // ("launched no kernel"), and lab 02's bandwidth varied by 38%.
        words = words + std::vector<std::string>{"--proc", "/proc", "--dev", "/dev", "--ro-bind-try", "/sys", "/sys"};
        for (const std::string& device : gpu_devices()) words = words + std::vector<std::string>{"--dev-bind", device, device};
        words = words + std::vector<std::string>{"--perms", "1777", "--tmpfs", "/dev/shm", "--perms", "1777", "--tmpfs", "/tmp"};
        for (const std::string& path : shared_) words = words + std::vector<std::string>{"--bind", path, path};
        return words + std::vector<std::string>{"--chdir", "/"};
    }

private:
    std::vector<std::string> folders_;
    std::set<std::string> files_;
    std::vector<std::string> shared_;
};

}  // namespace

ToolInstall find_tool_install(const std::string& tool, const std::vector<std::string>& homes)
{
    ToolInstall install;
    std::error_code error;
    const fs::path real = fs::canonical(tool, error);
    if (error) {
        install.why_not = tool + " cannot be followed: " + error.message();
        return install;
    }
    if (is_native_executable(real)) {
        install.executable = real;
        install.folder = real.parent_path();
        return install;
    }
    // A script. The real tool is an executable of the script's name, at most five folders down
    // from the folder above the script's (the toolkit's: nsight-compute-<version>/target/<platform>/ncu),
    // or else from NVIDIA's other homes (the .deb's nsight-compute/<version>/target/<platform>/ncu).
    const std::string name = real.filename();
    std::vector<fs::path> roots = {real.parent_path().parent_path()};
    roots.insert(roots.end(), homes.begin(), homes.end());
    std::string looked;
    for (const fs::path& root : roots) {
        looked += (looked.empty() ? "" : " or ") + root.string();
        std::vector<fs::path> found;
        fs::recursive_directory_iterator walk(root, fs::directory_options::skip_permission_denied, error);
        for (; !error && walk != fs::recursive_directory_iterator(); walk.increment(error)) {
            const fs::directory_entry& entry = *walk;
            std::error_code ignored;
            if (entry.path() == real.parent_path() || walk.depth() >= 4) walk.disable_recursion_pending();
            if (entry.path().filename() == name && entry.is_regular_file(ignored) && !entry.is_symlink(ignored) &&
                is_native_executable(entry.path()))
                found.push_back(entry.path());
        }
        error.clear();
        if (found.empty()) continue;
        // Several versions side by side (nsight-compute-2025.3.0 and 2025.3.1): the last by name.
        std::sort(found.begin(), found.end());
        install.executable = found.back();
        install.folder = root / *found.back().lexically_relative(root).begin();
        return install;
    }
    install.why_not = "no executable named " + name + " below " + looked + ", which " + real.string() +
                      " (not an executable for this machine) could start";
    return install;
}

std::vector<std::string> sandboxed_command(const Sandbox& sandbox, const std::vector<std::string>& tool,
                                           const std::string& program)
{
    std::vector<std::string> argv = sandbox.spaces, tool_words = tool;
    std::string program_inside = program;
    if (sandbox.minimal_view) {
        View view;
        view.files(libraries_of(program));
        if (!sandbox.user.empty()) {
            view.file(sandbox.user[0]);
            view.files(libraries_of(sandbox.user[0]));
        }
        if (!tool.empty()) {
            // The tool's real executable, its install folder, and what it and the libraries
            // beside it (those it puts into the runner: LD_PRELOAD) load. A tool not found is
            // named as given, bubblewrap then says it cannot run it, and this says why.
            const ToolInstall install = find_tool_install(tool[0]);
            if (!install.why_not.empty())
                std::fprintf(stderr, "runner sandbox: cannot run %s in the runner's view: %s\n", tool[0].c_str(),
                             install.why_not.c_str());
            else {
                tool_words[0] = install.executable;
                view.folder(install.folder);
                view.files(libraries_of(install.executable));
                std::error_code error;
                for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(install.executable).parent_path(), error))
                    if (entry.path().filename().string().find(".so") != std::string::npos)
                        view.files(libraries_of(entry.path()));
                if (fs::path(install.executable).filename() == "ncu")
                    for (const std::string& path : nsight_compute_shared()) view.shared(path);
            }
        }
        view.files(driver_libraries());
        program_inside = "/runner/" + fs::path(program).filename().string();
        argv = argv + view.words(program, program_inside);
    }
    return argv + sandbox.user + tool_words + std::vector<std::string>{program_inside};
}

}  // namespace workbook
