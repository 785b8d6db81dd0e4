// The grader's formats, without a GPU: the HMAC-SHA256 that signs each result line, and the JSON
// quoting of the results channel.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "grading/judge/hmac.hpp"
#include "common/json.hpp"

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
