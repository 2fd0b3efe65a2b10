#include "collection.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "folder.h"
#include "remote.h"
#include "local.h"
#include "log.h"
#include "path.h"
#include "names.h"
#include "registry.h"
#include "strbuf.h"
#include "url_redact.h"
#include "xalloc.h"

typedef mfs_found found;

typedef struct walker {
    mfs_found *list;
    size_t count, cap;
    mfs_found_file *files;
    size_t file_count, file_cap;
    uint64_t entries;
    bool warned;
} walker;

/* A file (or folder) of the files view; `model`: 1 + the index of the
 * model that is this file, 0 for none. */
static mfs_found_file *add_file(walker *w, const char *path, const char *open_path,
                                const char *root, bool dir, const struct stat *st, size_t model)
{
    if (w->file_count == w->file_cap) {
        w->file_cap = w->file_cap ? w->file_cap * 2 : 16;
        w->files = mfs_xrealloc(w->files, w->file_cap * sizeof *w->files);
    }
    mfs_found_file *f = &w->files[w->file_count++];
    memset(f, 0, sizeof *f);
    f->path = mfs_xstrdup(path);
    f->open_path = mfs_xstrdup(open_path);
    f->root = root ? mfs_xstrdup(root) : NULL;
    f->dir = dir;
    f->size = !dir && st != NULL && S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
    if (st != NULL)
        f->mtime = st->st_mtim;
    f->model = model;
    return f;
}

static void free_files(mfs_found_file *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(files[i].path);
        free(files[i].open_path);
        free(files[i].root);
    }
    free(files);
}

static void add_found(walker *w, const char *dir, const char *name, const char *source,
                      const char *open_path, const char *root, const mfs_format *fmt,
                      const struct stat *st)
{
    if (w->count == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 16;
        w->list = mfs_xrealloc(w->list, w->cap * sizeof *w->list);
    }
    found *f = &w->list[w->count++];
    f->dir = mfs_xstrdup(dir);
    f->name = mfs_xstrdup(name);
    f->source = mfs_xstrdup(source);
    f->open_path = mfs_xstrdup(open_path);
    f->root = root ? mfs_xstrdup(root) : NULL;
    f->format = fmt;
    f->size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0;
    f->mtime = st->st_mtim;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *a, const char *b)
{
    mfs_strbuf sb = { 0 };
    mfs_sb_adds(&sb, a);
    if (a[0] && b[0])
        mfs_sb_addc(&sb, '/');
    mfs_sb_adds(&sb, b);
    return mfs_sb_take(&sb, NULL);
}

/* The format of the regular file `fd`, probed from its mapping. */
static const mfs_format *probe_fd(int fd, const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return NULL;
    mfs_src *src = mfs_src_local_probe(fd, "", NULL);
    const mfs_format *f = src ? mfs_format_detect(src) : NULL;
    mfs_src_close(src);
    return f;
}

/* Walks the folder `path` (already known to be a real folder below
 * `root`, the real path of DIR): each model found goes to w with its
 * folder path `enc` below the mount root, and every file and folder to
 * its files view. Names are sorted, so the same files give the same tree.
 * Symlinks are followed only to files inside DIR (a model is loaded by
 * its link's path, so it has the link's name, as when mounted alone);
 * folders reached by a symlink are not entered. `models` false: the
 * files alone (inside a folder model), nothing probed. */
static void walk(walker *w, const char *root, const char *path, const char *shown,
                 const char *enc, unsigned depth, bool models)
{
    DIR *d = opendir(path);
    if (d == NULL) {
        mfs_warn("%s: cannot read the folder: %s", shown, strerror(errno));
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (++w->entries > MFS_COLLECT_MAX_ENTRIES) {
            if (!w->warned)
                mfs_warn("%s: more than %u entries; the rest are not looked at", shown,
                         MFS_COLLECT_MAX_ENTRIES);
            w->warned = true;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            names = mfs_xrealloc(names, cap * sizeof *names);
        }
        names[n++] = mfs_xstrdup(de->d_name);
    }
    int dfd = dirfd(d);
    if (n > 1)  /* an empty folder: names is NULL, which qsort may not get */
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        const char *name = names[i];
        char *full = join(path, name), *show = join(shown, name);
        struct stat st;
        char *epath = NULL;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            goto next;
        char *ename = mfs_name_encode(name, strlen(name));
        epath = join(enc, ename);
        free(ename);
        if (S_ISDIR(st.st_mode)) {
            const mfs_format *fmt = models ? mfs_format_detect_dir(full) : NULL;
            if (fmt != NULL)
                add_found(w, enc, name, show, full, root, fmt, &st);
            if (depth < MFS_COLLECT_MAX_DEPTH) {
                add_file(w, epath, full, root, true, &st, 0);
                walk(w, root, full, show, epath, depth + 1, models && fmt == NULL);
            }
        } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
            /* A symlink counts only when it ends at a file inside DIR. */
            char *real = S_ISLNK(st.st_mode) ? realpath(full, NULL) : NULL;
            if (S_ISLNK(st.st_mode) && (real == NULL || !mfs_path_inside(root, real))) {
                free(real);
                goto next;
            }
            int fd = real ? open(real, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
                          : openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
            struct stat fst;
            if (fd >= 0 && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode)) {
                const mfs_format *fmt = models ? probe_fd(fd, &fst) : NULL;
                if (fmt != NULL)
                    add_found(w, enc, name, show, full, root, fmt, &fst);
                add_file(w, epath, full, root, false, &fst, fmt != NULL ? w->count : 0);
            }
            if (fd >= 0)
                close(fd);
            free(real);
        }
    next:
        free(epath);
        free(full);
        free(show);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(d);
}

bool mfs_collect_is_single(const char *const *args, size_t n)
{
    struct stat st;
    if (n != 1)
        return false;
    /* A remote folder (an S3 prefix, a Hub repository) is no path to stat. */
    if (mfs_is_remote(args[0]))
        return !mfs_remote_is_folder(args[0]);
    if (stat(args[0], &st) != 0 || !S_ISDIR(st.st_mode))
        return true;  /* a file (or an error to report as before) */
    return mfs_format_detect_dir(args[0]) != NULL;
}

static char *absolute(const char *path)
{
    if (path[0] == '/')
        return mfs_xstrdup(path);
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return mfs_xstrdup(path);
    return join(cwd, path);
}

static const char *base_name(const char *path, char *buf, size_t size)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/')
        start--;
    snprintf(buf, size, "%.*s", (int)(len - start), path + start);
    return buf;
}

/* The last part of a URL's path (no query, no fragment), or its host. */
static const char *url_name(const char *url, char *buf, size_t size)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t end = strcspn(p, "?#");
    while (end > 0 && p[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && p[start - 1] != '/')
        start--;
    snprintf(buf, size, "%.*s", (int)(end - start), p + start);
    return buf;
}

/* A folder URL's model files (an S3 prefix, a Hub repository), each
 * named by its path below it: at the root when it is the only argument,
 * else in a folder of the URL's last part. Probed when first loaded.
 * Every file listed goes to the files view, with the listing's size. */
static int add_remote_folder(walker *w, const char *url, bool alone, const mfs_load_opts *opts,
                             mfs_err *e)
{
    mfs_http_opts ho = { 0 };
    mfs_http_opts_from_env(&ho);
    ho.no_sign_request = opts != NULL && opts->no_sign_request;
    mfs_remote_listing l;
    if (mfs_remote_list(url, &ho, &l, e) != 0)
        return -1;
    char base[PATH_MAX];
    /* The name first: strlen(base) as a sibling argument could be taken
     * before url_name wrote it (the order is unspecified). */
    const char *name = url_name(url, base, sizeof base);
    char *top = alone ? mfs_xstrdup("") : mfs_name_encode(name, strlen(name));
    for (size_t i = 0; i < l.count; i++) {
        const char *path = l.files[i].path;
        const char *slash = strrchr(path, '/');
        /* Each folder part encoded as a local walk encodes it. */
        char *dir = mfs_xstrdup(top);
        for (const char *p = path; slash != NULL && p <= slash;) {
            size_t k = strcspn(p, "/");
            char *ename = mfs_name_encode(p, k), *sub = join(dir, ename);
            free(dir);
            free(ename);
            dir = sub;
            p += k + 1;
        }
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_mode = S_IFREG;
        st.st_size = (off_t)l.files[i].size;
        st.st_mtim.tv_sec = (time_t)l.files[i].mtime;
        const char *fname = slash ? slash + 1 : path;
        if (l.files[i].model)
            add_found(w, dir, fname, l.files[i].url, l.files[i].url, NULL, NULL, &st);
        char *ename = mfs_name_encode(fname, strlen(fname)), *fpath = join(dir, ename);
        add_file(w, fpath, l.files[i].url, NULL, false, &st, l.files[i].model ? w->count : 0)
            ->remote = true;
        free(ename);
        free(fpath);
        free(dir);
    }
    free(top);
    mfs_remote_listing_free(&l);
    return 0;
}

int mfs_collect_find(const char *const *args, size_t n, const mfs_load_opts *opts,
                     mfs_found_list *out, const char **bad, mfs_err *e)
{
    memset(out, 0, sizeof *out);
    walker w = { 0 };
    char base[PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (mfs_is_remote(args[i]) && mfs_remote_is_folder(args[i])) {
            if (add_remote_folder(&w, args[i], n == 1, opts, e) != 0) {
                *bad = args[i];
                goto fail;
            }
            continue;
        }
        if (mfs_is_remote(args[i])) {
            /* A remote model: named by the last part of its URL's path,
             * fetched (and its format known) when first loaded. */
            memset(&st, 0, sizeof st);
            /* Shown (models.json, messages) without a presigned URL's
             * query; opened with it. */
            char *shown = mfs_url_redacted(args[i]);
            const char *uname = url_name(args[i], base, sizeof base);
            add_found(&w, "", uname, shown, args[i], NULL, NULL, &st);
            free(shown);
            char *ename = mfs_name_encode(uname, strlen(uname));
            mfs_found_file *ff = add_file(&w, ename, args[i], NULL, false, &st, w.count);
            ff->remote = ff->size_unknown = true;
            free(ename);
            continue;
        }
        if (stat(args[i], &st) != 0) {
            *bad = args[i];
            mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open: %s", strerror(errno));
            goto fail;
        }
        base_name(args[i], base, sizeof base);
        const mfs_format *fmt = S_ISDIR(st.st_mode) ? mfs_format_detect_dir(args[i]) : NULL;
        if (S_ISDIR(st.st_mode) && fmt == NULL) {
            /* A folder of models: at the root when it is the only
             * argument, else in a folder of its name. */
            char *root = realpath(args[i], NULL);
            if (root == NULL) {
                *bad = args[i];
                mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open: %s", strerror(errno));
                goto fail;
            }
            char *enc = n == 1 ? mfs_xstrdup("") : mfs_name_encode(base, strlen(base));
            if (enc[0])
                add_file(&w, enc, root, NULL, true, &st, 0);
            walk(&w, root, root, args[i], enc, 0, true);
            free(enc);
            free(root);
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            int fd = open(args[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            struct stat fst;
            if (fd >= 0 && fstat(fd, &fst) == 0) {
                fmt = probe_fd(fd, &fst);
                st = fst;
            }
            if (fd >= 0)
                close(fd);
        }
        /* Named models load even when probing knew them not: their ERROR
         * says why. Loaded by an absolute path (the daemon leaves the
         * working folder), symlinks kept, so the model has its name. */
        char *abs = absolute(args[i]);
        add_found(&w, "", base, args[i], abs, NULL, fmt, &st);
        char *ename = mfs_name_encode(base, strlen(base));
        if (S_ISDIR(st.st_mode)) {
            /* A folder model named: its files, below its folder. */
            char *root = realpath(args[i], NULL);
            add_file(&w, ename, abs, NULL, true, &st, 0);
            if (root != NULL)
                walk(&w, root, root, args[i], ename, 0, false);
            free(root);
        } else {
            add_file(&w, ename, abs, NULL, false, &st, w.count);
        }
        free(ename);
        free(abs);
    }

    out->list = w.list;
    out->count = w.count;
    out->files = w.files;
    out->file_count = w.file_count;
    return 0;
fail:
    free_files(w.files, w.file_count);
    for (size_t i = 0; i < w.count; i++) {
        free(w.list[i].dir);
        free(w.list[i].name);
        free(w.list[i].source);
        free(w.list[i].open_path);
        free(w.list[i].root);
    }
    free(w.list);
    return -1;
}

/* What `path` (found below `root`) leads to now, opened one component at
 * a time from `root` with no symlink followed: a folder on the way
 * swapped for a symlink after probing, or a link of DIR pointed out of
 * it, is refused, and the caller gets the very file or folder checked.
 * The fd, or -1 with `e` filled. */
int mfs_collect_open_inside(const char *root, const char *path, mfs_err *e)
{
    int cur = mfs_open_below(root, path, 0);
    int err = errno;
    if (cur < 0 && err == EXDEV)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                        "cannot open: its path now leads out of %s (a symbolic link on the way)",
                        root);
    /* Only a missing or replaced component means the path changed; out
     * of descriptors (EMFILE) or memory is said as it is. */
    if (cur < 0 && (err == ENOENT || err == ENOTDIR || err == ELOOP))
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                        "cannot open: %s (its path changed after it was found)", strerror(err));
    if (cur < 0)
        return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open: %s", strerror(err));
    return cur;
}


void mfs_collect_folder_files(const char *dir, mfs_found_list *out)
{
    memset(out, 0, sizeof *out);
    walker w = { 0 };
    char *root = realpath(dir, NULL);
    if (root == NULL)
        return;
    walk(&w, root, root, dir, "", 0, false);
    free(root);
    out->files = w.files;
    out->file_count = w.file_count;
}

void mfs_found_files_free(mfs_found_list *l)
{
    free_files(l->files, l->file_count);
    l->files = NULL;
    l->file_count = 0;
}

void mfs_found_list_free(mfs_found_list *l)
{
    mfs_found_files_free(l);
    for (size_t i = 0; i < l->count; i++) {
        free(l->list[i].dir);
        free(l->list[i].name);
        free(l->list[i].source);
        free(l->list[i].open_path);
        free(l->list[i].root);
    }
    free(l->list);
    memset(l, 0, sizeof *l);
}
