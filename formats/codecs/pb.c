#include "pb.h"

bool mfs_pb_varint(mfs_span s, uint64_t *at, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*at >= s.len)
            return false;
        uint8_t b = s.p[(*at)++];
        /* The tenth byte holds bit 63 only. */
        if (i == 9 && b > 1)
            return false;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *out = v;
            return true;
        }
    }
    return false;
}

int mfs_pb_next(mfs_pb *r, mfs_pb_field *f, mfs_err *e)
{
    if (r->at >= r->msg.len)
        return 0;
    uint64_t start = r->at, tag;
    f->at = r->msg.base + start;
    if (!mfs_pb_varint(r->msg, &r->at, &tag))
        return MFS_CORRUPT(e, f->at, "protobuf: a malformed or truncated field tag");
    uint64_t num = tag >> 3;
    f->wire = (uint8_t)(tag & 7);
    if (num == 0 || num > MFS_PB_FIELD_MAX)
        return MFS_CORRUPT(e, f->at, "protobuf: field number %llu is out of range",
                           (unsigned long long)num);
    f->num = (uint32_t)num;
    f->v = 0;
    f->bytes = mfs_span_sub(r->msg, r->at, 0);
    switch (f->wire) {
    case MFS_PB_VARINT:
        if (!mfs_pb_varint(r->msg, &r->at, &f->v))
            return MFS_CORRUPT(e, r->msg.base + r->at,
                               "protobuf: field %u: a varint longer than 10 bytes, past 64 bits or "
                               "past the end", f->num);
        return 1;
    case MFS_PB_I64:
    case MFS_PB_I32: {
        uint64_t n = f->wire == MFS_PB_I64 ? 8 : 4;
        if (!mfs_span_has(r->msg, r->at, n))
            return MFS_CORRUPT(e, r->msg.base + r->at, "protobuf: field %u: a fixed%u value runs "
                               "past the end", f->num, (unsigned)(n * 8));
        f->bytes = mfs_span_sub(r->msg, r->at, n);
        for (uint64_t i = n; i-- > 0;)
            f->v = (f->v << 8) | r->msg.p[r->at + i];
        r->at += n;
        return 1;
    }
    case MFS_PB_LEN: {
        uint64_t len;
        if (!mfs_pb_varint(r->msg, &r->at, &len))
            return MFS_CORRUPT(e, r->msg.base + r->at, "protobuf: field %u: a malformed length",
                               f->num);
        if (!mfs_span_has(r->msg, r->at, len))
            return MFS_CORRUPT(e, r->msg.base + r->at,
                               "protobuf: field %u: %llu bytes run past the end of their message "
                               "(%llu bytes left)", f->num, (unsigned long long)len,
                               (unsigned long long)(r->msg.len - r->at));
        f->bytes = mfs_span_sub(r->msg, r->at, len);
        r->at += len;
        return 1;
    }
    case 3:
    case 4:
        return MFS_CORRUPT(e, f->at, "protobuf: field %u is a group (wire type %u), which modelfs "
                           "does not read", f->num, f->wire);
    default:
        return MFS_CORRUPT(e, f->at, "protobuf: field %u has invalid wire type %u", f->num, f->wire);
    }
}

int mfs_pb_count_varints(mfs_span s, uint64_t *count, mfs_err *e)
{
    uint64_t n = 0, at = 0;
    while (at < s.len) {
        uint64_t v, from = at;
        if (!mfs_pb_varint(s, &at, &v))
            return MFS_CORRUPT(e, s.base + from, "protobuf: a malformed varint in a packed list");
        n++;
    }
    *count = n;
    return 0;
}
