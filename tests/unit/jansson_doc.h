/* JSON read by Debian's libjansson (a reader independent of ours: modelfs
 * only writes JSON), turned into an mfs_val document so that a test can
 * compare it with what our parsers and writers produce.
 *
 * Strict: duplicate object keys are refused; "\u0000" is kept, in strings
 * and in keys (jansson refuses it in keys: it is read as the noncharacter
 * U+FDD0, which the file must not hold, and turned back into a NUL byte).
 * Integers become MFS_V_INT, numbers with a fraction or exponent
 * MFS_V_FLOAT. */
#ifndef MFS_TEST_JANSSON_DOC_H
#define MFS_TEST_JANSSON_DOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doc.h"

#define JANSSON_NUL_STAND_IN "\xEF\xB7\x90"   /* U+FDD0 in UTF-8 */

/* `n` bytes at `p`, with U+FDD0 turned back into NUL when `nul` says so;
 * the result is NUL-terminated (*outlen bytes before it). */
static char *jansson_unmap(const char *p, size_t n, bool nul, size_t *outlen)
{
    char *out = malloc(n + 1);
    if (out == NULL)
        abort();
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (nul && i + 3 <= n && memcmp(p + i, JANSSON_NUL_STAND_IN, 3) == 0) {
            out[o++] = '\0';
            i += 2;
        } else {
            out[o++] = p[i];
        }
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

static mfs_val *jansson_to_val(const json_t *j, bool nul)
{
    switch (json_typeof(j)) {
    case JSON_NULL:
        return mfs_null();
    case JSON_TRUE:
        return mfs_bool(true);
    case JSON_FALSE:
        return mfs_bool(false);
    case JSON_INTEGER:
        return mfs_int((int64_t)json_integer_value(j));
    case JSON_REAL:
        return mfs_float(json_real_value(j));
    case JSON_STRING: {
        size_t n;
        char *b = jansson_unmap(json_string_value(j), json_string_length(j), nul, &n);
        mfs_val *v = mfs_strn(b, n);
        free(b);
        return v;
    }
    case JSON_ARRAY: {
        mfs_val *a = mfs_arr();
        for (size_t i = 0; i < json_array_size(j); i++)
            mfs_arr_push(a, jansson_to_val(json_array_get(j, i), nul));
        return a;
    }
    case JSON_OBJECT: {
        mfs_val *o = mfs_obj();
        const char *key;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach((json_t *)j, key, klen, v) {
            size_t n;
            char *k = jansson_unmap(key, klen, nul, &n);
            mfs_obj_setn(o, k, n, jansson_to_val(v, nul));
            free(k);
        }
        return o;
    }
    }
    return NULL;
}

/* Parses `len` bytes of JSON; NULL (and the position and reason on stderr,
 * after `what`) if jansson refuses them. */
static mfs_val *jansson_parse(const char *text, size_t len, const char *what)
{
    /* Every "\u0000" escape becomes "\uFDD0" (a backslash escape is two
     * characters, so "\\u0000" is left alone), unless U+FDD0 is there. */
    char *copy = malloc(len + 1);
    if (copy == NULL)
        abort();
    memcpy(copy, text, len);
    copy[len] = '\0';
    bool nul = memmem(text, len, JANSSON_NUL_STAND_IN, 3) == NULL &&
               strcasestr(copy, "\\ufdd0") == NULL;
    for (size_t i = 0; nul && i + 1 < len; i++) {
        if (copy[i] != '\\')
            continue;
        if (copy[i + 1] == 'u' && i + 6 <= len && memcmp(copy + i + 2, "0000", 4) == 0)
            memcpy(copy + i + 2, "FDD0", 4);
        i++;
    }
    json_error_t err;
    json_t *j = json_loadb(copy, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    free(copy);
    if (j == NULL) {
        fprintf(stderr, "%s: JSON at line %d, column %d (byte %d): %s\n", what, err.line,
                err.column, err.position, err.text);
        return NULL;
    }
    mfs_val *v = jansson_to_val(j, nul);
    json_decref(j);
    return v;
}

#endif
