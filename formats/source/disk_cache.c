#include "disk_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32_fast.h"
#include "digest.h"
#include "guard.h"
#include "log.h"
#include "xalloc.h"

/* A block file is the block's bytes it holds, then a trailer (magic,
 * index, the block's length, where the bytes begin in it, CRC-32, how
 * many): the bytes start at offset 0, so a block maps page-aligned
 * (mfs_disk_cache_map_part). */
#define TRAILER 64
/* No block is longer than its uint32_t length: a bigger file is not one
 * (a sparse file of terabytes counted as the cache's would evict all). */
#define BLOCK_FILE_MAX (TRAILER + (uint64_t)UINT32_MAX)
#define OBJECT_MAX 600
/* A temporary file a crashed writer left behind: removed at the scan. */
#define STALE_TMP_SECONDS 3600
/* 04: a file may hold part of its block, [lo, lo + n) (03 held it
 * whole); the trailer says which. 03: the trailer after the bytes (02 had
 * it as a header before them). The check is a CRC-32 (01 had a SHA-256,
 * a quarter of a warm read's work; the folder is the user's own, so the
 * check is against damage, not forgery). A block of an older layout does
 * not match and is fetched again. */
static const char MAGIC[8] = { 'M', 'F', 'S', 'B', 'L', 'K', '0', '4' };

/* Every path below the cache folder is opened relative to the folder
 * descriptors opened once (DIR/blocks, DIR/objects, from DIR's), never through a
 * symlink and never waiting (O_NONBLOCK: a FIFO opens at once, and is
 * then seen for what it is by fstat). Whatever is not a regular file (or
 * a folder, for blocks/KEY) of this user is not the cache's: read as a
 * miss, and its name removed (the name only: unlinkat never follows).
 * Files are only ever created new and renamed into place, never written
 * through an existing name, so a hard link to a file elsewhere is never
 * written to; its time is not touched either. */
#define OPEN_DIR (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
#define OPEN_FILE (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

typedef struct entry {
    uint8_t key[32];
    uint64_t index;
    int64_t mtime_ns;
    uint64_t bytes;
} entry;

struct mfs_disk_cache {
    char *dir;                /* as given: for messages and to find it again */
    int bfd, ofd;             /* DIR/blocks, DIR/objects, opened once */
    uid_t uid;
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

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sub_floor(uint64_t a, uint64_t b)
{
    return b < a ? a - b : 0;
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

static int hex_digit(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* A KEY or UKEY is 64 lowercase hex digits (mfs_disk_cache_key): never a
 * "..", a "/" or anything else that could name another file. */
static bool key_raw(const char *hex, uint8_t out[32])
{
    for (int i = 0; i < 64; i++) {
        int v = hex_digit(hex[i]);
        if (v < 0)
            return false;
        if (out != NULL)
            out[i / 2] = (uint8_t)(i % 2 ? (out[i / 2] | v) : v << 4);
    }
    return hex[64] == '\0';
}

static void key_hex(const uint8_t key[32], char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", key[i]);
}

/* A block's file name: its index in hex, as written (no leading zeros). */
static void index_name(uint64_t index, char out[20])
{
    snprintf(out, 20, "%" PRIx64, index);
}

static bool index_of(const char *name, uint64_t *out)
{
    size_t n = strlen(name);
    if (n == 0 || n > 16 || (name[0] == '0' && n > 1))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hex_digit(name[i]);
        if (d < 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* A regular file of this user: one the cache may have made. */
static bool ours(const mfs_disk_cache *c, const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_uid == c->uid;
}

static bool block_sized(const struct stat *st)
{
    return st->st_size > TRAILER && (uint64_t)st->st_size <= BLOCK_FILE_MAX;
}

/* Removes `name` in folder `fd` when it is anything but a folder (a
 * FIFO, a symlink, a corrupt block): only the name, never what a symlink
 * points to. */
static bool drop(int fd, const char *name)
{
    struct stat st;
    return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode) &&
           unlinkat(fd, name, 0) == 0;
}

/* `name` in `at` (made when `make`) opened as a folder: of this user,
 * written by it only (another's could hold forged blocks). -1 with errno
 * (ENOTDIR for anything else, a symlink too). */
static int open_folder(int at, const char *name, bool make, uid_t uid)
{
    if (make && mkdirat(at, name, 0700) != 0 && errno != EEXIST)
        return -1;
    int fd = openat(at, name, OPEN_DIR);
    if (fd < 0) {
        if (errno == ELOOP)
            errno = ENOTDIR;   /* a symlink: O_NOFOLLOW refused it */
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid ||
        (st.st_mode & 022) != 0) {
        close(fd);
        errno = ENOTDIR;
        return -1;
    }
    return fd;
}

/* DIR/blocks/KEY, made if missing: -1 with errno (ENOTDIR: not a folder
 * of ours). A symlink or file in its place is removed first (a folder of
 * the cache's own goes there). */
static int key_folder(const mfs_disk_cache *c, const char *key)
{
    int fd = open_folder(c->bfd, key, true, c->uid);
    if (fd < 0 && errno == ENOTDIR && drop(c->bfd, key))
        fd = open_folder(c->bfd, key, true, c->uid);
    return fd;
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
    if (c != NULL) {
        pthread_mutex_unlock(&shared_mu);
        return c;
    }
    if (mkdirs(dir) != 0) {
        int err = errno;
        pthread_mutex_unlock(&shared_mu);
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cache_dir %s: %s", dir, strerror(err));
        return NULL;
    }
    /* DIR itself is the user's own choice: its path is followed, once;
     * nothing below it is. Blocks are served as the model's bytes: a
     * folder another user may write to could hold blocks forged for any
     * key. */
    uid_t uid = geteuid();
    int fds[3] = { -1, -1, -1 };
    const char *names[] = { "", "/blocks", "/objects" };
    int i = 0, err = 0;
    struct stat st;
    fds[0] = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fds[0] < 0) {
        err = errno == ENOTDIR ? 0 : errno;
    } else if (fstat(fds[0], &st) != 0 || st.st_uid != uid || (st.st_mode & 022) != 0) {
        err = 0;   /* not the user's own, or others may write to it */
    } else {
        for (i = 1; i < 3 && (fds[i] = open_folder(fds[0], names[i] + 1, true, uid)) >= 0; i++)
            ;
        err = i < 3 && errno != ENOTDIR ? errno : 0;
    }
    if (i < 3) {
        for (int k = 0; k < 3; k++)
            if (fds[k] >= 0)
                close(fds[k]);
        pthread_mutex_unlock(&shared_mu);
        if (err != 0)
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cache_dir %s: %s%s: %s", dir, dir, names[i],
                     strerror(err));
        else
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                     "cache_dir %s: %s%s is not a folder of this user that only it may write to",
                     dir, dir, names[i]);
        return NULL;
    }
    c = mfs_xcalloc(1, sizeof *c);
    c->dir = mfs_xstrdup(dir);
    close(fds[0]);   /* its two folders are all that is used */
    c->bfd = fds[1];
    c->ofd = fds[2];
    c->uid = uid;
    c->max = max;
    pthread_mutex_init(&c->mu, NULL);
    c->next = shared;
    shared = c;
    pthread_mutex_unlock(&shared_mu);
    return c;
}

static void push(mfs_disk_cache *c, const uint8_t key[32], uint64_t index, int64_t mtime_ns,
                 uint64_t bytes)
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
    entry *en = &c->q[c->n++];
    memcpy(en->key, key, 32);
    en->index = index;
    en->mtime_ns = mtime_ns;
    en->bytes = bytes;
}

static int by_time(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* The blocks of one KEY folder into the queue. Only names the cache
 * writes (a block index) of regular files of ours count; a file too big
 * to be a block is removed, and so is a temporary file older than an
 * hour (its writer crashed). */
static void scan_key(mfs_disk_cache *c, const uint8_t key[32], int kfd)
{
    DIR *d = fdopendir(kfd);
    if (d == NULL) {
        close(kfd);
        return;
    }
    time_t now = time(NULL);
    for (struct dirent *b; (b = readdir(d)) != NULL;) {
        struct stat st;
        uint64_t index = 0;
        bool tmp = strncmp(b->d_name, ".tmp-", 5) == 0;
        if ((!tmp && !index_of(b->d_name, &index)) ||
            fstatat(dirfd(d), b->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !ours(c, &st))
            continue;
        if (tmp) {
            if (now - st.st_mtim.tv_sec > STALE_TMP_SECONDS)
                unlinkat(dirfd(d), b->d_name, 0);
            continue;
        }
        if (!block_sized(&st)) {
            unlinkat(dirfd(d), b->d_name, 0);
            continue;
        }
        push(c, key, index, ns_of(&st), (uint64_t)st.st_size);
        c->used = add_sat(c->used, (uint64_t)st.st_size);
    }
    closedir(d);
}

/* Every block file on disk, oldest first (once, at the first write). */
static void scan(mfs_disk_cache *c)
{
    int tfd = openat(c->bfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *top = tfd >= 0 ? fdopendir(tfd) : NULL;
    if (top == NULL && tfd >= 0)
        close(tfd);
    for (struct dirent *k; top != NULL && (k = readdir(top)) != NULL;) {
        uint8_t key[32];
        if (!key_raw(k->d_name, key))
            continue;
        /* Not followed: a symlink here is not a folder of the cache. */
        int kfd = open_folder(c->bfd, k->d_name, false, c->uid);
        if (kfd >= 0)
            scan_key(c, key, kfd);
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
        char hex[65], name[20];
        key_hex(en.key, hex);
        index_name(en.index, name);
        int kfd = openat(c->bfd, hex, OPEN_DIR);
        if (kfd < 0)
            continue;   /* gone, or no longer a folder: nothing of ours to remove */
        struct stat st;
        /* By the file's size now: a block's file may have been replaced by
         * one holding more of it (its entry then comes twice: the second
         * finds it gone). */
        if (fstatat(kfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
            if (ours(c, &st) && ns_of(&st) > en.mtime_ns) {
                push(c, en.key, en.index, ns_of(&st), (uint64_t)st.st_size);
            } else if (unlinkat(kfd, name, 0) == 0) {
                c->used = sub_floor(c->used, ours(c, &st) ? (uint64_t)st.st_size : en.bytes);
            }
        }
        close(kfd);
    }
    return c->used + bytes <= c->max;
}

/* Whether trailer `t` is that of block `index` of `len` bytes, in a file
 * of `n` bytes before it; where they begin in the block into *lo, their
 * CRC into *crc. */
static bool trailer_ok(const uint8_t t[TRAILER], uint64_t index, uint32_t len, uint64_t n,
                       uint32_t *lo, uint32_t *crc)
{
    uint64_t idx;
    uint32_t l, held;
    memcpy(&idx, t + 8, 8);
    memcpy(&l, t + 16, 4);
    memcpy(lo, t + 20, 4);
    memcpy(crc, t + 24, 4);
    memcpy(&held, t + 28, 4);
    return memcmp(t, MAGIC, 8) == 0 && idx == index && l == len && held == n && n > 0 &&
           *lo <= len && n <= len - *lo;
}

/* Block `index` of `key` opened: its file's descriptor (its folder's in
 * *kfd, its name in name), or -1 (*kfd -1 too when its folder is not
 * there; errno ELOOP: a symlink in the block's place). */
static int open_block(mfs_disk_cache *c, const char *key, uint64_t index, int *kfd,
                      char name[20])
{
    *kfd = -1;
    if (!key_raw(key, NULL))
        return -1;
    *kfd = openat(c->bfd, key, OPEN_DIR);
    if (*kfd < 0) {
        if (errno == ELOOP || errno == ENOTDIR)
            drop(c->bfd, key);   /* a symlink or a file in place of the folder */
        return -1;
    }
    index_name(index, name);
    return openat(*kfd, name, OPEN_FILE);
}

/* Torn, corrupt, of another length, or not a file of ours (a FIFO, a
 * symlink): dropped, fetched again. What the scan counted is counted
 * off. `fd` < 0 with errno ELOOP: a symlink. */
static void drop_bad(mfs_disk_cache *c, int kfd, const char *name, int fd, const struct stat *st)
{
    bool counted = fd >= 0 && ours(c, st) && block_sized(st);
    pthread_mutex_lock(&c->mu);
    if (drop(kfd, name) && c->scanned && counted)
        c->used = sub_floor(c->used, (uint64_t)st->st_size);
    pthread_mutex_unlock(&c->mu);
}

/* A hit: the most recently used. Once a minute at most: a write to the
 * folder for every block read cost a warm read a fifth of its time, and
 * LRU needs no finer clock. Not a file with another name (a hard link
 * from elsewhere): its time is not the cache's. */
static void touch(int fd, const struct stat *st)
{
    if (time(NULL) - st->st_mtim.tv_sec > 60 && st->st_nlink == 1)
        futimens(fd, NULL);
}

bool mfs_disk_cache_read_part(mfs_disk_cache *c, const char *key, uint64_t index, uint32_t len,
                              uint8_t *buf, uint32_t *lo, uint32_t *n)
{
    int kfd;
    char name[20];
    struct stat st = { 0 };
    int fd = open_block(c, key, index, &kfd, name);
    if (fd < 0 && (kfd < 0 || errno != ELOOP)) {
        if (kfd >= 0)
            close(kfd);
        return false;   /* not there (or no descriptor left): nothing seen to drop */
    }
    uint8_t h[TRAILER];
    uint32_t want;
    uint64_t held = 0;
    bool ok = fd >= 0 && fstat(fd, &st) == 0 && ours(c, &st) && block_sized(&st) &&
              (held = (uint64_t)st.st_size - TRAILER) <= len &&
              pread(fd, h, TRAILER, (off_t)held) == TRAILER &&
              trailer_ok(h, index, len, held, lo, &want) &&
              pread(fd, buf, held, 0) == (ssize_t)held && want == mfs_crc32(0, buf, held);
    if (!ok)
        drop_bad(c, kfd, name, fd, &st);
    else
        touch(fd, &st);
    if (fd >= 0)
        close(fd);
    close(kfd);
    if (ok)
        *n = (uint32_t)held;
    return ok;
}

bool mfs_disk_cache_read(mfs_disk_cache *c, const char *key, uint64_t index, uint8_t *buf,
                         uint32_t len)
{
    uint32_t lo, n;
    return mfs_disk_cache_read_part(c, key, index, len, buf, &lo, &n) && lo == 0 && n == len;
}

size_t mfs_disk_cache_map_size(uint32_t n)
{
    return (size_t)n + TRAILER;
}

const uint8_t *mfs_disk_cache_map_part(mfs_disk_cache *c, const char *key, uint64_t index,
                                       uint32_t len, uint32_t *lo, uint32_t *n)
{
    int kfd;
    char name[20];
    struct stat st = { 0 };
    int fd = open_block(c, key, index, &kfd, name);
    if (fd < 0 && (kfd < 0 || errno != ELOOP)) {
        if (kfd >= 0)
            close(kfd);
        errno = 0;
        return NULL;
    }
    uint8_t h[TRAILER];
    uint32_t want;
    uint64_t held = 0;
    /* The trailer now (a cheap first look); the bytes and their CRC at
     * every copy (mfs_disk_cache_copy_part). MAP_POPULATE: the pages are
     * read here, on the thread that loads the block, not where a reader
     * touches them. */
    bool ok = fd >= 0 && fstat(fd, &st) == 0 && ours(c, &st) && block_sized(&st) &&
              (held = (uint64_t)st.st_size - TRAILER) <= len &&
              pread(fd, h, TRAILER, (off_t)held) == TRAILER &&
              trailer_ok(h, index, len, held, lo, &want);
    void *m = MAP_FAILED;
    int err = 0;
    if (ok) {
        m = mmap(NULL, mfs_disk_cache_map_size((uint32_t)held), PROT_READ,
                 MAP_SHARED | MAP_POPULATE, fd, 0);
        err = m == MAP_FAILED ? ENOMEM : 0;
        touch(fd, &st);
        *n = (uint32_t)held;
    } else {
        drop_bad(c, kfd, name, fd, &st);
    }
    if (fd >= 0)
        close(fd);
    close(kfd);
    errno = err;
    return m == MAP_FAILED ? NULL : m;
}

typedef struct copy_job {
    const uint8_t *map;
    uint64_t index;
    uint32_t len, lo, held, in, n;
    uint8_t *dst;
} copy_job;

/* The CRC over the bytes held as they are read now: those before the
 * copy and after it from the mapping, the copied ones from dst, so what
 * is handed out is what was checked. 1 when it matches the trailer. */
static int copy_checked(void *arg)
{
    const copy_job *j = arg;
    uint8_t t[TRAILER];
    uint32_t want, lo;
    memcpy(t, j->map + j->held, TRAILER);
    uint32_t crc = mfs_crc32(0, j->map, j->in);
    crc = mfs_crc32_copy(crc, j->dst, j->map + j->in, j->n);
    crc = mfs_crc32(crc, j->map + j->in + j->n, j->held - j->in - j->n);
    return trailer_ok(t, j->index, j->len, j->held, &lo, &want) && lo == j->lo && want == crc;
}

bool mfs_disk_cache_copy_part(const uint8_t *map, uint64_t index, uint32_t len, uint32_t lo,
                              uint32_t held, uint32_t in, uint32_t n, uint8_t *dst)
{
    if (lo > len || held > len - lo || in > held || n > held - in)
        return false;
    copy_job j = { map, index, len, lo, held, in, n, dst };
    /* A page past the file's end (truncated since it was mapped) raises
     * SIGBUS: caught, the block is reported bad. */
    return mfs_guard_run(copy_checked, &j) == 1;
}

void mfs_disk_cache_drop(mfs_disk_cache *c, const char *key, uint64_t index)
{
    int kfd;
    char name[20];
    struct stat st = { 0 };
    int fd = open_block(c, key, index, &kfd, name);
    if (kfd < 0)
        return;
    if (fd >= 0 && fstat(fd, &st) != 0)
        memset(&st, 0, sizeof st);
    drop_bad(c, kfd, name, fd, &st);
    if (fd >= 0)
        close(fd);
    close(kfd);
}

/* 0, or the errno of the write that failed (a short write is retried,
 * and the next one says why: ENOSPC, not whatever errno held before). */
static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *s = p;
    while (n > 0) {
        ssize_t k = write(fd, s, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return errno;
        if (k == 0)
            return EIO;
        s += k;
        n -= (size_t)k;
    }
    return 0;
}

/* `name` in folder `dfd` made to hold a then b, whole or not at all:
 * written to a new temporary file there and renamed over it (a symlink,
 * a FIFO or a hard link in its place is replaced, never written
 * through). 0, or the errno of the call that failed (the temporary file
 * removed). */
static int write_replace(int dfd, const char *name, const void *a, size_t na, const void *b,
                         size_t nb)
{
    static unsigned long seq;
    char tmp[64];
    int fd = -1, err = EEXIST;
    /* O_EXCL never follows a symlink planted at the name; a few names
     * are tried past ones already taken. */
    for (int tries = 0; fd < 0 && err == EEXIST && tries < 8; tries++) {
        snprintf(tmp, sizeof tmp, ".tmp-%ld-%lu", (long)getpid(),
                 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            err = errno;
    }
    if (fd < 0)
        return err;
    err = write_all(fd, a, na);
    if (err == 0 && nb > 0)
        err = write_all(fd, b, nb);
    if (close(fd) != 0 && err == 0)
        err = errno;
    if (err == 0 && renameat(dfd, tmp, dfd, name) != 0)
        err = errno;
    if (err != 0)
        unlinkat(dfd, tmp, 0);
    return err;
}

static void warn_once(mfs_disk_cache *c, const char *fmt, const char *what)
{
    pthread_mutex_lock(&c->mu);
    bool warn = !c->warned;
    c->warned = true;
    pthread_mutex_unlock(&c->mu);
    if (warn)
        mfs_warn(fmt, c->dir, what);
}

/* Whether block file `name` of folder kfd holds [lo, lo + n) of block
 * `index` (of `len` bytes) already: its size and trailer say so. */
static bool held_already(const mfs_disk_cache *c, int kfd, const char *name, uint64_t index,
                         uint32_t len, uint32_t lo, uint32_t n)
{
    struct stat st;
    if (fstatat(kfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !ours(c, &st) ||
        (uint64_t)st.st_size != TRAILER + (uint64_t)n)
        return false;
    int fd = openat(kfd, name, OPEN_FILE);
    if (fd < 0)
        return false;
    uint8_t h[TRAILER];
    uint32_t tlo, crc;
    bool same = pread(fd, h, TRAILER, n) == TRAILER && trailer_ok(h, index, len, n, &tlo, &crc) &&
                tlo == lo;
    close(fd);
    return same;
}

void mfs_disk_cache_write_part(mfs_disk_cache *c, const char *key, uint64_t index, uint32_t len,
                               uint32_t lo, const uint8_t *buf, uint32_t n)
{
    if (n == 0 || lo > len || n > len - lo)
        return;
    uint8_t raw[32];
    if (!key_raw(key, raw))
        return;
    int kfd = key_folder(c, key);
    if (kfd < 0) {
        int err = errno;
        if (err == ENOTDIR)
            warn_once(c, "cache_dir %s: blocks/%s is not a folder of the cache's; "
                      "its blocks are fetched again", key);
        else
            warn_once(c, "cache_dir %s: cannot keep a block: %s (blocks are fetched "
                      "again)", strerror(err));
        return;
    }
    char name[20];
    index_name(index, name);
    uint64_t bytes = TRAILER + (uint64_t)n;
    struct stat st;
    if (held_already(c, kfd, name, index, len, lo, n)) {
        close(kfd);
        return;   /* there already (another reader, another mount) */
    }
    /* Another part of the block there: replaced, no longer counted. */
    uint64_t old =
        fstatat(kfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && ours(c, &st) ? (uint64_t)st.st_size : 0;
    pthread_mutex_lock(&c->mu);
    if (!c->scanned)
        scan(c);
    bool room = make_room(c, bytes);
    if (room)
        c->used += bytes;
    pthread_mutex_unlock(&c->mu);
    if (!room) {
        close(kfd);
        return;
    }
    uint8_t h[TRAILER] = { 0 };
    memcpy(h, MAGIC, 8);
    memcpy(h + 8, &index, 8);
    memcpy(h + 16, &len, 4);
    memcpy(h + 20, &lo, 4);
    uint32_t crc = mfs_crc32(0, buf, n);
    memcpy(h + 24, &crc, 4);
    memcpy(h + 28, &n, 4);
    int err = write_replace(kfd, name, buf, n, h, TRAILER);
    pthread_mutex_lock(&c->mu);
    if (err == 0) {
        int64_t t = fstatat(kfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? ns_of(&st) : 0;
        push(c, raw, index, t, bytes);   /* the newest: at the back */
        c->used = sub_floor(c->used, old);
    } else {
        c->used = sub_floor(c->used, bytes);
    }
    pthread_mutex_unlock(&c->mu);
    close(kfd);
    if (err != 0)
        warn_once(c, "cache_dir %s: cannot keep a block: %s (blocks are fetched again)",
                  strerror(err));
}

void mfs_disk_cache_write(mfs_disk_cache *c, const char *key, uint64_t index, const uint8_t *buf,
                          uint32_t len)
{
    mfs_disk_cache_write_part(c, key, index, len, 0, buf, len);
}

bool mfs_disk_cache_object(mfs_disk_cache *c, const char *ukey, mfs_disk_object *out)
{
    char text[OBJECT_MAX];
    if (!key_raw(ukey, NULL))
        return false;
    int fd = openat(c->ofd, ukey, OPEN_FILE);
    if (fd < 0) {
        if (errno == ELOOP)
            drop(c->ofd, ukey);
        return false;
    }
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && ours(c, &st) && st.st_size > 0 &&
        st.st_size < (off_t)sizeof text)
        n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    if (n <= 0) {
        drop(c->ofd, ukey);   /* a FIFO, a device, a file too big: not a record */
        return false;
    }
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
    char text[OBJECT_MAX];
    if (!key_raw(ukey, NULL))
        return;
    int len = snprintf(text, sizeof text, "%" PRIu64 "\n%" PRId64 "\n%s\n", o->size, o->mtime,
                       o->etag);
    if (len > 0 && len < (int)sizeof text)
        (void)write_replace(c->ofd, ukey, text, (size_t)len, NULL, 0);   /* best effort */
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
