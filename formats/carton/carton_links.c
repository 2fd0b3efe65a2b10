/* The bytes of a LINKS file (format.md "LINKS"): a kept copy in
 * -o links_dir, or fetched over http(s) with libcurl.
 *
 * A file that is in MANIFEST and LINKS but not in the archive has no size
 * anywhere in the carton, and the tree's sizes are fixed at mount. So:
 *  - if links_dir holds DIR/<sha256> at mount, that file's size is the
 *    node's size and its bytes are served from it (carton_src.c, checked);
 *  - otherwise the node is listed with size 0 and the xattr
 *    user.modelfs.size_unknown (the fs serves it unbuffered, with the
 *    produced length). Every open that has to produce it first looks for
 *    DIR/<sha256> again (a copy fetched earlier in this mount, or by
 *    another mount) and serves it when its sha256 matches; only then are
 *    the URLs fetched in turn, into an unnamed file in DIR (O_TMPFILE: a
 *    killed daemon leaves nothing behind), checked, and linked as
 *    DIR/<sha256>.
 * Responses may be compressed (Content-Encoding zstd, br, gzip, deflate):
 * libcurl decodes every encoding it was built with (ACCEPT_ENCODING "").
 * The sha256 is of the decoded bytes. Only http and https are fetched;
 * redirects are followed as every source follows them (redirect_follow.h:
 * never from https to http, never to a URL with a user or password; a
 * refusal fails that URL like any other failure), a 3xx's page is neither
 * written nor counted. TLS is checked against CURL_CA_BUNDLE or
 * SSL_CERT_FILE when one is set (as the remote sources do).
 *
 * Every fetch is bounded (carton_fetch_cfg, from -o fetch_max,
 * fetch_timeout, fetch_reserve): decoded bytes (the write callback counts
 * them, so a small gzip bomb stops at the cap), time for the whole fetch
 * (all URLs together), free space left on DIR's file system, and an
 * unmount (mfs_job_cancelled) stops a transfer within about a second. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "carton.h"
#include "curl_lib.h"
#include "log.h"
#include "redirect_follow.h"
#include "url_redact.h"

typedef unsigned long long ull;

/* Free space is looked at again after this many bytes written. */
#define DISK_CHECK_EVERY (4ull << 20)
#define CONNECT_MAX_MS 20000L
/* Slower than this many bytes/s for LOW_SPEED_SECS: the transfer stalled. */
#define LOW_SPEED_BYTES 1024L
#define LOW_SPEED_SECS 60L

void carton_fetch_init(void)
{
    (void)mfs_curl();
}

void carton_fetch_cfg_set(carton_fetch_cfg *c, const mfs_load_opts *o)
{
    c->max = o->fetch_max ? o->fetch_max : MFS_FETCH_MAX_DEFAULT;
    uint64_t secs = o->fetch_timeout ? o->fetch_timeout : MFS_FETCH_TIMEOUT_DEFAULT;
    c->timeout_ms = secs > UINT64_MAX / 1000 ? UINT64_MAX : secs * 1000;
    c->reserve = o->fetch_reserve;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Free bytes for us on the file system of `fd`, and its size; false when
 * it cannot be told. */
static bool disk_space(int fd, uint64_t *avail, uint64_t *total)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0)
        return false;
    uint64_t unit = v.f_frsize ? v.f_frsize : v.f_bsize;
    *avail = unit && v.f_bavail > UINT64_MAX / unit ? UINT64_MAX : (uint64_t)v.f_bavail * unit;
    *total = unit && v.f_blocks > UINT64_MAX / unit ? UINT64_MAX : (uint64_t)v.f_blocks * unit;
    return true;
}

/* The reserve for links_dir's file system: the user's, else 1 GiB or 5 %
 * of the file system, whichever is less (a small disk stays usable). */
static uint64_t reserve_for(const carton_fetch_cfg *c, int fd)
{
    if (c->reserve)
        return c->reserve;
    uint64_t avail, total;
    if (!disk_space(fd, &avail, &total))
        return MFS_FETCH_RESERVE_DEFAULT;
    return total / 20 < MFS_FETCH_RESERVE_DEFAULT ? total / 20 : MFS_FETCH_RESERVE_DEFAULT;
}

typedef enum stop_kind {
    STOP_NONE, STOP_TOO_BIG, STOP_DECLARED, STOP_WRITE, STOP_DISK, STOP_CANCEL
} stop_kind;

typedef struct sink {
    int fd;
    mfs_sha256_stream *md;
    const mfs_job *job;
    const mfs_curl_api *cu;
    CURL *c;            /* its status tells a redirect's page */
    uint64_t got, max, reserve, since_check, avail;
    int err;            /* STOP_WRITE: errno */
    bool hash_failed;   /* libcrypto refused an update: no digest */
    stop_kind stop;
} sink;

/* Room for `len` more bytes and DISK_CHECK_EVERY after them, above the reserve. */
static bool room_for(sink *s, size_t len)
{
    uint64_t avail, total;
    if (!disk_space(s->fd, &avail, &total))
        return true;  /* cannot tell: ENOSPC still stops the writes */
    s->avail = avail;
    return avail >= s->reserve && avail - s->reserve >= DISK_CHECK_EVERY + (uint64_t)len;
}

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    sink *s = ud;
    size_t len = size * n;  /* libcurl: size is always 1 */
    if (mfs_job_cancelled(s->job)) {
        s->stop = STOP_CANCEL;
        return 0;  /* aborts the transfer */
    }
    long status = 0;
    s->cu->easy_getinfo(s->c, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 300 && status < 400)
        return len;   /* a redirect's page: neither the file nor counted */
    /* A declared length above the cap fails before any byte is written
     * (libcurl's CURLOPT_MAXFILESIZE would judge a redirect's page too);
     * the decoded bytes are counted below whatever is declared. */
    curl_off_t declared = -1;
    if (s->got == 0 &&
        s->cu->easy_getinfo(s->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &declared) == CURLE_OK &&
        declared > 0 && (uint64_t)declared > s->max) {
        s->stop = STOP_DECLARED;
        return 0;
    }
    if (len > s->max - s->got) {
        s->stop = STOP_TOO_BIG;
        return 0;
    }
    if (s->got == 0 || s->since_check >= DISK_CHECK_EVERY) {
        if (!room_for(s, len)) {
            s->stop = STOP_DISK;
            return 0;
        }
        s->since_check = 0;
    }
    for (size_t done = 0; done < len;) {
        ssize_t w = write(s->fd, p + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            s->err = w < 0 ? errno : ENOSPC;
            s->stop = STOP_WRITE;
            return 0;
        }
        done += (size_t)w;
    }
    if (mfs_sha256_update(s->md, p, len) != 0)
        s->hash_failed = true;
    s->got += len;
    s->since_check += len;
    return len;
}

/* libcurl calls this at least once a second, even on a silent connection. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    sink *s = ud;
    if (mfs_job_cancelled(s->job)) {
        s->stop = STOP_CANCEL;
        return 1;
    }
    return 0;
}

/* A URL that failed: MFS_E_FETCH unless said otherwise. */
#define FAILED(e, ...) mfs_fail((e), MFS_E_FETCH, MFS_NO_OFFSET, __VA_ARGS__)

/* What every hop of one URL's fetch sets (redirect_follow.h). */
typedef struct hop {
    const mfs_curl_api *cu;
    const char *url;
    uint64_t deadline;
    sink *k;
    char *err;   /* CURL_ERROR_SIZE bytes */
} hop;

static bool hop_setup(void *arg, CURL *c, const char *url, bool with_creds)
{
    (void)with_creds;   /* a LINKS fetch carries none */
    const hop *h = arg;
    const mfs_curl_api *cu = h->cu;
    /* fetch_timeout bounds all hops together: each gets what is left
     * (1 ms at the least: 0 would be none). */
    uint64_t now = now_ms();
    uint64_t rest = now < h->deadline ? h->deadline - now : 1;
    long left = rest > (uint64_t)LONG_MAX ? LONG_MAX : (long)rest;
    cu->easy_reset(c);
    cu->easy_setopt(c, CURLOPT_URL, url ? url : h->url);
    cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    cu->easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    cu->easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);   /* we run on worker threads */
    cu->easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
    cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, left < CONNECT_MAX_MS ? left : CONNECT_MAX_MS);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BYTES);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_SECS);
    cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    cu->easy_setopt(c, CURLOPT_WRITEDATA, h->k);
    cu->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    cu->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu->easy_setopt(c, CURLOPT_XFERINFODATA, h->k);
    cu->easy_setopt(c, CURLOPT_ERRORBUFFER, h->err);
    cu->easy_setopt(c, CURLOPT_USERAGENT, "modelfs/" MODELFS_VERSION);
    if (mfs_curl_ca_file(NULL) != NULL)
        cu->easy_setopt(c, CURLOPT_CAINFO, mfs_curl_ca_file(NULL));
    return true;
}

/* One URL into the open, empty file `fd`, before `deadline` (now_ms);
 * 0 when the sha256 of what it wrote is s->sha. Its redirects are
 * followed as redirect.h judges them (never https to http, never to a
 * user:password), each hop within what is left of the deadline. */
static int fetch_one(const carton_src *s, const char *url, int fd, uint64_t reserve, uint64_t deadline,
                     const mfs_job *job, uint64_t *size, mfs_err *e)
{
    const carton_fetch_cfg *cfg = s->fetch;
    char shown[512];   /* no user, password or query in any message */
    mfs_url_redact(url, shown, sizeof shown);
    if (now_ms() >= deadline)
        return FAILED(e, "%s: not tried: the fetch_timeout of %llu s is used up", shown,
                      (ull)(cfg->timeout_ms / 1000));
    const mfs_curl_api *cu = mfs_curl();
    if (cu == NULL)
        return FAILED(e, "%s: not tried: %s", shown, mfs_curl_error());
    CURL *c = cu->easy_init();
    mfs_sha256_stream *md = mfs_sha256_begin();
    if (c == NULL || md == NULL) {
        if (c != NULL)
            cu->easy_cleanup(c);
        mfs_sha256_abandon(md);
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "cannot start a transfer (out of memory)");
    }
    sink k = { .fd = fd, .md = md, .job = job, .max = cfg->max, .reserve = reserve, .cu = cu,
               .c = c };
    char err[CURL_ERROR_SIZE] = "";
    hop h = { cu, url, deadline, &k, err };
    mfs_hops hops = { hop_setup, NULL, &h, url };
    char refused[600];
    CURLcode rc = mfs_redirect_follow(cu, c, &hops, refused, sizeof refused);
    long status = 0;
    cu->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    char got[MFS_SHA256_HEX];
    if (mfs_sha256_end(md, got) != 0 || k.hash_failed)
        got[0] = '\0';  /* matches no sha */
    cu->easy_cleanup(c);
    switch (k.stop) {
    case STOP_TOO_BIG:
        return FAILED(e, "%s: more than %llu bytes (fetch_max)", shown, (ull)cfg->max);
    case STOP_DECLARED:
        return FAILED(e, "%s: declares more than %llu bytes (fetch_max)", shown, (ull)cfg->max);
    case STOP_WRITE:
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "%s: cannot write the download: %s", shown,
                        strerror(k.err));
    case STOP_DISK:
        return FAILED(e, "%s: stopped after %llu bytes: %s would have less than %llu bytes "
                      "free (fetch_reserve; %llu free)", shown, (ull)k.got, s->path, (ull)reserve,
                      (ull)k.avail);
    case STOP_CANCEL:
        return mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET,
                        "%s: abandoned: the file system is being unmounted", shown);
    case STOP_NONE:
        break;
    }
    if (refused[0] != '\0')
        return FAILED(e, "%s: %s", shown, refused);
    /* libcurl's clock and ours differ by a few ms: "about at the deadline". */
    if (rc == CURLE_OPERATION_TIMEDOUT && now_ms() + 1000 >= deadline)
        return FAILED(e, "%s: %s (fetch_timeout: %llu s for the whole fetch)", shown,
                      err[0] ? err : cu->easy_strerror(rc), (ull)(cfg->timeout_ms / 1000));
    if (rc == CURLE_OUT_OF_MEMORY)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "%s: %s", shown,
                        err[0] ? err : cu->easy_strerror(rc));
    if (rc != CURLE_OK)
        return FAILED(e, "%s: %s", shown, err[0] ? err : cu->easy_strerror(rc));
    if (status >= 300 && status < 400)
        return FAILED(e, "%s: HTTP %ld with no Location to follow", shown, status);
    if (strcmp(got, s->sha) != 0)
        return mfs_fail(e, MFS_E_VERIFY, MFS_NO_OFFSET,
                        "%s: sha256 %s of the %llu bytes fetched does not match %s", shown,
                        got[0] ? got : "?", (ull)k.got, s->sha);
    *size = k.got;
    return 0;
}

/* links_dir itself: the folder held open at mount when there is one (no
 * path lookup that a swapped symlink could redirect), else its path. */
static int dir_fd(const carton_src *s)
{
    return s->root != NULL ? s->root->fd : AT_FDCWD;
}

static const char *in_dir(const carton_src *s, const char *full, const char *name)
{
    return s->root != NULL ? name : full;
}

/* An unnamed file in links_dir (nothing to clean up after a crash), or where
 * the file system cannot do that, a named one: `tmp` then holds its path. */
static int make_temp(const carton_src *s, char *tmp, size_t tmpsize)
{
    const char *dir = s->path;
    tmp[0] = '\0';
    int fd = openat(dir_fd(s), in_dir(s, dir, "."), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    if (snprintf(tmp, tmpsize, "%s/.modelfs-fetch-XXXXXX", dir) >= (int)tmpsize) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        tmp[0] = '\0';
    return fd;
}

/* Gives the checked download its name DIR/<sha256>, replacing whatever is
 * there (a bad copy; a good one is the same bytes). */
static int keep(const carton_src *s, int fd, const char *tmp, const char *dest)
{
    const char *name = in_dir(s, dest, s->sha);
    if (fsync(fd) != 0)
        return -1;
    if (tmp[0])
        return renameat(AT_FDCWD, tmp, dir_fd(s), name);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    for (int attempt = 0; attempt < 2; attempt++) {
        int r = linkat(AT_FDCWD, proc, dir_fd(s), name, AT_SYMLINK_FOLLOW);
        if (r != 0 && errno == ENOENT)  /* no /proc: needs CAP_DAC_READ_SEARCH */
            r = linkat(fd, "", dir_fd(s), name, AT_EMPTY_PATH);
        if (r == 0 || errno != EEXIST)
            return r;
        if (unlinkat(dir_fd(s), name, 0) != 0 && errno != ENOENT)
            return -1;
    }
    return -1;
}

/* As much of `src` as fits in dst[size] (size > 0), terminated; the
 * characters copied. */
static size_t put_cut(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
    return n;
}

/* Fetches s->urls in turn (one deadline for all of them) into s->path; the
 * open, checked file of *size bytes, or -1 with e: every URL's failure in
 * order, "URL: problem; URL: problem", under the code of the last one. */
static int fetch(const carton_src *s, const mfs_job *job, const char *dest, uint64_t *size,
                 mfs_err *e)
{
    carton_fetch_init();
    const carton_fetch_cfg *cfg = s->fetch;
    uint64_t start = now_ms();
    uint64_t deadline = cfg->timeout_ms > UINT64_MAX - start ? UINT64_MAX : start + cfg->timeout_ms;
    size_t tmpsize = strlen(s->path) + 32;
    char *tmp = malloc(tmpsize);
    if (tmp == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    int kept_fd = -1;
    unsigned tried = 0;
    mfs_err all = { 0 };
    FAILED(&all, "no URL");
    char *text = all.msg;
    size_t room = sizeof all.msg;
    for (const char *u = s->urls; u != NULL && *u && kept_fd < 0 && !mfs_job_cancelled(job);) {
        const char *nl = strchr(u, '\n');
        char *url = strndup(u, nl ? (size_t)(nl - u) : strlen(u));
        if (url == NULL) {
            all.code = MFS_E_NOMEM;
            snprintf(text, room, "out of memory");
            break;
        }
        u = nl ? nl + 1 : NULL;
        int fd = make_temp(s, tmp, tmpsize);
        if (fd < 0) {
            all.code = MFS_E_IO;
            snprintf(text, room, "cannot create a file in %s: %s", s->path, strerror(errno));
            free(url);
            break;
        }
        mfs_err one = { 0 };
        if (fetch_one(s, url, fd, reserve_for(cfg, fd), deadline, job, size, &one) == 0) {
            if (keep(s, fd, tmp, dest) == 0) {
                tmp[0] = '\0';
            } else {
                /* The bytes are good: serve them (a named temporary file is
                 * removed below; the open fd keeps it); the next open fetches again. */
                char shown[512];
                mfs_url_redact(url, shown, sizeof shown);
                mfs_log("%s: cannot keep the copy fetched from %s as %s: %s", s->label, shown,
                        dest, strerror(errno));
            }
            kept_fd = fd;
            fd = -1;
        } else {
            size_t at = tried++ ? strlen(text) : 0;
            if (at > 0 && at < room)
                at += put_cut(text + at, room - at, "; ");
            if (at < room)
                put_cut(text + at, room - at, one.msg);
            all.code = one.code;
        }
        if (fd >= 0)
            close(fd);
        if (tmp[0])
            unlink(tmp);
        free(url);
    }
    free(tmp);
    if (kept_fd < 0)
        mfs_fail(e, all.code, MFS_NO_OFFSET, "%s", all.msg);
    return kept_fd;
}

/* DIR/<sha256> when it is a regular file whose sha256 matches: 1 with its
 * bytes in out; 0 when it is not there or not right (`note` says which,
 * when it is there); -1 when the job was cancelled. */
static int use_kept(const carton_src *s, const mfs_job *job, const char *dest, mfs_bytes *out,
                    mfs_err *note)
{
    int fd = s->root != NULL ? mfs_folder_open_at(s->root, s->sha, false)
                             : open(dest, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            mfs_fail(note, MFS_E_IO, MFS_NO_OFFSET, "cannot open %s: %s", dest, strerror(errno));
        return 0;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        mfs_fail(note, MFS_E_IO, MFS_NO_OFFSET, "%s is not a regular file", dest);
        close(fd);
        return 0;
    }
    mfs_bytes b = { 0 };
    if (mfs_map_fd(fd, dest, (uint64_t)st.st_size, &b, note) != 0)
        return 0;
    if (b.len)
        madvise((void *)(uintptr_t)b.data, (size_t)b.len, MADV_SEQUENTIAL);
    /* Guarded: the copy may be cut short while it is hashed. */
    char got[MFS_SHA256_HEX] = "";
    int r = mfs_sha256_hex_mapped(b.data, b.len, job, got);
    if (r == 0 && strcmp(got, s->sha) == 0) {
        *out = b;
        return 1;
    }
    if (b.release)
        b.release(&b);
    if (r == -1 && mfs_job_cancelled(job))
        return -1;
    if (r != 0)
        got[0] = '\0';
    mfs_fail(note, MFS_E_VERIFY, MFS_NO_OFFSET, "the copy %s does not match its sha256 (%s)", dest,
             got[0] ? got : "it changed while it was hashed");
    return 0;
}

int carton_link_produce(const carton_src *s, const mfs_job *job, mfs_bytes *out, mfs_err *e)
{
    /* Nowhere to keep a download: fetching is refused. */
    if (s->path == NULL)
        return FAILED(e, "a LINKS file that is not in the archive; mount with "
                      "-o links_dir=DIR holding DIR/%s (files fetched from its URLs are kept there)",
                      s->sha);
    size_t destsize = strlen(s->path) + 2 + MFS_SHA256_HEX;
    char *dest = malloc(destsize);
    if (dest == NULL)
        return mfs_fail(e, MFS_E_NOMEM, MFS_NO_OFFSET, "out of memory");
    snprintf(dest, destsize, "%s/%s", s->path, s->sha);
    mfs_err note = { 0 };
    int r = use_kept(s, job, dest, out, &note);
    if (r != 0) {
        if (r < 0)
            mfs_fail(e, MFS_E_CANCELLED, MFS_NO_OFFSET,
                     "%s: abandoned: the file system is being unmounted", dest);
        free(dest);
        return r > 0 ? 0 : -1;
    }
    if (note.code != MFS_OK)
        mfs_log("%s: %s: fetching it again", s->label, note.msg);
    uint64_t size = 0;
    int fd = fetch(s, job, dest, &size, e);
    if (fd < 0) {
        free(dest);
        return -1;
    }
    r = mfs_map_fd(fd, dest, size, out, e);
    free(dest);
    return r;
}
