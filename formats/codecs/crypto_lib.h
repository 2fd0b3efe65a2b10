#ifndef MFS_CRYPTO_LIB_H
#define MFS_CRYPTO_LIB_H
/* libcrypto, opened the first time something is hashed. Linked directly,
 * Debian's libcrypto.so.3 (built with BIND_NOW) was mapped and had its
 * 3,600 symbol relocations resolved at every start of modelfs and
 * modelfs-ls: 1.3 of modelfs-ls's 1.9 ms, though most runs hash nothing.
 * Only digest.c calls it; the .deb still depends on libssl3. */
#include <openssl/evp.h>

typedef struct mfs_crypto_api {
    EVP_MD_CTX *(*md_ctx_new)(void);
    void (*md_ctx_free)(EVP_MD_CTX *);
    int (*digest_init_ex)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
    int (*digest_update)(EVP_MD_CTX *, const void *, size_t);
    int (*digest_final_ex)(EVP_MD_CTX *, unsigned char *, unsigned int *);
    const EVP_MD *(*sha256)(void);
    void (*thread_stop)(void);
} mfs_crypto_api;

/* The functions, libcrypto opened once (thread safe); NULL when it cannot
 * be opened, with the loader's reason in mfs_crypto_error(). */
const mfs_crypto_api *mfs_crypto(void);
const char *mfs_crypto_error(void);

/* The functions if libcrypto was opened already, else NULL (without
 * opening it): what a thread ending needs, that hashed nothing itself
 * unless it went through mfs_crypto(). */
const mfs_crypto_api *mfs_crypto_if_open(void);

#endif
