// HMAC-SHA256 (RFC 2104) for signing results, from OpenSSL's libcrypto.
#include "hmac.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace workbook {

std::string hmac_sha256_hex(const std::string& key, const std::string& message)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    // key.data() is never null, so an empty key is an empty key and not "no key".
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length) == nullptr)
        throw std::runtime_error("HMAC-SHA256 failed in OpenSSL's libcrypto");
    static const char digits[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
        hex += digits[mac[i] >> 4];
        hex += digits[mac[i] & 15];
    }
    return hex;
}

}  // namespace workbook
