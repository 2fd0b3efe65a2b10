#include "remote_read.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "deadline.h"
#include "log.h"

typedef struct rr {
    fuse_req_t req;
    mfs_src *src;
    uint64_t src_off, blen;
    const uint8_t *head;
    uint64_t hlen, off;
    size_t len;
} rr;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned pending;

void mfs_reply_head_body(fuse_req_t req, const uint8_t *head, uint64_t hlen,
                         const uint8_t *body, uint64_t off, size_t len)
{
    struct iovec iov[2];
    int count = 0;
    if (off < hlen) {
        size_t h = hlen - off < len ? (size_t)(hlen - off) : len;
        iov[count++] = (struct iovec){ (void *)(uintptr_t)(head + off), h };
        len -= h;
    }
    if (len > 0)
        iov[count++] = (struct iovec){ (void *)(uintptr_t)body, len };
    fuse_reply_iov(req, iov, count);
}

static void *run(void *arg)
{
    rr *r = arg;
    mfs_span body = { NULL, 0, 0 };
    mfs_err e = { 0 };
    if (r->blen > 0 && mfs_src_get(r->src, r->src_off, r->blen, &body, &e) != 0) {
        mfs_log("modelfs: %s: cannot read: %s", r->src->name, e.msg);
        fuse_reply_err(r->req, e.code == MFS_E_NOMEM ? ENOMEM : EIO);
    } else {
        mfs_reply_head_body(r->req, r->head, r->hlen, body.p, r->off, r->len);
        if (r->blen > 0)
            mfs_src_release(r->src, body);
    }
    free(r);
    pthread_mutex_lock(&mu);
    pending--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

bool mfs_rr_start(fuse_req_t req, mfs_src *src, uint64_t src_off, uint64_t blen,
                  const uint8_t *head, uint64_t hlen, uint64_t off, size_t len)
{
    rr *r = malloc(sizeof *r);
    if (r == NULL)
        return false;
    *r = (rr){ req, src, src_off, blen, head, hlen, off, len };
    pthread_mutex_lock(&mu);
    bool room = pending < MFS_RR_MAX;
    if (room)
        pending++;
    pthread_mutex_unlock(&mu);
    if (!room) {
        free(r);
        return false;
    }
    pthread_attr_t at;
    pthread_t t;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* It waits and copies: 1 MiB of stack is room enough. */
    pthread_attr_setstacksize(&at, 1u << 20);
    bool ok = pthread_create(&t, &at, run, r) == 0;
    pthread_attr_destroy(&at);
    if (!ok) {
        free(r);
        pthread_mutex_lock(&mu);
        pending--;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    return ok;
}

bool mfs_rr_drain(unsigned ms)
{
    struct timespec until = mfs_deadline_ms(CLOCK_REALTIME, ms);
    pthread_mutex_lock(&mu);
    while (pending > 0 && pthread_cond_timedwait(&cv, &mu, &until) == 0)
        ;
    bool none = pending == 0;
    pthread_mutex_unlock(&mu);
    return none;
}
