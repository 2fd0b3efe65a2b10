#include "http_answer.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "http_date.h"

void mfs_http_answer_clear(mfs_http_answer *a)
{
    memset(a, 0, sizeof *a);
    a->last_modified = -1;
    a->length = -1;
}

/* The opaque tag of `etag` (quotes included) and whether it is weak; a
 * value that is not W/"..." or "..." (etagc: no quote, no control, no
 * blank) is an opaque tag of its own, weak. */
static const char *opaque(const char *etag, bool *weak)
{
    const char *q = etag;
    *weak = strncmp(q, "W/", 2) == 0;
    if (*weak)
        q += 2;
    size_t n = strlen(q);
    bool ok = n >= 2 && q[0] == '"' && q[n - 1] == '"';
    for (size_t i = 1; ok && i + 1 < n; i++)
        ok = q[i] != '"' && (unsigned char)q[i] > 0x20 && q[i] != 0x7f;
    if (!ok) {
        *weak = true;
        return etag;
    }
    return q;
}

bool mfs_http_etag_is_strong(const char *etag)
{
    bool weak;
    opaque(etag, &weak);
    return etag[0] != '\0' && !weak;
}

bool mfs_http_etag_strong_eq(const char *a, const char *b)
{
    bool wa, wb;
    const char *oa = opaque(a, &wa), *ob = opaque(b, &wb);
    return a[0] != '\0' && !wa && !wb && strcmp(oa, ob) == 0;
}

bool mfs_http_etag_weak_eq(const char *a, const char *b)
{
    bool wa, wb;
    const char *oa = opaque(a, &wa), *ob = opaque(b, &wb);
    return a[0] != '\0' && strcmp(oa, ob) == 0;
}

void mfs_http_pin_of(const mfs_http_answer *a, uint64_t size, mfs_http_pin *out)
{
    memset(out, 0, sizeof *out);
    out->size = size;
    out->last_modified = -1;
    snprintf(out->etag, sizeof out->etag, "%s", a->etag_too_long ? "" : a->etag);
    if (mfs_http_etag_is_strong(out->etag)) {
        out->kind = MFS_HTTP_PIN_STRONG;
        return;
    }
    out->last_modified = a->last_modified;
    out->kind = out->etag[0] ? MFS_HTTP_PIN_WEAK
                : a->last_modified >= 0 ? MFS_HTTP_PIN_DATE : MFS_HTTP_PIN_SIZE;
}

static void date_text(int64_t t, char out[30])
{
    if (t < 0)
        snprintf(out, 30, "none");
    else
        mfs_http_date_format(t, out);
}

/* The validators of `a` against the pin's: MFS_HTTP_OK or CHANGED with
 * the message. */
static mfs_http_verdict validators(const mfs_http_pin *pin, const mfs_http_answer *a, char *msg,
                                   size_t size)
{
    const char *now = a->etag[0] ? a->etag : "none";
    switch (pin->kind) {
    case MFS_HTTP_PIN_STRONG:
        if (!a->etag_too_long && mfs_http_etag_strong_eq(pin->etag, a->etag))
            return MFS_HTTP_OK;
        snprintf(msg, size, "changed on the server since the mount (ETag %s, now %s)", pin->etag,
                 now);
        return MFS_HTTP_CHANGED;
    case MFS_HTTP_PIN_WEAK:
        if (a->etag_too_long || !mfs_http_etag_weak_eq(pin->etag, a->etag)) {
            snprintf(msg, size, "changed on the server since the mount (ETag %s, now %s)",
                     pin->etag, now);
            return MFS_HTTP_CHANGED;
        }
        break;
    case MFS_HTTP_PIN_DATE:
    case MFS_HTTP_PIN_SIZE:
        break;
    }
    if (pin->last_modified >= 0 && a->last_modified != pin->last_modified) {
        char was[30], is[30];
        date_text(pin->last_modified, was);
        date_text(a->last_modified, is);
        snprintf(msg, size, "changed on the server since the mount (Last-Modified %s, now %s)",
                 was, is);
        return MFS_HTTP_CHANGED;
    }
    return MFS_HTTP_OK;
}

static mfs_http_verdict size_changed(const mfs_http_pin *pin, uint64_t now, char *msg,
                                     size_t size)
{
    snprintf(msg, size,
             "changed on the server since the mount (%" PRIu64 " bytes, now %" PRIu64 ")",
             pin->size, now);
    return MFS_HTTP_CHANGED;
}

mfs_http_verdict mfs_http_judge_get(const mfs_http_pin *pin, const mfs_http_answer *a,
                                    uint64_t first, uint64_t last, char *msg, size_t size)
{
    msg[0] = '\0';
    if (pin != NULL) {
        if (a->status == 412) {
            snprintf(msg, size, "changed on the server since the mount (%s: HTTP 412, "
                     "Precondition Failed)", pin->kind == MFS_HTTP_PIN_STRONG ? "If-Match"
                     : "If-Unmodified-Since");
            return MFS_HTTP_CHANGED;
        }
        /* The whole object's answer names its version too. */
        if (a->status == 200 || a->status == 206) {
            mfs_http_verdict v = validators(pin, a, msg, size);
            if (v != MFS_HTTP_OK)
                return v;
        }
        bool total = a->has_range && !a->total_unknown;
        if ((a->status == 206 || a->status == 416) && total && a->r_total != pin->size)
            return size_changed(pin, a->r_total, msg, size);
    }
    if (a->status == 200) {
        snprintf(msg, size, "the server answered a range request with the whole file "
                 "(HTTP 200): it does not serve byte ranges");
        return MFS_HTTP_WHOLE;
    }
    if (a->status != 206)
        return MFS_HTTP_STATUS;
    if (!a->has_range || a->total_unknown || a->r_first != first || a->r_last != last) {
        snprintf(msg, size, "the server answered bytes %" PRIu64 "-%" PRIu64
                 " with a Content-Range that is not it", first, last);
        return MFS_HTTP_BAD_RANGE;
    }
    return MFS_HTTP_OK;
}

mfs_http_verdict mfs_http_judge_head(const mfs_http_pin *pin, const mfs_http_answer *a,
                                     char *msg, size_t size)
{
    msg[0] = '\0';
    if (a->status != 200)
        return a->status == 412 ? mfs_http_judge_get(pin, a, 0, 0, msg, size) : MFS_HTTP_STATUS;
    mfs_http_verdict v = validators(pin, a, msg, size);
    if (v != MFS_HTTP_OK)
        return v;
    if (a->length < 0 || (uint64_t)a->length != pin->size)
        return size_changed(pin, a->length < 0 ? 0 : (uint64_t)a->length, msg, size);
    return MFS_HTTP_OK;
}

void mfs_http_pin_headers(const mfs_http_pin *pin, char *if_match, char *if_unmodified,
                          size_t size)
{
    if_match[0] = if_unmodified[0] = '\0';
    if (pin->kind == MFS_HTTP_PIN_STRONG) {
        snprintf(if_match, size, "If-Match: %s", pin->etag);
    } else if (pin->last_modified >= 0) {
        char d[30];
        mfs_http_date_format(pin->last_modified, d);
        snprintf(if_unmodified, size, "If-Unmodified-Since: %s", d);
    }
}

bool mfs_http_pin_names_version(const mfs_http_pin *pin)
{
    return pin->kind == MFS_HTTP_PIN_STRONG;
}

const char *mfs_http_pin_what(const mfs_http_pin *pin)
{
    switch (pin->kind) {
    case MFS_HTTP_PIN_STRONG:
        return "a strong ETag";
    case MFS_HTTP_PIN_WEAK:
        return pin->last_modified >= 0 ? "a weak ETag and Last-Modified" : "a weak ETag";
    case MFS_HTTP_PIN_DATE:
        return "Last-Modified";
    case MFS_HTTP_PIN_SIZE:
        break;
    }
    return "the size alone";
}
