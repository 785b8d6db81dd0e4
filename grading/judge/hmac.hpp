/// \file hmac.hpp
/// \brief HMAC-SHA256, to sign each result a checker reports with the grader's per-run key.
#pragma once

#include <string>

namespace workbook {

/// \brief HMAC-SHA256 of a message under a key (RFC 2104), computed by OpenSSL's libcrypto.
/// \param key the secret key, any length
/// \param message the bytes to sign
/// \return the 32-byte MAC as 64 lowercase hex digits
/// \snippet grading/tests/test_grading.cpp hmac
std::string hmac_sha256_hex(const std::string& key, const std::string& message);

}  // namespace workbook
