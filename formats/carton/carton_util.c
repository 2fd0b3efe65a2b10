/* Small shared pieces of the Carton driver: the list of files, warnings,
 * the mount's budget, finding a file of the carton by path, and reading the
 * few files parsed at mount. Below carton.c, carton_dir.c and the parsers
 * of MANIFEST, LINKS and index.toml, which all call it. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carton.h"
#include "strbuf.h"
#include "xalloc.h"

typedef unsigned long long ull;

void carton_warn(carton_load *cl, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mfs_arr_push(cl->warnings, mfs_str(msg));
}

carton_file *carton_add_file(carton_load *cl, const char *path, const mfs_zip_entry *en,
                             bool in_archive)
{
    if (cl->nfiles == cl->cap) {
        cl->cap = cl->cap ? cl->cap * 2 : 64;
        cl->files = mfs_xreallocarray(cl->files, cl->cap, sizeof *cl->files);
    }
    carton_file *f = &cl->files[cl->nfiles++];
    memset(f, 0, sizeof *f);
    f->path = mfs_xstrdup(path);
    f->en = en;
    f->in_archive = in_archive;
    f->node = MFS_NONE;
    return f;
}

bool carton_spend(carton_load *cl, uint64_t bytes, const char *what)
{
    if (mfs_budget_take(&cl->budget, bytes))
        return true;
    if (cl->over == NULL)
        cl->over = what;
    return false;
}

char *carton_quote(const char *s, size_t len)
{
    mfs_strbuf sb = { 0 };
    mfs_sb_addc(&sb, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
            mfs_sb_addf(&sb, "\\x%02x", c);
        else
            mfs_sb_addc(&sb, (char)c);
    }
    mfs_sb_addc(&sb, '"');
    return mfs_sb_take(&sb, NULL);
}

static int cmp_key(const void *key, const void *elem)
{
    const carton_load *cl = ((const void *const *)key)[0];
    const char *path = ((const void *const *)key)[1];
    return strcmp(path, cl->files[*(const size_t *)elem].path);
}

carton_file *carton_find(carton_load *cl, const char *path)
{
    const void *key[2] = { cl, path };
    const size_t *i = bsearch(key, cl->sorted, cl->nsorted, sizeof *cl->sorted, cmp_key);
    return i ? &cl->files[*i] : NULL;
}

static int read_disk(const carton_src *s, uint8_t *buf, mfs_err *e)
{
    const char *path = s->path;
    uint64_t size = s->size;
    /* Below the held folder with no symlink followed, as on open. */
    int fd = s->root ? mfs_folder_open_at(s->root, path, false)
                     : open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != size) {
        mfs_fail(e, MFS_E_CHANGED, MFS_NO_OFFSET, "%s changed while it was being read", path);
        close(fd);
        return -1;
    }
    for (uint64_t done = 0; done < size;) {
        ssize_t r = read(fd, buf + done, (size_t)(size - done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            mfs_fail(e, r ? MFS_E_IO : MFS_E_CHANGED, MFS_NO_OFFSET, "cannot read %s: %s", path,
                     r ? strerror(errno) : "it got shorter");
            close(fd);
            return -1;
        }
        done += (uint64_t)r;
    }
    close(fd);
    return 0;
}

int carton_read(carton_load *cl, const carton_file *f, uint64_t cap, carton_bytes *out, mfs_err *e)
{
    memset(out, 0, sizeof *out);
    const carton_src *s = f->src;
    if (s == NULL || (s->kind != CARTON_ZIP && s->kind != CARTON_FILE) || !f->in_archive)
        return mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s is not in the carton itself", f->path);
    if (s->size > cap) {
        mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s is %llu bytes, more than the %llu read at mount", f->path,
                 (ull)s->size, (ull)cap);
        return -1;
    }
    if (s->size > CARTON_READ_TOTAL - cl->read_total) {
        mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "reading %s would pass the %llu bytes read at mount in all", f->path,
                 (ull)CARTON_READ_TOTAL);
        return -1;
    }
    /* Decoded or read bytes are memory the carton makes us take (a file in
     * place in the mapping costs nothing). */
    if (!carton_src_inplace(s) && !carton_spend(cl, s->size, f->path)) {
        mfs_fail(e, MFS_E_CORRUPT, MFS_NO_OFFSET, "%s: reading it would pass the memory budget of the mount",
                 f->path);
        return -1;
    }
    cl->read_total += s->size;
    out->len = (size_t)s->size;
    if (s->kind == CARTON_ZIP) {
        if (carton_src_inplace(s)) {
            mfs_err ge = { 0 };
            if (mfs_src_get(cl->m->src, s->en->data_offset, s->en->size, &out->got, &ge) != 0)
                return mfs_fail(e, ge.code, MFS_NO_OFFSET, "%s: %s", f->path, ge.msg);
            out->src = cl->m->src;
            out->p = out->got.p;
            return 0;
        }
        mfs_err ze = { 0 };
        if (mfs_zip_decode(s->zip, s->en, cap, &out->owned, &ze) != 0)
            return mfs_fail(e, ze.code, MFS_NO_OFFSET, "%s: %s", f->path, ze.msg);
    } else {
        out->owned = mfs_xmalloc(out->len ? out->len : 1);
        if (read_disk(s, out->owned, e) != 0) {
            carton_bytes_free(out);
            return -1;
        }
    }
    out->p = out->owned;
    return 0;
}

void carton_bytes_free(carton_bytes *b)
{
    if (b->src != NULL)
        mfs_src_release(b->src, b->got);
    free(b->owned);
    memset(b, 0, sizeof *b);
}
