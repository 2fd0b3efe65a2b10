#include "curl_lib.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "dynlib.h"

/* The soname of libcurl 7.16 and later (Debian's libcurl4). */
#define CURL_SONAME "libcurl.so.4"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static mfs_curl_api api;
static const mfs_curl_api *loaded;
static mfs_dynlib lib = { CURL_SONAME, NULL, "libcurl not opened" };

static int sym(const char *name, void *fn, size_t size)
{
    return mfs_dynlib_fn(&lib, name, fn, size);
}

static void open_curl(void)
{
    if (mfs_dynlib_open(&lib) != 0)
        return;
    CURLcode (*global_init)(long) = NULL;
    if (sym("curl_global_init", &global_init, sizeof global_init) != 0 ||
        sym("curl_easy_init", &api.easy_init, sizeof api.easy_init) != 0 ||
        sym("curl_easy_setopt", &api.easy_setopt, sizeof api.easy_setopt) != 0 ||
        sym("curl_easy_perform", &api.easy_perform, sizeof api.easy_perform) != 0 ||
        sym("curl_easy_cleanup", &api.easy_cleanup, sizeof api.easy_cleanup) != 0 ||
        sym("curl_easy_strerror", &api.easy_strerror, sizeof api.easy_strerror) != 0 ||
        sym("curl_easy_getinfo", &api.easy_getinfo, sizeof api.easy_getinfo) != 0 ||
        sym("curl_easy_reset", &api.easy_reset, sizeof api.easy_reset) != 0 ||
        sym("curl_slist_append", &api.slist_append, sizeof api.slist_append) != 0 ||
        sym("curl_slist_free_all", &api.slist_free_all, sizeof api.slist_free_all) != 0 ||
        sym("curl_multi_init", &api.multi_init, sizeof api.multi_init) != 0 ||
        sym("curl_multi_setopt", &api.multi_setopt, sizeof api.multi_setopt) != 0 ||
        sym("curl_multi_add_handle", &api.multi_add_handle, sizeof api.multi_add_handle) != 0 ||
        sym("curl_multi_remove_handle", &api.multi_remove_handle,
            sizeof api.multi_remove_handle) != 0 ||
        sym("curl_multi_perform", &api.multi_perform, sizeof api.multi_perform) != 0 ||
        sym("curl_multi_poll", &api.multi_poll, sizeof api.multi_poll) != 0 ||
        sym("curl_multi_wakeup", &api.multi_wakeup, sizeof api.multi_wakeup) != 0 ||
        sym("curl_multi_info_read", &api.multi_info_read, sizeof api.multi_info_read) != 0)
        return;  /* kept open: a half-found library is not worth unloading */
    CURLcode rc = global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(lib.why, sizeof lib.why, "%s: curl_global_init: %s", CURL_SONAME, api.easy_strerror(rc));
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
    return lib.why;
}

const char *mfs_curl_ca_file(const char **from)
{
    static const char *const vars[] = { "CURL_CA_BUNDLE", "SSL_CERT_FILE" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *ca = getenv(vars[i]);
        if (ca != NULL && *ca != '\0') {
            if (from != NULL)
                *from = vars[i];
            return ca;
        }
    }
    return NULL;
}
