#include "crypto_lib.h"

#include <pthread.h>
#include <stdatomic.h>

#include "dynlib.h"

/* The soname of OpenSSL 3 (Debian 12's libssl3). */
#define CRYPTO_SONAME "libcrypto.so.3"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static mfs_crypto_api api;
static _Atomic(const mfs_crypto_api *) loaded;
static mfs_dynlib lib = { CRYPTO_SONAME, NULL, "libcrypto not opened" };

static int sym(const char *name, void *fn, size_t size)
{
    return mfs_dynlib_fn(&lib, name, fn, size);
}

static void open_crypto(void)
{
    if (mfs_dynlib_open(&lib) != 0)
        return;
    if (sym("EVP_MD_CTX_new", &api.md_ctx_new, sizeof api.md_ctx_new) != 0 ||
        sym("EVP_MD_CTX_free", &api.md_ctx_free, sizeof api.md_ctx_free) != 0 ||
        sym("EVP_DigestInit_ex", &api.digest_init_ex, sizeof api.digest_init_ex) != 0 ||
        sym("EVP_DigestUpdate", &api.digest_update, sizeof api.digest_update) != 0 ||
        sym("EVP_DigestFinal_ex", &api.digest_final_ex, sizeof api.digest_final_ex) != 0 ||
        sym("EVP_sha256", &api.sha256, sizeof api.sha256) != 0 ||
        sym("OPENSSL_thread_stop", &api.thread_stop, sizeof api.thread_stop) != 0)
        return;  /* kept open: a half-found library is not worth unloading */
    atomic_store_explicit(&loaded, &api, memory_order_release);
}

const mfs_crypto_api *mfs_crypto(void)
{
    pthread_once(&once, open_crypto);
    return atomic_load_explicit(&loaded, memory_order_acquire);
}

const char *mfs_crypto_error(void)
{
    pthread_once(&once, open_crypto);
    return lib.why;
}

const mfs_crypto_api *mfs_crypto_if_open(void)
{
    return atomic_load_explicit(&loaded, memory_order_acquire);
}
