/* libFuzzer target for the TOML reader: any input must be either accepted
 * or rejected with a position and a message, without crashing or leaking. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "toml_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly `size` bytes, so reads past the end are caught. */
    char *text = malloc(size ? size : 1);
    if (text == NULL)
        return 0;
    for (size_t i = 0; i < size; i++)
        text[i] = (char)data[i];
    int line = 0, col = 0;
    char msg[256];
    mfs_val *v = mfs_toml_parse(text, size, &line, &col, msg, sizeof msg);
    if (v == NULL && (line < 1 || col < 1 || msg[0] == '\0'))
        abort();
    mfs_val_free(v);
    free(text);
    return 0;
}
