#include "skel_image.h"

#include <string.h>
#include <sys/mman.h>

bool mfs_skel_begin(mfs_skel *k, mfs_src *src, uint64_t window, mfs_err *e)
{
    memset(k, 0, sizeof *k);
    if (src->size == 0 || src->size > SIZE_MAX)
        return false;
    void *img = mmap(NULL, (size_t)src->size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (img == MAP_FAILED)
        return false;
    *k = (mfs_skel){ .src = src, .img = img, .window = window ? window : 4096, .e = e };
    return true;
}

int mfs_skel_window(mfs_skel *k, uint64_t pos, uint64_t need)
{
    uint64_t size = k->src->size;
    if (need > size - pos)
        need = size - pos;
    if (k->held && pos >= k->win.base && pos + need <= k->win.base + k->win.len)
        return 0;
    if (k->held)
        mfs_src_release(k->src, k->win);
    k->held = false;
    uint64_t len = size - pos < k->window ? size - pos : k->window;
    if (len < need)
        len = need;
    if (mfs_src_get(k->src, pos, len, &k->win, k->e) != 0)
        return -1;
    k->held = true;
    return 0;
}

int mfs_skel_copy(mfs_skel *k, uint64_t pos, uint64_t len)
{
    if (len <= k->window) {
        if (len == 0)
            return 0;
        if (mfs_skel_window(k, pos, len) != 0)
            return -1;
        memcpy(k->img + pos, k->win.p + (pos - k->win.base), (size_t)len);
        return 0;
    }
    /* Longer than a window: one range of its own, not the window's. */
    mfs_span s;
    if (mfs_src_get(k->src, pos, len, &s, k->e) != 0)
        return -1;
    memcpy(k->img + pos, s.p, (size_t)len);
    mfs_src_release(k->src, s);
    return 0;
}

uint8_t *mfs_skel_end(mfs_skel *k, bool keep)
{
    if (k->held)
        mfs_src_release(k->src, k->win);
    k->held = false;
    uint8_t *img = k->img;
    k->img = NULL;
    if (!keep && img != NULL) {
        munmap(img, (size_t)k->src->size);
        img = NULL;
    }
    return img;
}

void mfs_skel_free(uint8_t *image, uint64_t size)
{
    if (image != NULL)
        munmap(image, (size_t)size);
}
