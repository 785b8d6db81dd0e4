// Sending and receiving the judge's and the runner's messages (wire.hpp).
#include "wire.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

namespace workbook::wire {

Reader& Reader::operator=(Reader&& other) noexcept
{
    if (this == &other) return *this;
    for (int fd : fds_)
        if (fd >= 0) ::close(fd);
    bytes_ = std::move(other.bytes_);
    at_ = other.at_;
    fds_ = std::move(other.fds_);
    other.fds_.clear();
    other.at_ = 0;
    return *this;
}

Reader::~Reader()
{
    for (int fd : fds_)
        if (fd >= 0) ::close(fd);
}

int Reader::take_fd(std::uint32_t index)
{
    if (index >= fds_.size() || fds_[index] < 0)
        throw std::runtime_error("a message between judge and runner lacks a descriptor it names");
    const int fd = fds_[index];
    fds_[index] = -1;
    return fd;
}

bool send(int socket, const Message& message)
{
    if (message.bytes().size() > kMaxMessage) throw std::runtime_error("a message for the runner is too large");
    iovec part{const_cast<char*>(message.bytes().data()), message.bytes().size()};
    msghdr header{};
    header.msg_iov = &part;
    header.msg_iovlen = 1;
    std::vector<char> control;
    if (!message.fds().empty()) {
        const std::size_t payload = message.fds().size() * sizeof(int);
        control.assign(CMSG_SPACE(payload), 0);
        header.msg_control = control.data();
        header.msg_controllen = control.size();
        cmsghdr* rights = CMSG_FIRSTHDR(&header);
        rights->cmsg_level = SOL_SOCKET;
        rights->cmsg_type = SCM_RIGHTS;
        rights->cmsg_len = CMSG_LEN(payload);
        std::memcpy(CMSG_DATA(rights), message.fds().data(), payload);
    }
    for (;;) {
        const ssize_t sent = ::sendmsg(socket, &header, MSG_NOSIGNAL);
        if (sent >= 0) return true;
        if (errno != EINTR) return false;
    }
}

bool receive(int socket, Reader& message)
{
    std::string bytes(kMaxMessage, '\0');
    iovec part{bytes.data(), bytes.size()};
    constexpr std::size_t kMaxFds = 16;
    std::vector<char> control(CMSG_SPACE(kMaxFds * sizeof(int)), 0);
    msghdr header{};
    header.msg_iov = &part;
    header.msg_iovlen = 1;
    header.msg_control = control.data();
    header.msg_controllen = control.size();
    ssize_t got;
    do got = ::recvmsg(socket, &header, MSG_CMSG_CLOEXEC);
    while (got < 0 && errno == EINTR);
    if (got <= 0) return false;
    std::vector<int> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const auto* data = reinterpret_cast<const int*>(CMSG_DATA(c));
        fds.insert(fds.end(), data, data + count);
    }
    bytes.resize(static_cast<std::size_t>(got));
    message = Reader(std::move(bytes), std::move(fds));
    return true;
}

bool may_spin()
{
    static const bool spin = [] {
        cpu_set_t cpus;
        return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 8;
    }();
    return spin;
}

bool poll_for_message(int socket, int most_ms)
{
    if (!may_spin()) return false;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(most_ms);
    do {
        pollfd waiting{socket, POLLIN, 0};
        if (::poll(&waiting, 1, 0) > 0) return true;
    } while (std::chrono::steady_clock::now() < until);
    return false;
}

void release_output()
{
    std::fflush(stdout);
    std::fflush(stderr);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null < 0) return;
    dup2(null, 1);
    dup2(null, 2);
    ::close(null);
}

}  // namespace workbook::wire
