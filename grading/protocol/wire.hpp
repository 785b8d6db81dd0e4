/// \file wire.hpp
/// \brief The messages between the judge and the runner, the process that holds the student's
/// code (docs/grading.md, "Two processes").
///
/// One message is one datagram on a Unix SOCK_SEQPACKET socket pair: its boundaries survive,
/// and it can carry file descriptors (SCM_RIGHTS), which is how host arrays travel. A message is
/// a flat byte string written and read in the same order by both sides; nothing in it is
/// trusted by the judge beyond what a runner could say about its own work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace workbook::wire {

/// \brief What a message asks or answers; the first byte of every message.
enum class Op : unsigned char {
    hello = 1,   ///< runner -> judge, once: which API functions the student's file defines
    call = 2,    ///< judge -> runner: call an API function with these arguments
    ping = 3,    ///< judge -> runner: the same round trip as a call, calling nothing
    exit = 4,    ///< judge -> runner: finish and exit 0
    done = 5,    ///< runner -> judge: the call returned and its work is finished on the GPU
    record = 6,  ///< runner -> judge, after done: what CUPTI saw the call launch and copy
    /// judge -> runner, once at the checker's start: can you open this CUDA IPC handle? The
    /// answer is a done whose result is a byte (1: opened) and the CUDA error's words (practice
    /// mode, docs/grading.md)
    probe_ipc = 7,
};

/// \brief How an argument travels.
enum class Kind : unsigned char {
    value = 1,   ///< its bytes (int, double, ...)
    null = 2,    ///< a null pointer
    device = 3,  ///< device memory: a CUDA IPC handle of its allocation and an offset into it
    host = 4,    ///< host memory: a shared-memory file (passed with the message) holding a copy
    /// device memory where CUDA IPC is missing (practice mode): a shared-memory file holding a
    /// copy of the whole allocation, which the runner copies into a device allocation of its own
    /// for the call and, when the function may write it, back into the file after the call
    device_copy = 5,
};

/// \brief The index of a descriptor that a message does not carry: a device_copy argument of an
/// allocation that an earlier argument of the same call already brought.
constexpr std::uint32_t kSameFileAsBefore = 0xffffffffu;

/// \brief How a call ended in the runner.
enum class Status : unsigned char {
    ok = 0,          ///< it returned normally
    cuda_error = 1,  ///< a CUDA error (a CudaError, or one found when the runner waited for the GPU)
    exception = 2,   ///< another C++ exception
};

/// \brief The largest message either side sends (a datagram must fit the socket's buffer).
constexpr std::size_t kMaxMessage = 1 << 16;

/// \brief A message being written, and the file descriptors that go with it.
class Message {
public:
    /// \brief Starts a message of this kind.
    /// \param op what it asks or answers
    explicit Message(Op op) { put(op); }
    /// \brief A part of a message, with no kind of its own: fields to append to one (put_bytes).
    Message() = default;
    /// \brief Appends raw bytes.
    /// \param data where they are
    /// \param size how many
    void put_bytes(const void* data, std::size_t size) { bytes_.append(static_cast<const char*>(data), size); }
    /// \brief Appends a value of a trivially copyable type.
    /// \param value the value
    template <class T>
    void put(const T& value)
    {
        static_assert(std::is_trivially_copyable<T>::value, "only plain values travel as bytes");
        put_bytes(&value, sizeof value);
    }
    /// \brief Appends a string, length first.
    /// \param text the string
    void put_string(const std::string& text)
    {
        put(static_cast<std::uint64_t>(text.size()));
        put_bytes(text.data(), text.size());
    }
    /// \brief Attaches a file descriptor; it is sent with the message (and not closed here).
    /// \param fd the descriptor
    /// \return its index among the message's descriptors
    std::uint32_t attach(int fd)
    {
        fds_.push_back(fd);
        return static_cast<std::uint32_t>(fds_.size() - 1);
    }
    /// \brief The bytes written so far.
    const std::string& bytes() const { return bytes_; }
    /// \brief The descriptors attached so far.
    const std::vector<int>& fds() const { return fds_; }

private:
    std::string bytes_;
    std::vector<int> fds_;
};

/// \brief A message being read: each get takes the next field; reading past the end throws.
class Reader {
public:
    Reader() = default;
    /// \brief Reads a received message.
    /// \param bytes its bytes
    /// \param fds the descriptors that came with it (the reader owns them)
    Reader(std::string bytes, std::vector<int> fds) : bytes_(std::move(bytes)), fds_(std::move(fds)) {}
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;
    /// \brief Takes over another reader's message and descriptors.
    /// \param other the reader to move from
    Reader(Reader&& other) noexcept { *this = std::move(other); }
    /// \brief Takes over another reader's message and descriptors, closing this one's.
    /// \param other the reader to move from
    Reader& operator=(Reader&& other) noexcept;
    ~Reader();
    /// \brief The next field as a value of a trivially copyable type.
    template <class T>
    T get()
    {
        static_assert(std::is_trivially_copyable<T>::value, "only plain values travel as bytes");
        T value;
        std::memcpy(&value, take(sizeof value), sizeof value);
        return value;
    }
    /// \brief The next field as a string.
    std::string get_string()
    {
        const auto size = static_cast<std::size_t>(get<std::uint64_t>());
        const char* data = take(size);
        return std::string(data, size);
    }
    /// \brief The next size bytes.
    /// \param size how many
    const char* take(std::size_t size)
    {
        if (size > bytes_.size() - at_) throw std::runtime_error("a message between judge and runner is truncated");
        const char* data = bytes_.data() + at_;
        at_ += size;
        return data;
    }
    /// \brief Takes ownership of an attached descriptor (the caller closes it).
    /// \param index its index, as Message::attach returned it
    int take_fd(std::uint32_t index);

private:
    std::string bytes_;
    std::size_t at_ = 0;
    std::vector<int> fds_;
};

/// \brief Sends a message.
/// \param socket one end of the socket pair
/// \param message what to send
/// \return false when the other side is gone
bool send(int socket, const Message& message);

/// \brief How long a side polls its socket for the next message before it sleeps in receive, in
/// milliseconds (poll_for_message): longer than the judge's own work between the calls of one
/// timing (a batch's inputs copied in, its runs checked), short enough that an idle process does
/// not keep a core busy for long.
constexpr int kPollMs = 50;

/// \brief Whether a thread of this process may spin while it waits (for a message, for the GPU)
/// instead of sleeping: where the process may run on 8 cores or more, so that a spinning wait takes
/// no core the other side needs (a laptop, a Slurm job of 2 cores).
bool may_spin();

/// \brief Polls `socket` until a message is waiting there, for at most `most_ms` milliseconds, and
/// at once gives up where may_spin() is false; receive() then reads the message, or sleeps until
/// one comes. A thread that sleeps for milliseconds wakes up late when its message comes: 0.05 to
/// 0.2 ms a wake-up on the H100 machines (virtual machines), and the judge's clock would count the
/// wake-ups of both sides (docs/grading.md, "The judge's clock").
/// \param socket one end of the socket pair
/// \param most_ms how long to poll at most
/// \return true when something is waiting (a message, or the other side's end)
bool poll_for_message(int socket, int most_ms);

/// \brief Receives the next message, waiting for it.
/// \param socket one end of the socket pair
/// \param message filled with what came
/// \return false when the other side closed its end (it exited or crashed)
bool receive(int socket, Reader& message);

/// \brief Flushes stdout and stderr and points both at /dev/null. A process of either side that
/// has said all it will lets go of the output its reader waits on, so that no one waits while
/// CUDA tears the process down.
void release_output();

}  // namespace workbook::wire
