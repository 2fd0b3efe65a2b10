#include "digest.h"

#include <openssl/evp.h>
#include <stdio.h>

#include "utf8.h"

void mfs_sha256_hex(const void *p, size_t n, char hex[MFS_SHA256_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    static const uint8_t empty;
    if (EVP_Digest(n ? p : &empty, n, md, &len, EVP_sha256(), NULL) != 1 || len != 32) {
        hex[0] = '\0';  /* cannot happen with a working libcrypto; never matches */
        return;
    }
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

bool mfs_is_sha256_hex(const char *s, size_t len)
{
    if (len != 64)
        return false;
    for (size_t i = 0; i < len; i++)
        if (mfs_hexval(s[i]) < 0)
            return false;
    return true;
}
