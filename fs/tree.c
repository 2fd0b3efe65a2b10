#include "tree.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "sums.h"
#include "xalloc.h"

/* Names come from the model file: keyed (formats/base/hash.h), so that no file
 * can choose names that all land in one slot. Only lookups depend on it. */
static uint64_t hash_key(uint32_t parent, const char *name)
{
    return mfs_hash(parent, name, strlen(name));
}

/* Grows *arr (of *cap elements of `size` bytes) to room for one more. */
static void *grow(void *arr, uint32_t count, uint32_t *cap, size_t size)
{
    if (count < *cap)
        return arr;
    if (*cap > UINT32_MAX / 2)
        mfs_oom();  /* past any loader's budget */
    *cap = *cap ? *cap * 2 : 16;
    return mfs_xreallocarray(arr, *cap, size);
}

/* A node's name as at most two pieces: a twin named after its body is
 * the body's name and ".npy", kept nowhere whole. */
typedef struct name_parts {
    const char *a, *b;
    size_t alen, blen;
} name_parts;

#define TWIN_SUFFIX ".npy"
#define TWIN_SUFFIX_LEN 4u

/* The element of `arr` (count elements of `size` bytes, sorted by a
 * uint32 key that comes first in each) whose key is `key`, or NULL. */
static const void *find_keyed(const void *arr, uint32_t count, size_t size, uint32_t key)
{
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2, k;
        memcpy(&k, (const char *)arr + (size_t)mid * size, sizeof k);
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t k = 0;
    if (lo < count)
        memcpy(&k, (const char *)arr + (size_t)lo * size, sizeof k);
    return lo < count && k == key ? (const char *)arr + (size_t)lo * size : NULL;
}

_Static_assert(offsetof(mfs_twin_name, twin) == 0, "find_keyed's key comes first");
_Static_assert(offsetof(mfs_tensor_attrs, node) == 0, "find_keyed's key comes first");
_Static_assert(offsetof(mfs_concat, node) == 0, "find_keyed's key comes first");

static const mfs_twin_name *twin_name_of(const mfs_tree *t, uint32_t k)
{
    return find_keyed(t->twin_names, t->twin_name_count, sizeof *t->twin_names, k);
}

static name_parts parts_of(const mfs_tree *t, uint32_t i)
{
    if (i < t->count)
        return (name_parts){ t->nodes[i].name, "", strlen(t->nodes[i].name), 0 };
    uint32_t k = i - MFS_TWIN_BASE;
    if (t->twins[k].head & MFS_TWIN_NAMED) {
        const mfs_twin_name *tn = twin_name_of(t, k);
        const char *s = tn ? tn->name : "";
        return (name_parts){ s, "", strlen(s), 0 };
    }
    const char *body = t->nodes[t->twins[k].body].name;
    return (name_parts){ body, TWIN_SUFFIX, strlen(body), TWIN_SUFFIX_LEN };
}

/* Bytewise, as strcmp: name x against name y. */
static int cmp_parts(name_parts x, name_parts y)
{
    size_t xi = 0, yi = 0, xn = x.alen + x.blen, yn = y.alen + y.blen;
    while (xi < xn && yi < yn) {
        /* Compare the longest stretch where both stay within one piece. */
        const char *xp = xi < x.alen ? x.a + xi : x.b + (xi - x.alen);
        const char *yp = yi < y.alen ? y.a + yi : y.b + (yi - y.alen);
        size_t xr = xi < x.alen ? x.alen - xi : xn - xi;
        size_t yr = yi < y.alen ? y.alen - yi : yn - yi;
        size_t m = xr < yr ? xr : yr;
        int r = memcmp(xp, yp, m);
        if (r != 0)
            return r;
        xi += m;
        yi += m;
    }
    return (xi < xn) - (yi < yn);
}

static int cmp_name(const mfs_tree *t, uint32_t i, const char *name)
{
    return cmp_parts(parts_of(t, i), (name_parts){ name, "", strlen(name), 0 });
}

/* The directory of twin k (see mfs_twin_run). */
static uint32_t twin_parent(const mfs_tree *t, uint32_t k)
{
    uint32_t lo = 0, hi = t->twin_run_count;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->twin_runs[mid].first <= k)
            lo = mid;
        else
            hi = mid;
    }
    return t->twin_runs[lo].parent;
}

static uint32_t parent_of(const mfs_tree *t, uint32_t i)
{
    return i < t->count ? t->nodes[i].parent : twin_parent(t, i - MFS_TWIN_BASE);
}

typedef struct name_key {
    const mfs_tree *t;
    uint32_t parent;
    const char *name;
} name_key;

static bool is_name(const void *key, uint32_t node)
{
    const name_key *k = key;
    return parent_of(k->t, node) == k->parent && cmp_name(k->t, node, k->name) == 0;
}

/* Blocks start small and double up to ARENA_BLOCK (above malloc's mmap
 * threshold: a mapping of its own), so a tree of a few names — one of 200
 * small models in a folder mount, a fuzz input — costs a KiB or two, not a
 * 256 KiB mapping. */
#define ARENA_FIRST (1u << 10)
#define ARENA_BLOCK (256u << 10)

static void *arena_alloc(mfs_tree *t, size_t n)
{
    if (n > t->arena_left) {
        size_t next = t->arena_next ? t->arena_next : ARENA_FIRST;
        if (n > ARENA_BLOCK / 4)  /* a big one gets a block to itself */
            return mfs_tree_own(t, mfs_xmalloc(n));
        while (next < n)
            next *= 2;
        t->arena_cur = mfs_tree_own(t, mfs_xmalloc(next));
        t->arena_left = next;
        t->arena_next = next < ARENA_BLOCK ? next * 2 : ARENA_BLOCK;
    }
    void *p = t->arena_cur;
    t->arena_cur += n;
    t->arena_left -= n;
    return p;
}

static char *arena_strdup(mfs_tree *t, const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(arena_alloc(t, n), s, n);
}

struct piece_key {
    const mfs_tree *t;
    const void *p;
    size_t len;
};

static bool same_piece(const void *key, uint32_t i)
{
    const struct piece_key *k = key;
    return k->t->pieces[i].len == k->len && memcmp(k->t->pieces[i].p, k->p, k->len) == 0;
}

static bool same_head(const void *key, uint32_t i)
{
    const struct piece_key *k = key;
    return k->t->heads[i].p == k->p;
}

/* `len` bytes in the arena, once per distinct value while loading: the
 * headers of twins and the dtype or shape of tensors repeat across a
 * model's layers, and a million tensors would keep a million copies. */
static const uint8_t *intern_keyed(mfs_tree *t, const void *p, size_t len)
{
    struct piece_key k = { t, p, len };
    uint64_t h = mfs_hash(0, p, len);
    uint32_t i = mfs_table_find(&t->interned, h, same_piece, &k);
    if (i != MFS_NONE)
        return t->pieces[i].p;
    uint8_t *copy = memcpy(arena_alloc(t, len), p, len);
    t->pieces = grow(t->pieces, t->piece_count, &t->piece_cap, sizeof *t->pieces);
    t->pieces[t->piece_count] = (struct mfs_piece){ copy, len };
    mfs_table_add(&t->interned, h, t->piece_count++);
    return copy;
}

/* A cheap unkeyed hash for the recent-pieces cache in front of the keyed
 * table: a value crafted to collide here only misses the cache and takes
 * the keyed path, so nothing depends on it being hard to collide. */
static size_t recent_slot(const uint8_t *p, size_t len)
{
    uint64_t h = len * 0x9e3779b97f4a7c15ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return (size_t)(h >> 40) % MFS_TREE_RECENT;
}

static const uint8_t *arena_intern(mfs_tree *t, const void *p, size_t len)
{
    if (len == 0)
        return arena_alloc(t, 1);
    /* A model repeats a few headers, dtypes and shapes a million times:
     * most are found here without the keyed hash. */
    struct mfs_piece *r = &t->recent[recent_slot(p, len)];
    if (r->p != NULL && r->len == len && memcmp(r->p, p, len) == 0)
        return r->p;
    const uint8_t *got = intern_keyed(t, p, len);
    *r = (struct mfs_piece){ got, len };
    return got;
}


static void forget_pieces(mfs_tree *t)
{
    mfs_table_free(&t->interned);
    mfs_table_free(&t->pair_index);
    mfs_table_free(&t->head_index);
    free(t->pieces);
    t->pieces = NULL;
    t->piece_count = t->piece_cap = 0;
}

void mfs_tree_init(mfs_tree *t)
{
    memset(t, 0, sizeof *t);
    t->nodes = mfs_xcalloc(16, sizeof *t->nodes);
    t->cap = 16;
    t->count = 1;
    t->nodes[0].name = arena_strdup(t, "");
    t->nodes[0].parent = MFS_ROOT;
    t->nodes[0].kind = MFS_NODE_DIR;
    t->sums.node = MFS_NONE;
    t->nodes[0].body = MFS_NONE;
    t->nodes[0].producer = MFS_NONE;
}

typedef struct mfs_tree_dtor {
    void (*fn)(void *arg);
    void *arg;
    struct mfs_tree_dtor *next;
} mfs_tree_dtor;

void mfs_tree_on_destroy(mfs_tree *t, void (*fn)(void *arg), void *arg)
{
    mfs_tree_dtor *d = mfs_xmalloc(sizeof *d);
    d->fn = fn;
    d->arg = arg;
    d->next = t->dtors;
    t->dtors = d;
}

static void free_finishers(mfs_tree *t);

void mfs_tree_destroy(mfs_tree *t)
{
    /* Newest first, and before the owned memory goes: `arg` may be owned. */
    for (mfs_tree_dtor *d = t->dtors, *next; d != NULL; d = next) {
        next = d->next;
        d->fn(d->arg);
        free(d);
    }
    for (size_t i = 0; i < t->owned_count; i++)
        free(t->owned[i]);
    free(t->nodes);
    free(t->children);
    free(t->producers);
    free(t->xattrs);
    free(t->xattr_names);
    free(t->tattrs);
    free(t->pairs);
    free(t->twins);
    free(t->twin_runs);
    free(t->twin_names);
    free(t->heads);
    free(t->concats);
    free_finishers(t);
    mfs_table_free(&t->pair_index);
    mfs_table_free(&t->names);
    forget_pieces(t);
    free(t->owned);
    memset(t, 0, sizeof *t);
}

uint32_t mfs_tree_lookup(const mfs_tree *t, uint32_t parent, const char *name)
{
    /* A file has no children (and its room for them holds its bytes). */
    if (parent >= t->count || t->nodes[parent].kind != MFS_NODE_DIR)
        return MFS_NONE;
    if (t->finished) {
        /* A directory's children are sorted by name once finished: a
         * binary search needs no table kept for the life of the mount. */
        const mfs_node *p = &t->nodes[parent];
        uint32_t lo = 0, hi = p->child_count;
        name_parts want = { name, "", strlen(name), 0 };
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            uint32_t c = t->children[p->child_first + mid];
            int r = cmp_parts(parts_of(t, c), want);
            if (r == 0)
                return c;
            if (r < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        return MFS_NONE;
    }
    name_key k = { t, parent, name };
    return mfs_table_find(&t->names, hash_key(parent, name), is_name, &k);
}

uint32_t mfs_tree_add(mfs_tree *t, uint32_t parent, const char *name, mfs_kind kind,
                      const uint8_t *data, uint64_t size)
{
    if (t->finished || parent >= t->count || t->nodes[parent].kind != MFS_NODE_DIR ||
        !mfs_tree_valid_name(name) || t->count == MFS_TWIN_BASE)
        return MFS_NONE;
    name_key k = { t, parent, name };
    uint64_t h = hash_key(parent, name);
    if (mfs_table_find(&t->names, h, is_name, &k) != MFS_NONE)
        return MFS_NONE;
    if (t->count == t->cap) {
        t->cap *= 2;
        t->nodes = mfs_xreallocarray(t->nodes, t->cap, sizeof *t->nodes);
    }
    uint32_t idx = t->count++;
    mfs_node *n = &t->nodes[idx];
    memset(n, 0, sizeof *n);
    n->name = arena_strdup(t, name);
    n->parent = parent;
    n->kind = kind;
    if (kind == MFS_NODE_FILE) {  /* a directory's room there is its children's */
        n->data = data;
        n->size = size;
    }
    n->body = MFS_NONE;
    n->producer = MFS_NONE;
    mfs_table_add(&t->names, h, idx);
    return idx;
}

uint32_t mfs_tree_add_stored(mfs_tree *t, uint32_t parent, const char *name, uint64_t off,
                             uint64_t size)
{
    uint32_t idx = mfs_tree_add(t, parent, name, MFS_NODE_FILE, NULL, size);
    /* An empty file has no bytes to find: its offset may even lie past the
     * end of the file (GGUF's empty tensors may), so none is kept. */
    if (idx != MFS_NONE && size > 0) {
        t->nodes[idx].from_src = true;
        t->nodes[idx].src_off = off;
    }
    return idx;
}

/* The first free name in `dir` for `name`: itself, then "%~2", "%~3"...
 * (the names rule's duplicate form, cut to stay a valid name). */
char *mfs_tree_free_name(const mfs_tree *t, uint32_t dir, const char *name)
{
    char *cand = mfs_xstrdup(name);
    for (unsigned k = 2; mfs_tree_lookup(t, dir, cand) != MFS_NONE; k++) {
        free(cand);
        size_t keep = strlen(name);
        if (keep > MFS_NAME_MAX - 20)
            keep = MFS_NAME_MAX - 20;
        while (keep > 0 && ((unsigned char)name[keep] & 0xc0) == 0x80)
            keep--;
        cand = mfs_xmalloc(keep + 24);
        snprintf(cand, keep + 24, "%.*s%%~%u", (int)keep, name, k);
    }
    return cand;
}

uint32_t mfs_tree_add_linked(mfs_tree *t, uint32_t parent, const char *name, uint32_t entry,
                             uint64_t size)
{
    uint32_t idx = mfs_tree_add(t, parent, name, MFS_NODE_FILE, NULL, size);
    if (idx != MFS_NONE) {
        t->nodes[idx].linked = true;
        t->nodes[idx].src_off = entry;
    }
    return idx;
}

uint32_t mfs_tree_add_concat(mfs_tree *t, uint32_t parent, const char *name)
{
    uint32_t idx = mfs_tree_add(t, parent, name, MFS_NODE_FILE, NULL, 0);
    if (idx == MFS_NONE)
        return MFS_NONE;
    t->nodes[idx].concat = true;
    /* Nodes only grow: the table stays sorted by node. */
    t->concats = grow(t->concats, t->concat_count, &t->concat_cap, sizeof *t->concats);
    t->concats[t->concat_count++] = (mfs_concat){ idx, 0, NULL, 0 };
    return idx;
}

bool mfs_tree_set_concat(mfs_tree *t, uint32_t node, uint8_t *head, uint64_t head_len,
                         mfs_concat_piece *pieces, uint32_t count)
{
    mfs_tree_own(t, head);
    mfs_tree_own(t, pieces);
    mfs_concat *c = (mfs_concat *)(uintptr_t)mfs_tree_concat(t, node);
    if (c == NULL || t->finished)
        return false;
    uint64_t size = head_len;
    for (uint32_t i = 0; i < count; i++) {
        const mfs_node *p = mfs_tree_node(t, pieces[i].node);
        if (p == NULL || p->kind != MFS_NODE_FILE || p->size_unknown || p->sums || p->concat ||
            p->size != pieces[i].len || size > UINT64_MAX - p->size)
            return false;
        pieces[i].at = size;
        size += p->size;
    }
    *c = (mfs_concat){ node, count, pieces, head_len };
    t->nodes[node].data = head;
    t->nodes[node].size = size;
    return true;
}

typedef struct mfs_tree_finisher {
    void (*fn)(mfs_tree *t, void *arg);
    void *arg;
    struct mfs_tree_finisher *next;
} mfs_tree_finisher;

void mfs_tree_on_finish(mfs_tree *t, void (*fn)(mfs_tree *t, void *arg), void *arg)
{
    mfs_tree_finisher *f = mfs_xmalloc(sizeof *f), **at = &t->finishers;
    *f = (mfs_tree_finisher){ fn, arg, NULL };
    while (*at != NULL)
        at = &(*at)->next;
    *at = f;
}

static void run_finishers(mfs_tree *t)
{
    for (mfs_tree_finisher *f = t->finishers, *next; f != NULL; f = next) {
        next = f->next;
        t->finishers = next;  /* taken off first: a fault inside leaves no double call */
        f->fn(t, f->arg);
        free(f);
    }
}

static void free_finishers(mfs_tree *t)
{
    for (mfs_tree_finisher *f = t->finishers, *next; f != NULL; f = next) {
        next = f->next;
        free(f);
    }
    t->finishers = NULL;
}

const mfs_concat *mfs_tree_concat(const mfs_tree *t, uint32_t node)
{
    if (node >= t->count || !t->nodes[node].concat)
        return NULL;
    return find_keyed(t->concats, t->concat_count, sizeof *t->concats, node);
}

uint64_t mfs_tree_concat_head_len(const mfs_tree *t, const mfs_node *n)
{
    const mfs_concat *c = n >= t->nodes && n < t->nodes + t->count
                          ? mfs_tree_concat(t, (uint32_t)(n - t->nodes)) : NULL;
    return c ? c->head_len : n->size;
}

uint32_t mfs_concat_piece_at(const mfs_concat *c, uint64_t off)
{
    /* The last piece starting at or before `off`: empty ones before it
     * start where it does. */
    uint32_t lo = 0, hi = c->count;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->pieces[mid].at <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The id in t->heads of an interned head (equal bytes, equal pointer). */
static uint32_t head_id(mfs_tree *t, const uint8_t *p, size_t len)
{
    struct piece_key k = { t, p, len };
    uint64_t h = mfs_hash(2, &p, sizeof p);
    uint32_t i = mfs_table_find(&t->head_index, h, same_head, &k);
    if (i != MFS_NONE)
        return i;
    t->heads = grow(t->heads, t->head_count, &t->head_cap, sizeof *t->heads);
    t->heads[t->head_count] = (struct mfs_piece){ p, len };
    mfs_table_add(&t->head_index, h, t->head_count);
    return t->head_count++;
}

uint32_t mfs_tree_twin_head(mfs_tree *t, const void *head, size_t head_len)
{
    if (t->finished || head_len > UINT32_MAX || t->head_count == MFS_TWIN_NAMED)
        return MFS_NONE;
    /* Tensors of one dtype and shape (a model's layers) share one head. */
    const uint8_t *hp = head_len ? arena_intern(t, head, head_len) : (const uint8_t *)"";
    return head_id(t, hp, head_len);
}

uint32_t mfs_tree_add_twin_with(mfs_tree *t, uint32_t parent, const char *name, uint32_t head,
                                uint32_t body)
{
    if (t->finished || body >= t->count || parent >= t->count ||
        t->nodes[parent].kind != MFS_NODE_DIR || !mfs_tree_valid_name(name) ||
        t->twin_count == MFS_TWIN_BASE - 1 || head >= t->head_count)
        return MFS_NONE;
    const mfs_node *b = &t->nodes[body];
    /* A size learnt at open would make this file's size wrong. */
    if (b->kind != MFS_NODE_FILE || b->size_unknown || b->sums || b->concat ||
        b->size > UINT64_MAX - t->heads[head].len)
        return MFS_NONE;
    name_key key = { t, parent, name };
    uint64_t h = hash_key(parent, name);
    if (mfs_table_find(&t->names, h, is_name, &key) != MFS_NONE)
        return MFS_NONE;
    uint32_t k = t->twin_count, hid = head;
    size_t blen = strlen(b->name), nlen = strlen(name);
    if (nlen != blen + TWIN_SUFFIX_LEN || memcmp(name, b->name, blen) != 0 ||
        memcmp(name + blen, TWIN_SUFFIX, TWIN_SUFFIX_LEN) != 0) {
        t->twin_names = grow(t->twin_names, t->twin_name_count, &t->twin_name_cap,
                             sizeof *t->twin_names);
        t->twin_names[t->twin_name_count++] = (mfs_twin_name){ k, arena_strdup(t, name) };
        hid |= MFS_TWIN_NAMED;
    }
    if (t->twin_run_count == 0 || t->twin_runs[t->twin_run_count - 1].parent != parent) {
        t->twin_runs = grow(t->twin_runs, t->twin_run_count, &t->twin_run_cap,
                            sizeof *t->twin_runs);
        t->twin_runs[t->twin_run_count++] = (mfs_twin_run){ k, parent };
    }
    t->twins = grow(t->twins, t->twin_count, &t->twin_cap, sizeof *t->twins);
    t->twins[t->twin_count++] = (mfs_twin){ body, hid };
    mfs_table_add(&t->names, h, MFS_TWIN_BASE + k);
    return MFS_TWIN_BASE + k;
}

const mfs_node *mfs_tree_get(const mfs_tree *t, uint32_t i, mfs_node_buf *buf)
{
    if (i < t->count)
        return &t->nodes[i];
    if (!mfs_tree_is_twin(t, i))
        return NULL;
    uint32_t k = i - MFS_TWIN_BASE;
    const mfs_twin *w = &t->twins[k];
    const struct mfs_piece *h = &t->heads[w->head & ~MFS_TWIN_NAMED];
    name_parts np = parts_of(t, i);
    /* A valid name when added: np.alen + np.blen <= MFS_NAME_MAX. */
    memcpy(buf->name, np.a, np.alen);
    memcpy(buf->name + np.alen, np.b, np.blen);
    buf->name[np.alen + np.blen] = '\0';
    mfs_node *n = &buf->node;
    memset(n, 0, sizeof *n);
    n->name = buf->name;
    n->parent = twin_parent(t, k);
    n->kind = MFS_NODE_FILE;
    n->producer = MFS_NONE;
    n->body = w->body;
    n->data = h->p;
    n->size = t->nodes[w->body].size + h->len;
    return n;
}

uint32_t mfs_tree_mkdirs(mfs_tree *t, uint32_t parent, const char *path)
{
    uint32_t cur = parent;
    const char *p = path;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        char *comp = mfs_xstrndup(p, n);
        uint32_t next = mfs_tree_lookup(t, cur, comp);
        if (next == MFS_NONE)
            next = mfs_tree_add(t, cur, comp, MFS_NODE_DIR, NULL, 0);
        free(comp);
        if (next >= t->count || t->nodes[next].kind != MFS_NODE_DIR)
            return MFS_NONE;  /* none, a file or a twin in the way */
        cur = next;
        p += n;
        if (*p == '/')
            p++;
    }
    return cur;
}

/* The id of xattr name `name`; MFS_NONE when the table is full. Called
 * for every xattr: the literal's address finds it at once; the same
 * literal may have another address in another file, so then the bytes. */
static uint32_t xattr_name_id(mfs_tree *t, const char *name)
{
    for (uint32_t i = 0; i < t->xattr_name_count; i++)
        if (t->xattr_names[i] == name)
            return i;
    for (uint32_t i = 0; i < t->xattr_name_count; i++)
        if (strcmp(t->xattr_names[i], name) == 0)
            return i;
    if (t->xattr_name_count == MFS_XATTR_NAMES_MAX)
        return MFS_NONE;
    t->xattr_names = mfs_xreallocarray(t->xattr_names, t->xattr_name_count + 1,
                                       sizeof *t->xattr_names);
    t->xattr_names[t->xattr_name_count] = name;
    return t->xattr_name_count++;
}

/* A value too long for mfs_xattr's length bits: its length goes first
 * (read by mfs_xattr_len). Not interned: none is that common. */
static const char *long_value(mfs_tree *t, const void *value, size_t len)
{
    uint64_t n = len;
    uint8_t *p = arena_alloc(t, sizeof n + len);
    memcpy(p, &n, sizeof n);
    memcpy(p + sizeof n, value, len);
    return (const char *)(p + sizeof n);
}

/* Whether `len` bytes at `value` are exactly the string `name`. Stops at
 * the first difference or at name's end, so it never reads past either. */
static bool is_name_bytes(const char *name, const void *value, size_t len)
{
    const char *v = value;
    for (size_t i = 0; i < len; i++)
        if (name[i] != v[i] || name[i] == '\0')
            return false;
    return name[len] == '\0';
}

static void add_xattr(mfs_tree *t, uint32_t node, const char *name, const void *value, size_t len,
                      bool shared)
{
    if (node >= t->count)
        return;  /* a node that was refused (MFS_NONE): like mfs_tree_set_producer */
    uint32_t id = xattr_name_id(t, name);
    if (id == MFS_NONE)
        return;
    const char *v;
    const char *own = t->nodes[node].name;
    if (len >= MFS_XATTR_LONG)
        v = long_value(t, value, len);
    else if (is_name_bytes(own, value, len))
        v = own;  /* user.modelfs.name of most tensors: the name is in the arena already */
    else if (shared)
        v = (const char *)arena_intern(t, value, len);
    else
        v = len ? memcpy(arena_alloc(t, len), value, len) : arena_alloc(t, 1);
    t->xattrs = grow(t->xattrs, t->xattr_count, &t->xattr_cap, sizeof *t->xattrs);
    uint32_t stored = len >= MFS_XATTR_LONG ? MFS_XATTR_LONG : (uint32_t)len;
    t->xattrs[t->xattr_count++] = (mfs_xattr){ v, node, stored << 8 | id };
}

void mfs_tree_add_xattr(mfs_tree *t, uint32_t node, const char *name, const void *value,
                        size_t len)
{
    add_xattr(t, node, name, value, len, false);
}

void mfs_tree_add_xattr_shared(mfs_tree *t, uint32_t node, const char *name, const void *value,
                               size_t len)
{
    add_xattr(t, node, name, value, len, true);
}

struct pair_key {
    const mfs_tree *t;
    const char *dtype, *shape;  /* interned: equal values, equal pointers */
};

static bool same_pair(const void *key, uint32_t i)
{
    const struct pair_key *k = key;
    return k->t->pairs[i].dtype == k->dtype && k->t->pairs[i].shape == k->shape;
}

/* The index of (dtype, shape) in t->pairs, added once. */
static uint32_t pair_of(mfs_tree *t, const char *dtype, size_t dlen, const char *shape,
                        size_t slen)
{
    struct pair_key k = { t, (const char *)arena_intern(t, dtype, dlen),
                          (const char *)arena_intern(t, shape, slen) };
    const char *ptrs[2] = { k.dtype, k.shape };
    uint64_t h = mfs_hash(1, ptrs, sizeof ptrs);
    uint32_t i = mfs_table_find(&t->pair_index, h, same_pair, &k);
    if (i != MFS_NONE)
        return i;
    t->pairs = grow(t->pairs, t->pair_count, &t->pair_cap, sizeof *t->pairs);
    t->pairs[t->pair_count] = (mfs_attr_pair){ k.dtype, k.shape, (uint32_t)dlen, (uint32_t)slen };
    mfs_table_add(&t->pair_index, h, t->pair_count);
    return t->pair_count++;
}

void mfs_tree_set_tensor_attrs(mfs_tree *t, uint32_t node, const char *name, size_t name_len,
                               const char *dtype, const char *shape, size_t shape_len,
                               uint64_t offset)
{
    size_t dlen = strlen(dtype);
    /* What does not fit the pair's 32-bit lengths (never a real dtype or
     * shape) stays a record, as any xattr. */
    if (node >= t->count || dlen >= MFS_XATTR_LONG || shape_len >= MFS_XATTR_LONG ||
        t->pair_count >= MFS_TATTR_NAME - 1) {
        char num[24];
        snprintf(num, sizeof num, "%llu", (unsigned long long)offset);
        mfs_tree_add_xattr(t, node, "user.modelfs.name", name, name_len);
        mfs_tree_add_xattr_shared(t, node, "user.modelfs.dtype", dtype, dlen);
        mfs_tree_add_xattr_shared(t, node, "user.modelfs.shape", shape, shape_len);
        mfs_tree_add_xattr(t, node, "user.modelfs.offset", num, strlen(num));
        return;
    }
    uint32_t pair = pair_of(t, dtype, dlen, shape, shape_len);
    if (is_name_bytes(t->nodes[node].name, name, name_len))
        pair |= MFS_TATTR_NAME;
    else
        mfs_tree_add_xattr(t, node, "user.modelfs.name", name, name_len);
    t->tattrs = grow(t->tattrs, t->tattr_count, &t->tattr_cap, sizeof *t->tattrs);
    t->tattrs[t->tattr_count++] = (mfs_tensor_attrs){ node, pair, offset };
}

static int cmp_tattr(const void *a, const void *b)
{
    const mfs_tensor_attrs *x = a, *y = b;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* Sorted by node for the readers' binary search; loaders add them in
 * node order, so usually nothing moves. */
static void sort_tattrs(mfs_tree *t)
{
    for (uint32_t i = 1; i < t->tattr_count; i++) {
        if (t->tattrs[i - 1].node > t->tattrs[i].node) {
            qsort(t->tattrs, t->tattr_count, sizeof *t->tattrs, cmp_tattr);
            return;
        }
    }
}

static const mfs_tensor_attrs *tattrs_of(const mfs_tree *t, uint32_t node)
{
    return find_keyed(t->tattrs, t->tattr_count, sizeof *t->tattrs, node);
}

/* A tensor's own, in name order: dtype, name, offset, shape. */
static const char *const own_names[] = {
    "user.modelfs.dtype", "user.modelfs.name", "user.modelfs.offset", "user.modelfs.shape",
};
#define OWN_COUNT 4u

void mfs_xattr_iter_init(const mfs_tree *t, uint32_t node, mfs_xattr_iter *it)
{
    const mfs_node *n = mfs_tree_node(t, node);
    it->t = t;
    it->rec = n ? n->xattr_first : 0;
    it->rec_end = n ? n->xattr_first + n->xattr_count : 0;
    it->ta = n ? tattrs_of(t, node) : NULL;
    it->syn = it->ta == NULL ? OWN_COUNT : 0;  /* not a tensor: records only */
}

/* Fills *v with the tensor's own xattr `k`; false when it has none. */
static bool own_xattr(const mfs_xattr_iter *it, unsigned k, mfs_xattr_view *v)
{
    const mfs_tensor_attrs *ta = it->ta;
    const mfs_attr_pair *p = &it->t->pairs[ta->pair & ~MFS_TATTR_NAME];
    const mfs_node *n = &it->t->nodes[ta->node];
    v->name = own_names[k];
    switch (k) {
    case 0:
        v->value = p->dtype;
        v->len = p->dlen;
        return true;
    case 1:
        if (!(ta->pair & MFS_TATTR_NAME))
            return false;  /* a record holds it */
        v->value = n->name;
        v->len = strlen(n->name);
        return true;
    case 2:
        snprintf(v->num, sizeof v->num, "%llu", (unsigned long long)ta->offset);
        v->value = v->num;
        v->len = strlen(v->num);
        return true;
    default:
        v->value = p->shape;
        v->len = p->slen;
        return true;
    }
}

bool mfs_xattr_next(mfs_xattr_iter *it, mfs_xattr_view *v)
{
    mfs_xattr_view own;
    while (it->syn < OWN_COUNT && !own_xattr(it, it->syn, &own))
        it->syn++;
    bool have_own = it->syn < OWN_COUNT;
    bool have_rec = it->rec < it->rec_end;
    if (!have_own && !have_rec)
        return false;
    const mfs_xattr *x = have_rec ? &it->t->xattrs[it->rec] : NULL;
    /* Ties go to the tensor's own: the loader added them first. */
    if (have_own && (!have_rec || strcmp(own.name, mfs_xattr_name(it->t, x)) <= 0)) {
        *v = own;
        if (v->value == own.num)
            v->value = v->num;
        it->syn++;
        return true;
    }
    v->name = mfs_xattr_name(it->t, x);
    v->value = x->value;
    v->len = mfs_xattr_len(x);
    it->rec++;
    return true;
}

void mfs_tree_set_size_unknown(mfs_tree *t, uint32_t node)
{
    if (node < t->count && t->nodes[node].kind == MFS_NODE_FILE) {
        t->nodes[node].size_unknown = true;
        t->nodes[node].size = 0;
    }
}

void mfs_tree_set_producer(mfs_tree *t, uint32_t node, const mfs_produce_ops *ops, void *ctx)
{
    if (node >= t->count || t->nodes[node].kind != MFS_NODE_FILE || t->nodes[node].concat)
        return;
    mfs_node *n = &t->nodes[node];
    if (n->producer == MFS_NONE) {
        t->producers = grow(t->producers, t->producer_count, &t->producer_cap, sizeof *t->producers);
        n->producer = t->producer_count++;
    }
    t->producers[n->producer] = (mfs_producer){ ops, ctx };
}

void *mfs_tree_own(mfs_tree *t, void *p)
{
    if (t->owned_count == t->owned_cap) {
        t->owned_cap = t->owned_cap ? t->owned_cap * 2 : 16;
        t->owned = mfs_xreallocarray(t->owned, t->owned_cap, sizeof *t->owned);
    }
    t->owned[t->owned_count++] = p;
    return p;
}

/* qsort has no context argument in C11 */
static _Thread_local const mfs_tree *sort_tree;
static _Thread_local const uint8_t *sort_rank;  /* xattr name id -> place in strcmp order */

/* Two children of one directory, by name. */
static int cmp_child(const void *a, const void *b)
{
    return cmp_parts(parts_of(sort_tree, *(const uint32_t *)a),
                     parts_of(sort_tree, *(const uint32_t *)b));
}

/* By node, then by name (bytewise): names are ranked once, see rank_names. */
static int cmp_xattr(const void *a, const void *b)
{
    const mfs_xattr *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    uint8_t rx = sort_rank[x->len_name & 0xffu], ry = sort_rank[y->len_name & 0xffu];
    return rx < ry ? -1 : rx > ry;
}

/* rank[id]: the place of name `id` among the tree's names in strcmp
 * order. Names are distinct strings, so ranks order as strcmp does. */
static void rank_names(const mfs_tree *t, uint8_t *rank)
{
    for (uint32_t i = 0; i < t->xattr_name_count; i++) {
        uint32_t r = 0;
        for (uint32_t j = 0; j < t->xattr_name_count; j++)
            r += strcmp(t->xattr_names[j], t->xattr_names[i]) < 0;
        rank[i] = (uint8_t)r;
    }
}

#define XATTR_RUN_SHORT 16  /* a node's xattrs: insertion sort up to this many */

/* One node's xattrs: a few, so a plain insertion sort (stable, as the
 * sort of them all is in glibc). */
static void sort_run(mfs_xattr *x, uint32_t n)
{
    if (n > XATTR_RUN_SHORT) {
        qsort(x, n, sizeof *x, cmp_xattr);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        mfs_xattr v = x[i];
        uint32_t j = i;
        for (; j > 0 && cmp_xattr(&x[j - 1], &v) > 0; j--)
            x[j] = x[j - 1];
        x[j] = v;
    }
}

/* In cmp_xattr's order. Loaders add a node's xattrs together, node after
 * node, each in an order of its own (name, dtype, shape, offset): when one
 * pass finds the nodes in order, only each node's few need sorting, not
 * millions at once (that sort was a tenth of a large load). */
static void sort_xattrs(mfs_tree *t)
{
    mfs_xattr *x = t->xattrs;
    uint32_t n = t->xattr_count;
    for (uint32_t i = 1; i < n; i++) {
        if (x[i - 1].node > x[i].node) {
            qsort(x, n, sizeof *x, cmp_xattr);
            return;
        }
    }
    for (uint32_t lo = 0, hi; lo < n; lo = hi) {
        for (hi = lo + 1; hi < n && x[hi].node == x[lo].node; hi++)
            ;
        sort_run(x + lo, hi - lo);
    }
}

/* Every node but the root into t->children, grouped by parent in parent
 * order (one counting pass: nodes come in the order they were added, the
 * parents interleaved; twins after them), then each directory's children
 * sorted by name unless they came in order already (a model's tensors
 * often do): at a million tensors, one sort of every node by (parent,
 * name) was a tenth of the load. */
static void group_children(mfs_tree *t)
{
    size_t n = (size_t)t->count - 1 + t->twin_count;
    t->children = mfs_xcalloc(n ? n : 1, sizeof *t->children);
    /* end[p]: one past p's last child once placed; p's first is end[p - 1]. */
    uint32_t *end = mfs_xcalloc((size_t)t->count + 1, sizeof *end);
    for (uint32_t i = 1; i < t->count; i++)
        end[t->nodes[i].parent + 1]++;
    for (uint32_t r = 0; r < t->twin_run_count; r++) {
        uint32_t last = r + 1 < t->twin_run_count ? t->twin_runs[r + 1].first : t->twin_count;
        end[t->twin_runs[r].parent + 1] += last - t->twin_runs[r].first;
    }
    for (uint32_t p = 0; p < t->count; p++)
        end[p + 1] += end[p];
    for (uint32_t i = 1; i < t->count; i++)
        t->children[end[t->nodes[i].parent]++] = i;
    for (uint32_t r = 0; r < t->twin_run_count; r++) {
        uint32_t last = r + 1 < t->twin_run_count ? t->twin_runs[r + 1].first : t->twin_count;
        for (uint32_t k = t->twin_runs[r].first; k < last; k++)
            t->children[end[t->twin_runs[r].parent]++] = MFS_TWIN_BASE + k;
    }
    sort_tree = t;
    for (uint32_t p = 0, first = 0; p < t->count; first = end[p], p++) {
        uint32_t k = first + 1;
        while (k < end[p] &&
               cmp_parts(parts_of(t, t->children[k - 1]), parts_of(t, t->children[k])) < 0)
            k++;
        if (k < end[p])
            qsort(t->children + first, end[p] - first, sizeof *t->children, cmp_child);
    }
    sort_tree = NULL;
    /* Each directory's share of t->children (its own came first). */
    for (uint32_t p = 0, first = 0; p < t->count; first = end[p], p++) {
        if (t->nodes[p].kind != MFS_NODE_DIR)
            continue;
        t->nodes[p].child_first = first;
        t->nodes[p].child_count = end[p] - first;
        t->nodes[p].subdirs = 0;
        for (uint32_t c = first; c < end[p]; c++)
            t->nodes[p].subdirs += t->children[c] < t->count &&
                                   t->nodes[t->children[c]].kind == MFS_NODE_DIR;
    }
    free(end);
}

void mfs_tree_finish(mfs_tree *t)
{
    if (t->finished)
        return;
    forget_pieces(t);  /* only adds need them */
    /* Every node but the root, grouped by parent and sorted by name: each
     * directory's children end up contiguous. */
    group_children(t);
    uint8_t rank[MFS_XATTR_NAMES_MAX];
    rank_names(t, rank);
    sort_rank = rank;
    sort_xattrs(t);
    sort_rank = NULL;
    sort_tattrs(t);
    for (uint32_t i = 0; i < t->xattr_count; i++) {
        mfs_node *p = &t->nodes[t->xattrs[i].node];
        if (p->xattr_count++ == 0)
            p->xattr_first = i;
    }
    mfs_sums_finish(t);
    run_finishers(t);
    t->finished = true;
    /* Lookups search the sorted children from now on; the slack of the
     * arrays that grew by doubling goes back too. */
    mfs_table_free(&t->names);
    if (t->cap > t->count) {
        t->nodes = mfs_xreallocarray(t->nodes, t->count, sizeof *t->nodes);
        t->cap = t->count;
    }
    if (t->producer_cap > t->producer_count && t->producer_count > 0) {
        t->producers = mfs_xreallocarray(t->producers, t->producer_count, sizeof *t->producers);
        t->producer_cap = t->producer_count;
    }
    if (t->tattr_cap > t->tattr_count && t->tattr_count > 0) {
        t->tattrs = mfs_xreallocarray(t->tattrs, t->tattr_count, sizeof *t->tattrs);
        t->tattr_cap = t->tattr_count;
    }
    if (t->concat_cap > t->concat_count && t->concat_count > 0) {
        t->concats = mfs_xreallocarray(t->concats, t->concat_count, sizeof *t->concats);
        t->concat_cap = t->concat_count;
    }
    if (t->xattr_cap > t->xattr_count && t->xattr_count > 0) {
        t->xattrs = mfs_xreallocarray(t->xattrs, t->xattr_count, sizeof *t->xattrs);
        t->xattr_cap = t->xattr_count;
    }
}

char *mfs_tree_path(const mfs_tree *t, uint32_t node)
{
    char *r = mfs_tree_path_try(t, node);
    if (r == NULL)
        mfs_oom();
    return r;
}

char *mfs_tree_path_try(const mfs_tree *t, uint32_t node)
{
    size_t len = 0, depth = 0;
    for (uint32_t i = node; i != MFS_ROOT && mfs_tree_has(t, i); i = parent_of(t, i)) {
        name_parts np = parts_of(t, i);
        len += np.alen + np.blen;
        depth++;
    }
    if (depth > 1)
        len += depth - 1;  /* separators */
    char *r = malloc(len + 1);
    if (r == NULL)
        return NULL;
    r[len] = '\0';
    size_t end = len;
    for (uint32_t i = node; i != MFS_ROOT && mfs_tree_has(t, i); i = parent_of(t, i)) {
        name_parts np = parts_of(t, i);
        end -= np.alen + np.blen;
        memcpy(r + end, np.a, np.alen);
        memcpy(r + end + np.alen, np.b, np.blen);
        if (end > 0)
            r[--end] = '/';
    }
    return r;
}
