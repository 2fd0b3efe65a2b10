#include "digest.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>

#include "guard.h"
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

/* Hashed in pieces: between them a cancelled job stops the work. */
#define PIECE (4u << 20)

struct hashing {
    EVP_MD_CTX *md;
    const uint8_t *head;
    size_t head_len;
    const uint8_t *p;
    uint64_t n;
    const mfs_job *job;
};

static int hash_guarded(void *arg)
{
    struct hashing *h = arg;
    if (h->head_len && EVP_DigestUpdate(h->md, h->head, h->head_len) != 1)
        return -1;
    for (uint64_t at = 0; at < h->n; at += PIECE) {
        if (mfs_job_cancelled(h->job))
            return -1;
        size_t len = h->n - at < PIECE ? (size_t)(h->n - at) : PIECE;
        if (EVP_DigestUpdate(h->md, h->p + at, len) != 1)
            return -1;
    }
    return 0;
}

int mfs_sha256_hex_mapped(const void *p, uint64_t n, const mfs_job *job, char hex[MFS_SHA256_HEX])
{
    return mfs_sha256_hex_mapped2(NULL, 0, p, n, job, hex);
}

int mfs_sha256_hex_mapped2(const void *head, size_t head_len, const void *p, uint64_t n,
                           const mfs_job *job, char hex[MFS_SHA256_HEX])
{
    hex[0] = '\0';
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return -1;
    }
    struct hashing h = { md, head, head_len, p, n, job };
    int r = mfs_guard_run(hash_guarded, &h);
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (r == 0 && (EVP_DigestFinal_ex(md, dig, &len) != 1 || len != 32))
        r = -1;
    EVP_MD_CTX_free(md);
    if (r != 0)
        return r;
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", dig[i]);
    return 0;
}

mfs_sha256_stream *mfs_sha256_begin(void)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(md);
        return NULL;
    }
    return (mfs_sha256_stream *)md;
}

int mfs_sha256_add(mfs_sha256_stream *s, const void *p, uint64_t n, const mfs_job *job)
{
    struct hashing h = { (EVP_MD_CTX *)s, NULL, 0, p, n, job };
    return mfs_guard_run(hash_guarded, &h);
}

int mfs_sha256_end(mfs_sha256_stream *s, char hex[MFS_SHA256_HEX])
{
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    int r = EVP_DigestFinal_ex((EVP_MD_CTX *)s, dig, &len) == 1 && len == 32 ? 0 : -1;
    EVP_MD_CTX_free((EVP_MD_CTX *)s);
    hex[0] = '\0';
    for (unsigned i = 0; r == 0 && i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", dig[i]);
    return r;
}

void mfs_sha256_abandon(mfs_sha256_stream *s)
{
    EVP_MD_CTX_free((EVP_MD_CTX *)s);
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

void mfs_digest_thread_end(void)
{
    OPENSSL_thread_stop();
}
