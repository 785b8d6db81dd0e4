// The grader's formats, without a GPU: the HMAC-SHA256 that signs each result line, the JSON
// quoting of the results channel, and the judge's and the runner's wait for each other's messages.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "grading/judge/hmac.hpp"
#include "grading/protocol/wire.hpp"
#include "common/json.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

using namespace workbook;

TEST_CASE("hmac: RFC 4231 test vectors")
{
    //! [hmac]
    CHECK(hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    //! [hmac]
    CHECK(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There") ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    // A key longer than the block is hashed first (test case 6).
    CHECK(hmac_sha256_hex(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First") ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST_CASE("json: quoting escapes what JSON requires")
{
    //! [json]
    CHECK(json_quote("say \"hi\"\n") == "\"say \\\"hi\\\"\\n\"");
    //! [json]
    CHECK(json_quote("a\\b") == "\"a\\\\b\"");
    CHECK(json_quote(std::string("\x01", 1)) == "\"\\u0001\"");
}

TEST_CASE("wire: a side polls for its next message, gives up in time, and the message is then read whole")
{
    int ends[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, ends) == 0);
    const auto ms_since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    };
    // Nothing sent: the poll gives up after its time where the process may spin, at once elsewhere.
    auto started = std::chrono::steady_clock::now();
    CHECK_FALSE(wire::poll_for_message(ends[1], 20));
    const double waited = ms_since(started);
    CHECK(waited < 1000);
    if (wire::may_spin()) CHECK(waited >= 20);
    // A message waiting: found (where it may spin) and left for receive, whole.
    wire::Message message(wire::Op::ping);
    message.put(std::uint32_t{42});
    REQUIRE(wire::send(ends[0], message));
    started = std::chrono::steady_clock::now();
    CHECK(wire::poll_for_message(ends[1], 1000) == wire::may_spin());
    CHECK(ms_since(started) < 500);
    wire::Reader got;
    REQUIRE(wire::receive(ends[1], got));
    CHECK(got.get<wire::Op>() == wire::Op::ping);
    CHECK(got.get<std::uint32_t>() == 42u);
    // The other side gone: that too ends the poll, and receive says so.
    ::close(ends[0]);
    CHECK(wire::poll_for_message(ends[1], 1000) == wire::may_spin());
    CHECK_FALSE(wire::receive(ends[1], got));
    ::close(ends[1]);
}
