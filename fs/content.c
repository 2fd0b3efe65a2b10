#include "content.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "xalloc.h"

enum { UNKNOWN, GOOD, BAD };

typedef struct slot {
    mfs_bytes bytes;        /* produced content, when `have` */
    bool have;
    uint8_t state;
    uint32_t pins;
    uint32_t prev, next;    /* LRU list of slots that hold bytes; MFS_NONE ends */
    char *reason;           /* why it is BAD */
} slot;

struct mfs_content {
    const mfs_tree *tree;
    uint64_t cap, held;
    pthread_mutex_t lock;
    slot *slots;            /* one per node */
    uint32_t head, tail;    /* most / least recently used */
};

mfs_content *mfs_content_new(const mfs_tree *t, uint64_t cap)
{
    mfs_content *c = mfs_xcalloc(1, sizeof *c);
    c->tree = t;
    c->cap = cap;
    c->slots = mfs_xcalloc(t->count ? t->count : 1, sizeof *c->slots);
    for (uint32_t i = 0; i < t->count; i++)
        c->slots[i].prev = c->slots[i].next = MFS_NONE;
    c->head = c->tail = MFS_NONE;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void drop_bytes(mfs_content *c, slot *s)
{
    if (!s->have)
        return;
    c->held -= s->bytes.charge;
    if (s->bytes.release)
        s->bytes.release(&s->bytes);
    memset(&s->bytes, 0, sizeof s->bytes);
    s->have = false;
}

void mfs_content_free(mfs_content *c)
{
    if (c == NULL)
        return;
    for (uint32_t i = 0; i < c->tree->count; i++) {
        drop_bytes(c, &c->slots[i]);
        free(c->slots[i].reason);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->slots);
    free(c);
}

static void lru_unlink(mfs_content *c, uint32_t i)
{
    slot *s = &c->slots[i];
    if (s->prev != MFS_NONE)
        c->slots[s->prev].next = s->next;
    else if (c->head == i)
        c->head = s->next;
    if (s->next != MFS_NONE)
        c->slots[s->next].prev = s->prev;
    else if (c->tail == i)
        c->tail = s->prev;
    s->prev = s->next = MFS_NONE;
}

static void lru_push_front(mfs_content *c, uint32_t i)
{
    slot *s = &c->slots[i];
    s->prev = MFS_NONE;
    s->next = c->head;
    if (c->head != MFS_NONE)
        c->slots[c->head].prev = i;
    c->head = i;
    if (c->tail == MFS_NONE)
        c->tail = i;
}

/* Frees least recently used bytes that nobody has open until under the cap. */
static void evict(mfs_content *c)
{
    uint32_t i = c->tail;
    while (c->held > c->cap && i != MFS_NONE) {
        uint32_t prev = c->slots[i].prev;
        slot *s = &c->slots[i];
        if (s->pins == 0) {
            lru_unlink(c, i);
            drop_bytes(c, s);
            /* Produced again later, it is checked again. */
            if (s->state == GOOD)
                s->state = UNKNOWN;
        }
        i = prev;
    }
}

static int fail(mfs_content *c, uint32_t node, slot *s, const char *reason, char *why, size_t whysize)
{
    s->state = BAD;
    free(s->reason);
    s->reason = mfs_xstrdup(reason);
    drop_bytes(c, s);
    char *path = mfs_tree_path(c->tree, node);
    mfs_log("modelfs: %s: %s", path, reason);
    free(path);
    snprintf(why, whysize, "%s", reason);
    return -1;
}

/* Under the lock: makes sure `s` holds good bytes; returns them. */
static int make_ready(mfs_content *c, uint32_t node, slot *s, const uint8_t **data, uint64_t *len,
                      char *why, size_t whysize)
{
    const mfs_node *n = mfs_tree_node(c->tree, node);
    char reason[512] = "";
    if (n->ops->produce != NULL && !s->have) {
        mfs_bytes b = { 0 };
        if (n->ops->produce(n->ctx, NULL, &b, reason, sizeof reason) != 0)
            return fail(c, node, s, reason[0] ? reason : "cannot produce the file's bytes", why, whysize);
        if (b.len != n->size && !n->size_unknown) {
            snprintf(reason, sizeof reason, "produced %llu bytes where %llu were expected",
                     (unsigned long long)b.len, (unsigned long long)n->size);
            if (b.release)
                b.release(&b);
            return fail(c, node, s, reason, why, whysize);
        }
        s->bytes = b;
        s->have = true;
        c->held += b.charge;
        lru_push_front(c, node);
    }
    const uint8_t *d = n->ops->produce != NULL ? s->bytes.data : n->data;
    uint64_t dlen = n->ops->produce != NULL ? s->bytes.len : n->size;
    if (s->state == UNKNOWN) {
        if (n->ops->verify != NULL && n->ops->verify(n->ctx, NULL, d, dlen, reason, sizeof reason) != 0)
            return fail(c, node, s, reason[0] ? reason : "verification failed", why, whysize);
        s->state = GOOD;
    }
    *data = d;
    *len = dlen;
    return 0;
}

int mfs_content_acquire(mfs_content *c, uint32_t node, const uint8_t **data, uint64_t *len,
                        char *why, size_t whysize)
{
    const mfs_node *n = mfs_tree_node(c->tree, node);
    if (n == NULL || n->kind != MFS_NODE_FILE) {
        snprintf(why, whysize, "not a file");
        return -1;
    }
    if (n->ops == NULL) {
        *data = n->data;
        *len = n->size;
        return 0;
    }
    pthread_mutex_lock(&c->lock);
    slot *s = &c->slots[node];
    int r;
    if (s->state == BAD) {
        snprintf(why, whysize, "%s", s->reason ? s->reason : "unreadable");
        r = -1;
    } else {
        r = make_ready(c, node, s, data, len, why, whysize);
    }
    if (r == 0) {
        s->pins++;
        if (s->have) {
            lru_unlink(c, node);
            lru_push_front(c, node);
        }
        evict(c);
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

void mfs_content_release(mfs_content *c, uint32_t node)
{
    const mfs_node *n = mfs_tree_node(c->tree, node);
    if (n == NULL || n->ops == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    if (c->slots[node].pins > 0)
        c->slots[node].pins--;
    evict(c);
    pthread_mutex_unlock(&c->lock);
}

uint64_t mfs_content_held(mfs_content *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t h = c->held;
    pthread_mutex_unlock(&c->lock);
    return h;
}
