/* libFuzzer target for the protobuf wire-format walker
 * (formats/codecs/pb.c): every field of the input, and every
 * length-delimited payload read again as a message and as a packed run of
 * varints, to a bounded depth. Every value it gives must lie inside the
 * input, and an error must say where and why. */
#include <stdlib.h>

#include "fuzz_common.h"
#include "pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(mfs_span s, unsigned depth)
{
    mfs_pb r = mfs_pb_start(s);
    mfs_pb_field f;
    mfs_err e = { 0 };
    int k;
    while ((k = mfs_pb_next(&r, &f, &e)) == 1) {
        if (f.bytes.len > 0 && (f.bytes.p < s.p || f.bytes.p + f.bytes.len > s.p + s.len))
            abort();
        mfs_fuzz_touch(f.bytes.p, f.bytes.len);
        if (f.wire == MFS_PB_LEN && depth < 8) {
            uint64_t n;
            mfs_err ve = { 0 };
            if (mfs_pb_count_varints(f.bytes, &n, &ve) != 0 && ve.msg[0] == '\0')
                abort();
            walk(f.bytes, depth + 1);
        }
    }
    if (k < 0 && (e.code != MFS_E_CORRUPT || e.msg[0] == '\0'))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mfs_span s = { data, size, 0 };
    walk(s, 0);
    return 0;
}
