#include "crypto_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* The soname of OpenSSL 3 (Debian 12's libssl3). */
#define CRYPTO_SONAME "libcrypto.so.3"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static mfs_crypto_api api;
static _Atomic(const mfs_crypto_api *) loaded;
static char why[256] = "libcrypto not opened";

/* dlsym returns void *; the cast to a function pointer goes through memcpy
 * (ISO C has no conversion between the two). */
static int sym(void *lib, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        snprintf(why, sizeof why, "%s: no symbol %s", CRYPTO_SONAME, name);
        return -1;
    }
    memcpy(fn, &p, size);
    return 0;
}

static void open_crypto(void)
{
    void *lib = dlopen(CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *m = dlerror();
        snprintf(why, sizeof why, "cannot open %s: %s", CRYPTO_SONAME, m ? m : "unknown error");
        return;
    }
    if (sym(lib, "EVP_MD_CTX_new", &api.md_ctx_new, sizeof api.md_ctx_new) != 0 ||
        sym(lib, "EVP_MD_CTX_free", &api.md_ctx_free, sizeof api.md_ctx_free) != 0 ||
        sym(lib, "EVP_DigestInit_ex", &api.digest_init_ex, sizeof api.digest_init_ex) != 0 ||
        sym(lib, "EVP_DigestUpdate", &api.digest_update, sizeof api.digest_update) != 0 ||
        sym(lib, "EVP_DigestFinal_ex", &api.digest_final_ex, sizeof api.digest_final_ex) != 0 ||
        sym(lib, "EVP_sha256", &api.sha256, sizeof api.sha256) != 0 ||
        sym(lib, "OPENSSL_thread_stop", &api.thread_stop, sizeof api.thread_stop) != 0)
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
    return why;
}

const mfs_crypto_api *mfs_crypto_if_open(void)
{
    return atomic_load_explicit(&loaded, memory_order_acquire);
}
