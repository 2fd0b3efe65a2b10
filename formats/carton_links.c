/* Fetching a LINKS file (format.md "LINKS") over http(s) with libcurl.
 *
 * A file that is in MANIFEST and LINKS but not in the archive has no size
 * anywhere in the carton, and the tree's sizes are fixed at mount. So:
 *  - if -o links_dir=DIR holds DIR/<sha256> at mount, that file's size is
 *    the node's size and its bytes are served from it (checked first);
 *  - otherwise the node is listed with size 0 and the xattr
 *    user.modelfs.size_unknown (the fs serves it unbuffered, with the
 *    produced length); opening it fetches its URLs in turn into DIR (when
 *    links_dir is given: that is where fetched files are kept), checks the
 *    sha256, renames the file to DIR/<sha256> and serves it; the next mount
 *    knows its size.
 * Responses may be compressed (Content-Encoding zstd, br, gzip, deflate):
 * libcurl decodes every encoding it was built with (ACCEPT_ENCODING "").
 * The sha256 is of the decoded bytes. Only http and https are followed,
 * redirects included; slow or stalled transfers and files above
 * CARTON_FETCH_MAX are abandoned. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "carton.h"
#include "fs/xalloc.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_start(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

void carton_fetch_init(void)
{
    pthread_once(&curl_once, curl_start);
}

typedef struct sink {
    int fd;
    EVP_MD_CTX *md;
    uint64_t got;
    bool too_big, write_failed;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;  /* libcurl: size is always 1 */
    if (len > CARTON_FETCH_MAX - s->got) {
        s->too_big = true;
        return 0;  /* aborts the transfer */
    }
    for (size_t done = 0; done < len;) {
        ssize_t w = write(s->fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            s->write_failed = true;
            return 0;
        }
        done += (size_t)w;
    }
    EVP_DigestUpdate(s->md, p, len);
    s->got += len;
    return len;
}

/* One URL into the open file `fd`; 0 when its sha256 is `want`. */
static int fetch_one(const char *url, int fd, const char *want, uint64_t *size, char *why,
                     size_t whysize)
{
    CURL *c = curl_easy_init();
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    if (c == NULL || md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        snprintf(why, whysize, "cannot start a transfer (out of memory)");
        curl_easy_cleanup(c);
        EVP_MD_CTX_free(md);
        return -1;
    }
    sink s = { .fd = fd, .md = md };
    char err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);   /* we run on FUSE worker threads */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 20L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "modelfs/" MODELFS_VERSION);
    CURLcode rc = curl_easy_perform(c);
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    EVP_DigestFinal_ex(md, dig, &dlen);
    EVP_MD_CTX_free(md);
    curl_easy_cleanup(c);
    if (s.too_big) {
        snprintf(why, whysize, "%s: more than %llu bytes", url, (unsigned long long)CARTON_FETCH_MAX);
        return -1;
    }
    if (s.write_failed) {
        snprintf(why, whysize, "%s: cannot write the download: %s", url, strerror(errno));
        return -1;
    }
    if (rc != CURLE_OK) {
        snprintf(why, whysize, "%s: %s", url, err[0] ? err : curl_easy_strerror(rc));
        return -1;
    }
    char got[MFS_SHA256_HEX];
    for (unsigned i = 0; i < 32 && dlen == 32; i++)
        snprintf(got + 2 * i, 3, "%02x", dig[i]);
    if (dlen != 32 || strcmp(got, want) != 0) {
        snprintf(why, whysize, "%s: sha256 %s of the %llu bytes fetched does not match %s", url,
                 dlen == 32 ? got : "?", (unsigned long long)s.got, want);
        return -1;
    }
    *size = s.got;
    return 0;
}

int64_t carton_fetch(const carton_src *s, char *why, size_t whysize)
{
    carton_fetch_init();
    size_t dlen = strlen(s->path);
    char *tmp = mfs_xmalloc(dlen + 40), *dest = mfs_xmalloc(dlen + 2 + MFS_SHA256_HEX);
    snprintf(dest, dlen + 2 + MFS_SHA256_HEX, "%s/%s", s->path, s->sha);
    snprintf(why, whysize, "no URL");
    int64_t result = -1;
    unsigned tried = 0;
    for (const char *u = s->urls; u != NULL && *u && result < 0;) {
        const char *nl = strchr(u, '\n');
        char *url = mfs_xstrndup(u, nl ? (size_t)(nl - u) : strlen(u));
        u = nl ? nl + 1 : NULL;
        snprintf(tmp, dlen + 40, "%s/.modelfs-fetch-XXXXXX", s->path);
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) {
            snprintf(why, whysize, "cannot create a file in %s: %s", s->path, strerror(errno));
            free(url);
            break;
        }
        uint64_t size = 0;
        char one[512];
        if (fetch_one(url, fd, s->sha, &size, one, sizeof one) == 0) {
            if (fsync(fd) != 0 || rename(tmp, dest) != 0) {
                snprintf(one, sizeof one, "cannot keep %s as %s: %s", url, dest, strerror(errno));
            } else {
                snprintf(why, whysize, "fetched %s", url);
                result = (int64_t)size;
            }
        }
        if (result < 0) {
            /* Every URL's failure, in order: "URL: problem; URL: problem". */
            size_t at = tried++ ? strlen(why) : 0;
            if (at < whysize)
                snprintf(why + at, whysize - at, "%s%s", at ? "; " : "", one);
        }
        close(fd);
        if (result < 0)
            unlink(tmp);
        free(url);
    }
    free(tmp);
    free(dest);
    return result;
}
