#ifndef MFS_CURL_LIB_H
#define MFS_CURL_LIB_H
/* libcurl, opened the first time something is fetched. Linked directly, it
 * and the 28 libraries it pulls in were mapped and relocated at every start
 * of modelfs and modelfs-ls (5 of their 7 ms), though only a Carton's LINKS
 * (and remote models) need it. The .deb still depends on libcurl4. */
#include <curl/curl.h>

typedef struct mfs_curl_api {
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_reset)(CURL *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    /* The multi interface: http_loop.c's one loop drives every transfer. */
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
} mfs_curl_api;

/* The functions, libcurl opened and globally initialised once (thread
 * safe); NULL when it cannot be opened, with the loader's reason in
 * mfs_curl_error(). */
const mfs_curl_api *mfs_curl(void);
const char *mfs_curl_error(void);

/* The CA file the curl tool would take: CURL_CA_BUNDLE, else
 * SSL_CERT_FILE (a CA a test or a company made); NULL when neither is
 * set, for libcurl's built-in bundle. `from` (may be NULL): the name of
 * the variable that gave it. */
const char *mfs_curl_ca_file(const char **from);

#endif
