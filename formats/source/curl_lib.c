#include "curl_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The soname of libcurl 7.16 and later (Debian's libcurl4). */
#define CURL_SONAME "libcurl.so.4"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static mfs_curl_api api;
static const mfs_curl_api *loaded;
static char why[256] = "libcurl not opened";

/* dlsym returns void *; the cast to a function pointer goes through memcpy
 * (ISO C has no conversion between the two). */
static int sym(void *lib, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        snprintf(why, sizeof why, "%s: no symbol %s", CURL_SONAME, name);
        return -1;
    }
    memcpy(fn, &p, size);
    return 0;
}

static void open_curl(void)
{
    void *lib = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *m = dlerror();
        snprintf(why, sizeof why, "cannot open %s: %s", CURL_SONAME, m ? m : "unknown error");
        return;
    }
    CURLcode (*global_init)(long) = NULL;
    if (sym(lib, "curl_global_init", &global_init, sizeof global_init) != 0 ||
        sym(lib, "curl_easy_init", &api.easy_init, sizeof api.easy_init) != 0 ||
        sym(lib, "curl_easy_setopt", &api.easy_setopt, sizeof api.easy_setopt) != 0 ||
        sym(lib, "curl_easy_perform", &api.easy_perform, sizeof api.easy_perform) != 0 ||
        sym(lib, "curl_easy_cleanup", &api.easy_cleanup, sizeof api.easy_cleanup) != 0 ||
        sym(lib, "curl_easy_strerror", &api.easy_strerror, sizeof api.easy_strerror) != 0 ||
        sym(lib, "curl_easy_getinfo", &api.easy_getinfo, sizeof api.easy_getinfo) != 0 ||
        sym(lib, "curl_easy_reset", &api.easy_reset, sizeof api.easy_reset) != 0 ||
        sym(lib, "curl_slist_append", &api.slist_append, sizeof api.slist_append) != 0 ||
        sym(lib, "curl_slist_free_all", &api.slist_free_all, sizeof api.slist_free_all) != 0)
        return;  /* kept open: a half-found library is not worth unloading */
    CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(why, sizeof why, "%s: curl_global_init: %s", CURL_SONAME, api.easy_strerror(rc));
        return;
    }
    loaded = &api;
}

const mfs_curl_api *mfs_curl(void)
{
    pthread_once(&once, open_curl);
    return loaded;
}

const char *mfs_curl_error(void)
{
    pthread_once(&once, open_curl);
    return why;
}
