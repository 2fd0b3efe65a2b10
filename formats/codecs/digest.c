#include "digest.h"

#include "crypto_lib.h"
#include "guard.h"
#include "utf8.h"

static void to_hex(const uint8_t dig[32], char hex[MFS_SHA256_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[dig[i] >> 4];
        hex[2 * i + 1] = digits[dig[i] & 15];
    }
    hex[64] = '\0';
}

mfs_sha256_stream *mfs_sha256_begin(void)
{
    const mfs_crypto_api *c = mfs_crypto();
    if (c == NULL)
        return NULL;
    EVP_MD_CTX *md = c->md_ctx_new();
    if (md == NULL || c->digest_init_ex(md, c->sha256(), NULL) != 1) {
        c->md_ctx_free(md);
        return NULL;
    }
    return (mfs_sha256_stream *)md;
}

int mfs_sha256_update(mfs_sha256_stream *s, const void *p, size_t n)
{
    static const uint8_t empty;
    /* s exists: libcrypto is open */
    return mfs_crypto()->digest_update((EVP_MD_CTX *)s, n ? p : &empty, n) == 1 ? 0 : -1;
}

int mfs_sha256_end_raw(mfs_sha256_stream *s, uint8_t out[32])
{
    const mfs_crypto_api *c = mfs_crypto();
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    int r = c->digest_final_ex((EVP_MD_CTX *)s, dig, &len) == 1 && len == 32 ? 0 : -1;
    c->md_ctx_free((EVP_MD_CTX *)s);
    for (unsigned i = 0; r == 0 && i < 32; i++)
        out[i] = dig[i];
    return r;
}

int mfs_sha256_end(mfs_sha256_stream *s, char hex[MFS_SHA256_HEX])
{
    uint8_t dig[32];
    hex[0] = '\0';
    if (mfs_sha256_end_raw(s, dig) != 0)
        return -1;
    to_hex(dig, hex);
    return 0;
}

void mfs_sha256_abandon(mfs_sha256_stream *s)
{
    if (s != NULL)
        mfs_crypto()->md_ctx_free((EVP_MD_CTX *)s);
}

int mfs_sha256(const void *p, size_t n, uint8_t out[32])
{
    mfs_sha256_stream *s = mfs_sha256_begin();
    if (s == NULL)
        return -1;
    if (mfs_sha256_update(s, p, n) != 0) {
        mfs_sha256_abandon(s);
        return -1;
    }
    return mfs_sha256_end_raw(s, out);
}

void mfs_sha256_hex(const void *p, size_t n, char hex[MFS_SHA256_HEX])
{
    uint8_t dig[32];
    hex[0] = '\0';  /* no libcrypto: cannot happen once installed; never matches */
    if (mfs_sha256(p, n, dig) == 0)
        to_hex(dig, hex);
}

/* Hashed in pieces: between them a cancelled job stops the work. */
#define PIECE (4u << 20)

struct hashing {
    mfs_sha256_stream *s;
    const uint8_t *head;
    size_t head_len;
    const uint8_t *p;
    uint64_t n;
    const mfs_job *job;
};

static int hash_guarded(void *arg)
{
    struct hashing *h = arg;
    if (h->head_len && mfs_sha256_update(h->s, h->head, h->head_len) != 0)
        return -1;
    for (uint64_t at = 0; at < h->n; at += PIECE) {
        if (mfs_job_cancelled(h->job))
            return -1;
        size_t len = h->n - at < PIECE ? (size_t)(h->n - at) : PIECE;
        if (mfs_sha256_update(h->s, h->p + at, len) != 0)
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
    mfs_sha256_stream *s = mfs_sha256_begin();
    if (s == NULL)
        return -1;
    struct hashing h = { s, head, head_len, p, n, job };
    int r = mfs_guard_run(hash_guarded, &h);
    if (r != 0) {
        mfs_sha256_abandon(s);
        return r;
    }
    return mfs_sha256_end(s, hex);
}

int mfs_sha256_add(mfs_sha256_stream *s, const void *p, uint64_t n, const mfs_job *job)
{
    struct hashing h = { s, NULL, 0, p, n, job };
    return mfs_guard_run(hash_guarded, &h);
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
    /* A thread that hashed went through mfs_crypto(); one that did not has
     * nothing of libcrypto's to free, and opening it here would cost every
     * thread's end the load. */
    const mfs_crypto_api *c = mfs_crypto_if_open();
    if (c != NULL)
        c->thread_stop();
}
