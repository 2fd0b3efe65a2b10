/* libFuzzer target for the zip layer (formats/codecs/zip_read.h): any input is either
 * refused with an offset inside the file and a message, or opened into
 * entries; each entry is then located (its local header read) or refused
 * likewise, a located one's data lies inside the file, and every entry
 * decodes (cap 1 MiB) to exactly its size or fails with a reason. Then
 * mfs_zip_locate_all on a second open says the same or refuses. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zip_read.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mfs_span file = { data, size, 0 };
    mfs_zip_reader rd;
    mfs_zip_reader_span(&rd, &file);
    mfs_zip z;
    mfs_err e = { 0 };
    if (mfs_zip_open(&z, &rd, &e) != 0) {
        if (e.code != MFS_E_CORRUPT || e.msg[0] == '\0' || e.offset < 0 || (uint64_t)e.offset > size)
            abort();  /* a refusal must say where and why */
        return 0;
    }
    for (size_t i = 0; i < z.count; i++) {
        mfs_zip_entry *en = &z.entries[i];
        if (memchr(en->name, 0, strlen(en->name) + 1) != en->name + strlen(en->name))
            abort();
        mfs_err le = { 0 };
        if (mfs_zip_locate(&z, en, &le) != 0) {
            if (le.code != MFS_E_CORRUPT || le.msg[0] == '\0' || le.offset < 0 ||
                (uint64_t)le.offset > size)
                abort();
            continue;
        }
        if (en->data_offset > size || en->comp_size > size - en->data_offset)
            abort();
        const uint8_t *in_place = mfs_zip_inplace(en) ? data + en->data_offset : NULL;
        if (in_place != NULL)
            mfs_fuzz_touch(in_place, en->size);
        uint8_t *out = NULL;
        mfs_err why = { 0 };
        if (mfs_zip_decode(&z, en, 1u << 20, &out, &why) == 0) {
            mfs_fuzz_touch(out, en->size);
            if (in_place != NULL && memcmp(in_place, out, (size_t)en->size) != 0)
                abort();
            free(out);
        } else if (out != NULL || why.code == MFS_OK || why.msg[0] == '\0') {
            abort();
        }
    }
    mfs_zip_close(&z);
    if (mfs_zip_open(&z, &rd, &e) != 0)
        abort();  /* it opened the first time */
    mfs_err ae = { 0 };
    if (mfs_zip_locate_all(&z, &ae) != 0 &&
        (ae.code != MFS_E_CORRUPT || ae.msg[0] == '\0' || ae.offset < 0 || (uint64_t)ae.offset > size))
        abort();
    mfs_zip_close(&z);
    return 0;
}
