/* libFuzzer target for what the Hub answers and what an hf:// URL says
 * (formats/source/hub_parse.c, hub_url.c): the input as header lines
 * (split at newlines, each from a copy of exactly its length, a Link
 * header's rel="next" parsed from its value), as a tree page's and a
 * revision's JSON, as an hf:// URL (its request URLs built), and as a
 * Location made absolute against a Hub URL. What comes out must hold
 * together: a value inside its line, a next link that fits, listed
 * paths that are relative paths. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "hub_parse.h"
#include "hub_url.h"
#include "path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void header_line(const char *line, size_t len)
{
    const char *v;
    size_t vlen;
    uint64_t num;
    mfs_hub_hkind k = mfs_hub_parse_header(line, len, &v, &vlen, &num);
    if (k != MFS_HUB_H_OTHER && k != MFS_HUB_H_STATUS &&
        (v < line || v + vlen > line + len || vlen > MFS_HUB_HVAL_MAX))
        abort();
    if (k == MFS_HUB_H_LINK) {
        char next[64];
        if (mfs_hub_link_next(v, vlen, next, sizeof next) && strlen(next) >= sizeof next)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mfs_fuzz_each_line(data, size, header_line);
    char *text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char next[128];
    if (mfs_hub_link_next(text, size, next, sizeof next) && strlen(next) >= sizeof next)
        abort();
    mfs_hub_entries l = { 0 };
    mfs_err e = { 0 };
    if (mfs_hub_parse_tree(text, size, &l, 1000, &e) == 0)
        for (size_t i = 0; i < l.count; i++)
            if (!mfs_path_ok(l.items[i].path, strlen(l.items[i].path)))
                abort();
    mfs_hub_entries_free(&l);
    char commit[41];
    if (mfs_hub_parse_revision(text, size, commit, &e) == 0 && !mfs_hub_is_commit(commit))
        abort();
    /* As a URL: only when it holds no NUL (a C string ends there). */
    if (strlen(text) == size) {
        mfs_hub_ref r;
        if (mfs_hub_ref_parse(text, &r, &e) == 0) {
            free(mfs_hub_resolve_url("https://hub.test", &r, r.rev));
            free(mfs_hub_api_url("https://hub.test", &r, "tree", r.rev, "recursive=true"));
            if (r.path != NULL)
                free(mfs_hub_file_url(&r, r.rev, r.path));
            mfs_hub_ref_free(&r);
        }
        free(mfs_hub_url_join("https://hub.test/a/b?c=d", text));
        char origin[64];
        mfs_hub_origin(text, origin, sizeof origin);
    }
    free(text);
    return 0;
}
