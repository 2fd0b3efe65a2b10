#include "disk_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32_fast.h"
#include "digest.h"
#include "log.h"
#include "xalloc.h"

#define HEADER 64
/* 02: a CRC-32 of the block (01 had a SHA-256, a quarter of a warm
 * read's work; the folder is the user's own, so the check is against
 * damage, not forgery). An 01 block does not match and is fetched again. */
static const char MAGIC[8] = { 'M', 'F', 'S', 'B', 'L', 'K', '0', '2' };

typedef struct entry {
    char *path;
    int64_t mtime_ns;
    uint64_t bytes;
} entry;

struct mfs_disk_cache {
    char *dir;
    uint64_t max, used;
    pthread_mutex_t mu;
    bool scanned, warned;
    entry *q;                 /* oldest first from `head` on: eviction order */
    size_t head, n, cap;
    mfs_disk_cache *next;
};

static pthread_mutex_t shared_mu = PTHREAD_MUTEX_INITIALIZER;
static mfs_disk_cache *shared;

static int64_t ns_of(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static int mkdirs(const char *path)
{
    char *p = mfs_xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int r = mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return r;
}

char *mfs_disk_cache_default_dir(void)
{
    char buf[4096];
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (x != NULL && x[0] == '/')
        snprintf(buf, sizeof buf, "%s/modelfs", x);
    else if (home != NULL && home[0] == '/')
        snprintf(buf, sizeof buf, "%s/.cache/modelfs", home);
    else
        return NULL;
    return mfs_xstrdup(buf);
}

static void sha256(const void *p, size_t len, unsigned char out[32])
{
    if (mfs_sha256(p, len, out) != 0)
        memset(out, 0, 32);   /* no digest: nothing will match it */
}

void mfs_disk_cache_key(char out[65], const char *const *parts, int nparts)
{
    size_t total = 0;
    for (int i = 0; i < nparts; i++)
        total += strlen(parts[i]) + 1;
    char *all = mfs_xmalloc(total + 1), *w = all;
    for (int i = 0; i < nparts; i++) {
        size_t n = strlen(parts[i]);
        memcpy(w, parts[i], n);
        w += n;
        *w++ = '\n';
    }
    unsigned char d[32];
    sha256(all, (size_t)(w - all), d);
    free(all);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

mfs_disk_cache *mfs_disk_cache_get_shared(const char *dir, uint64_t max, mfs_err *e)
{
    if (strlen(dir) > 3000)
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "cache_dir: a path of more than 3000 bytes"),
               NULL;
    pthread_mutex_lock(&shared_mu);
    mfs_disk_cache *c = shared;
    while (c != NULL && strcmp(c->dir, dir) != 0)
        c = c->next;
    if (c == NULL) {
        char sub[4200];
        snprintf(sub, sizeof sub, "%s/blocks", dir);
        int r1 = mkdirs(sub);
        snprintf(sub, sizeof sub, "%s/objects", dir);
        if (r1 != 0 || mkdirs(sub) != 0) {
            int err = errno;
            pthread_mutex_unlock(&shared_mu);
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cache_dir %s: %s", dir, strerror(err));
            return NULL;
        }
        /* Blocks are served as the model's bytes: a folder another user
         * may write to could hold blocks forged for any key. */
        const char *subs[] = { "", "/blocks", "/objects" };
        for (int i = 0; i < 3; i++) {
            struct stat st;
            snprintf(sub, sizeof sub, "%s%s", dir, subs[i]);
            if (lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
                (st.st_mode & 022) != 0) {
                pthread_mutex_unlock(&shared_mu);
                mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                         "cache_dir %s: %s is not a folder of this user that only it may write to",
                         dir, sub);
                return NULL;
            }
        }
        c = mfs_xcalloc(1, sizeof *c);
        c->dir = mfs_xstrdup(dir);
        c->max = max;
        pthread_mutex_init(&c->mu, NULL);
        c->next = shared;
        shared = c;
    }
    pthread_mutex_unlock(&shared_mu);
    return c;
}

static void push(mfs_disk_cache *c, char *path, int64_t mtime_ns, uint64_t bytes)
{
    if (c->head > 0 && c->head * 2 >= c->n) {   /* reuse the room popped */
        memmove(c->q, c->q + c->head, (c->n - c->head) * sizeof *c->q);
        c->n -= c->head;
        c->head = 0;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->q = mfs_xrealloc(c->q, c->cap * sizeof *c->q);
    }
    c->q[c->n++] = (entry){ path, mtime_ns, bytes };
}

static int by_time(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* Every block file on disk, oldest first (once, at the first write). */
static void scan(mfs_disk_cache *c)
{
    char path[4700];
    snprintf(path, sizeof path, "%s/blocks", c->dir);
    DIR *top = opendir(path);
    for (struct dirent *k; top != NULL && (k = readdir(top)) != NULL;) {
        if (k->d_name[0] == '.')
            continue;
        char sub[4400];
        snprintf(sub, sizeof sub, "%s/blocks/%s", c->dir, k->d_name);
        DIR *d = opendir(sub);
        for (struct dirent *b; d != NULL && (b = readdir(d)) != NULL;) {
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", sub, b->d_name);
            if (b->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
                continue;
            push(c, mfs_xstrdup(path), ns_of(&st), (uint64_t)st.st_size);
            c->used += (uint64_t)st.st_size;
        }
        if (d != NULL)
            closedir(d);
    }
    if (top != NULL)
        closedir(top);
    if (c->n - c->head > 1)   /* none: q is NULL, which qsort may not get */
        qsort(c->q + c->head, c->n - c->head, sizeof *c->q, by_time);
    c->scanned = true;
}

/* Makes room for `bytes` more (c->mu held): false when it cannot be. */
static bool make_room(mfs_disk_cache *c, uint64_t bytes)
{
    if (bytes > c->max)
        return false;
    /* A file touched by a hit since it was queued goes to the back once
     * (LRU by file time); each is looked at at most twice. */
    size_t budget = 2 * (c->n - c->head) + 1;
    while (c->used + bytes > c->max && c->head < c->n && budget-- > 0) {
        entry en = c->q[c->head++];
        struct stat st;
        if (stat(en.path, &st) == 0 && ns_of(&st) > en.mtime_ns) {
            push(c, en.path, ns_of(&st), en.bytes);
            continue;
        }
        if (unlink(en.path) == 0)
            c->used -= en.bytes < c->used ? en.bytes : c->used;
        free(en.path);
    }
    return c->used + bytes <= c->max;
}

static void block_path(const mfs_disk_cache *c, const char *key, uint64_t index, char *out,
                       size_t size)
{
    snprintf(out, size, "%s/blocks/%s/%" PRIx64, c->dir, key, index);
}

bool mfs_disk_cache_read(mfs_disk_cache *c, const char *key, uint64_t index, uint8_t *buf,
                         uint32_t len)
{
    char path[4400];
    block_path(c, key, index, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    uint8_t h[HEADER];
    struct stat st = { 0 };
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              (uint64_t)st.st_size == HEADER + (uint64_t)len &&
              pread(fd, h, HEADER, 0) == HEADER && pread(fd, buf, len, HEADER) == (ssize_t)len;
    close(fd);
    if (ok) {
        uint64_t idx;
        uint32_t n;
        memcpy(&idx, h + 8, 8);
        memcpy(&n, h + 16, 4);
        uint32_t want, crc = mfs_crc32(0, buf, len);
        memcpy(&want, h + 24, 4);
        ok = memcmp(h, MAGIC, 8) == 0 && idx == index && n == len && want == crc;
    }
    if (!ok) {
        /* Torn, corrupt or of another length: dropped, fetched again. */
        pthread_mutex_lock(&c->mu);
        if (unlink(path) == 0 && c->scanned)
            c->used -= (uint64_t)st.st_size < c->used ? (uint64_t)st.st_size : c->used;
        pthread_mutex_unlock(&c->mu);
        return false;
    }
    /* A hit: the most recently used. Once a minute at most: a write to
     * the folder for every block read cost a warm read a fifth of its
     * time, and LRU needs no finer clock. */
    if (time(NULL) - st.st_mtim.tv_sec > 60)
        utimensat(AT_FDCWD, path, NULL, 0);
    return true;
}

/* `path` (in folder `dir`) made to hold a then b, whole or not at all:
 * written to a temporary file there and renamed over it. False with errno
 * on failure (the temporary file removed). */
static bool write_replace(const char *dir, const char *path, const void *a, size_t na,
                          const void *b, size_t nb)
{
    static unsigned long seq;
    char tmp[4500];
    snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-%lu", dir, (long)getpid(),
             __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    bool ok = write(fd, a, na) == (ssize_t)na && (nb == 0 || write(fd, b, nb) == (ssize_t)nb);
    if (close(fd) != 0)
        ok = false;
    if (ok && rename(tmp, path) == 0)
        return true;
    int err = errno;
    unlink(tmp);
    errno = err;
    return false;
}

void mfs_disk_cache_write(mfs_disk_cache *c, const char *key, uint64_t index, const uint8_t *buf,
                          uint32_t len)
{
    char path[4400], sub[4400];
    block_path(c, key, index, path, sizeof path);
    struct stat st;
    if (stat(path, &st) == 0)
        return;   /* there already (another reader, another mount) */
    uint64_t bytes = HEADER + (uint64_t)len;
    pthread_mutex_lock(&c->mu);
    if (!c->scanned)
        scan(c);
    bool room = make_room(c, bytes);
    if (room)
        c->used += bytes;
    pthread_mutex_unlock(&c->mu);
    if (!room)
        return;
    uint8_t h[HEADER] = { 0 };
    memcpy(h, MAGIC, 8);
    memcpy(h + 8, &index, 8);
    memcpy(h + 16, &len, 4);
    uint32_t crc = mfs_crc32(0, buf, len);
    memcpy(h + 24, &crc, 4);
    snprintf(sub, sizeof sub, "%s/blocks/%s", c->dir, key);
    if ((mkdir(sub, 0700) == 0 || errno == EEXIST) &&
        write_replace(sub, path, h, HEADER, buf, len)) {
        pthread_mutex_lock(&c->mu);
        push(c, mfs_xstrdup(path), 0, bytes);   /* the newest: at the back */
        c->q[c->n - 1].mtime_ns = stat(path, &st) == 0 ? ns_of(&st) : 0;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    int err = errno;
    pthread_mutex_lock(&c->mu);
    c->used -= bytes < c->used ? bytes : c->used;
    bool warn = !c->warned;
    c->warned = true;
    pthread_mutex_unlock(&c->mu);
    if (warn)
        mfs_log("modelfs: cache_dir %s: cannot keep a block: %s (blocks are fetched again)", c->dir,
                strerror(err));
}

bool mfs_disk_cache_object(mfs_disk_cache *c, const char *ukey, mfs_disk_object *out)
{
    char path[4400], text[600];
    snprintf(path, sizeof path, "%s/objects/%s", c->dir, ukey);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    /* "SIZE\nMTIME\nETAG\n" */
    char *end, *nl;
    memset(out, 0, sizeof *out);
    out->size = strtoull(text, &end, 10);
    if (*end != '\n')
        return false;
    out->mtime = strtoll(end + 1, &end, 10);
    if (*end != '\n' || (nl = strchr(end + 1, '\n')) == NULL ||
        (size_t)(nl - end - 1) >= sizeof out->etag)
        return false;
    memcpy(out->etag, end + 1, (size_t)(nl - end - 1));
    return true;
}

void mfs_disk_cache_set_object(mfs_disk_cache *c, const char *ukey, const mfs_disk_object *o)
{
    char path[4400], dir[4400], text[600];
    snprintf(path, sizeof path, "%s/objects/%s", c->dir, ukey);
    snprintf(dir, sizeof dir, "%s/objects", c->dir);
    int len = snprintf(text, sizeof text, "%" PRIu64 "\n%" PRId64 "\n%s\n", o->size, o->mtime,
                       o->etag);
    if (len > 0 && len < (int)sizeof text)
        (void)write_replace(dir, path, text, (size_t)len, NULL, 0);   /* best effort */
}

uint64_t mfs_disk_cache_used(mfs_disk_cache *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->scanned)
        scan(c);
    uint64_t u = c->used;
    pthread_mutex_unlock(&c->mu);
    return u;
}
