/* A Hub repository's model files (hf://ORG/REPO[@REV] with no PATH):
 * the revision resolved once to its commit (/api/.../revision/REV), the
 * tree at that commit listed page by page (/api/.../tree/COMMIT, the
 * next page in the Link header, on the Hub's host only: the token goes
 * with it), each file named hf://ORG/REPO@COMMIT/PATH so that every one
 * is read at that commit. Offline, the Hub cache's snapshot is walked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub.h"
#include "hub_cache.h"
#include "hub_env.h"
#include "hub_parse.h"
#include "hub_request.h"
#include "hub_resolve.h"
#include "hub_url.h"
#include "xalloc.h"

#define PAGE_MAX (16u << 20)      /* bytes of one listing page or revision */
#define MAX_PAGES 10000u

/* The commit `rev` names, asked of the Hub. */
static int commit_of(const mfs_hub_env *env, const mfs_hub_ref *r, const mfs_http_opts *o,
                     char *out, mfs_err *e)
{
    if (mfs_hub_is_commit(r->rev)) {
        memcpy(out, r->rev, 41);
        return 0;
    }
    char *url = mfs_hub_api_url(env->endpoint, r, "revision", r->rev, NULL);
    mfs_hub_reply a;
    int rc = mfs_hub_request(url, env->token, false, PAGE_MAX, o, &a, e);
    free(url);
    if (rc != 0)
        return -1;
    if (a.status != 200)
        rc = mfs_hub_status_fail(e, a.status, a.error_code[0] ? a.error_code : NULL,
                                 env->token != NULL, r, r->rev);
    else
        rc = mfs_hub_parse_revision(a.body, a.len, out, e);
    mfs_hub_reply_free(&a);
    return rc;
}

/* A page's URL as a number, for the loop check: FNV-1a, 64 bits (two
 * URLs of one listing agreeing by chance: about 1 in 10^11 for 10,000
 * pages). */
static uint64_t url_hash(const char *url)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = url; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return h;
}

/* The tree's pages from `url` on (freed here); `seen`: room for MAX_PAGES
 * hashes of the pages' URLs. */
static int list_pages(const mfs_hub_env *env, const mfs_hub_ref *r, const mfs_http_opts *o,
                      char *url, uint64_t *seen, mfs_hub_entries *out, mfs_err *e)
{
    char hub_origin[512], origin[512];
    if (!mfs_hub_origin(env->endpoint, hub_origin, sizeof hub_origin)) {
        free(url);
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "HF_ENDPOINT is not an http(s) URL");
    }
    for (unsigned page = 0; url != NULL; page++) {
        if (page == MAX_PAGES) {
            free(url);
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "the listing has more than %u pages",
                            MAX_PAGES);
        }
        uint64_t id = url_hash(url);
        for (unsigned i = 0; i < page; i++)
            if (seen[i] == id) {
                free(url);
                return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                                "the listing's Link headers loop (page %u is page %u again): "
                                "stopped at the first page seen twice", page + 1, i + 1);
            }
        seen[page] = id;
        mfs_hub_reply a;
        if (mfs_hub_request(url, env->token, false, PAGE_MAX, o, &a, e) != 0) {
            free(url);
            return -1;
        }
        int rc = a.status == 200 ? mfs_hub_parse_tree(a.body, a.len, out, MFS_REMOTE_MAX_FILES, e)
                                 : mfs_hub_status_fail(e, a.status,
                                                       a.error_code[0] ? a.error_code : NULL,
                                                       env->token != NULL, r, r->rev);
        char *next = rc == 0 && a.next[0] ? mfs_hub_url_join(url, a.next) : NULL;
        mfs_hub_reply_free(&a);
        free(url);
        url = next;
        if (rc != 0) {
            free(url);
            return -1;
        }
        /* The token goes with every page: never to another host. */
        if (url != NULL && (!mfs_hub_origin(url, origin, sizeof origin) ||
                            strcmp(origin, hub_origin) != 0)) {
            free(url);
            return mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                            "the listing's next page is not on the Hub's host");
        }
    }
    return 0;
}

/* Every page of the tree at `commit`. A next page already listed (A -> B
 * -> A) ends it with an error at once, not at the page cap. */
static int list_tree(const mfs_hub_env *env, const mfs_hub_ref *r, const char *commit,
                     const mfs_http_opts *o, mfs_hub_entries *out, mfs_err *e)
{
    char *url = mfs_hub_api_url(env->endpoint, r, "tree", commit, "recursive=true");
    uint64_t *seen = mfs_xmalloc(MAX_PAGES * sizeof *seen);
    int rc = list_pages(env, r, o, url, seen, out, e);
    free(seen);
    return rc;
}

static void found(void *arg, const char *path, uint64_t size)
{
    mfs_hub_entries *l = arg;
    l->items = mfs_xrealloc(l->items, (l->count + 1) * sizeof *l->items);
    l->items[l->count++] = (mfs_hub_entry){ mfs_xstrdup(path), size };
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const mfs_hub_entry *)a)->path, ((const mfs_hub_entry *)b)->path);
}

/* The length of PREFIX when `name` is PREFIX-NNNNN-of-NNNNN.safetensors
 * (as transformers names shards), else 0. */
static size_t shard_prefix(const char *name)
{
    static const char ext[] = ".safetensors";
    size_t n = strlen(name), k = sizeof ext - 1;
    if (n <= k || strcmp(name + n - k, ext) != 0)
        return 0;
    size_t i = n - k, d = 0;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--, d++;
    if (d == 0 || i < 4 || strncmp(name + i - 4, "-of-", 4) != 0)
        return 0;
    i -= 4;
    d = 0;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--, d++;
    if (d == 0 || i < 2 || name[i - 1] != '-')
        return 0;
    return i - 1;
}

/* A shard whose index (PREFIX.safetensors.index.json in the same folder)
 * is listed: part of that one model, not a model of its own. Known by
 * name: reading every index at listing would cost a resolve (which the
 * Hub rate-limits) per index. `l` is sorted by path. */
static bool is_listed_shard(const mfs_hub_entries *l, const char *path)
{
    const char *name = base_of(path);
    size_t plen = shard_prefix(name);
    if (plen == 0)
        return false;
    size_t dlen = (size_t)(name - path);
    char *idx = mfs_xmalloc(dlen + plen + sizeof ".safetensors.index.json");
    memcpy(idx, path, dlen + plen);
    strcpy(idx + dlen + plen, ".safetensors.index.json");
    mfs_hub_entry key = { idx, 0 };
    bool found = bsearch(&key, l->items, l->count, sizeof *l->items, by_path) != NULL;
    free(idx);
    return found;
}

int mfs_hub_list(const char *url, const mfs_http_opts *o, mfs_remote_listing *out, mfs_err *e)
{
    mfs_hub_ref r;
    mfs_hub_env env;
    if (mfs_hub_ref_parse(url, &r, e) != 0)
        return -1;
    if (r.path != NULL) {
        mfs_hub_ref_free(&r);
        return mfs_fail(e, MFS_E_USAGE, MFS_NO_OFFSET, "names one file, not a repository");
    }
    if (mfs_hub_env_get(&env, e) != 0)
        return -1;
    char commit[41];
    mfs_hub_entries l = { 0 };
    int rc = 0;
    if (env.offline || (o != NULL && o->offline)) {
        if (!mfs_hub_cache_commit(env.cache, &r, r.rev, commit) ||
            !mfs_hub_cache_walk(env.cache, &r, commit, MFS_REMOTE_MAX_FILES, found, &l))
            rc = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET,
                          "offline, and revision %.200s of %s/%s is not in the Hub's cache "
                          "(%.300s)", r.rev, r.org, r.name, env.cache);
    } else {
        rc = commit_of(&env, &r, o, commit, e);
        if (rc == 0)
            rc = list_tree(&env, &r, commit, o, &l, e);
    }
    if (rc == 0 && l.count > 1)
        qsort(l.items, l.count, sizeof *l.items, by_path);
    size_t models = 0;
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        const char *p = l.items[i].path;
        bool model = mfs_remote_is_model_name(base_of(p)) && !is_listed_shard(&l, p);
        if (!model && out->count >= MFS_REMOTE_MAX_ALL)
            continue;
        if (model && ++models > MFS_REMOTE_MAX_FILES) {
            rc = mfs_fail(e, MFS_E_IO, MFS_NO_OFFSET, "more than %u model files in it",
                          MFS_REMOTE_MAX_FILES);
            break;
        }
        char *fu = mfs_hub_file_url(&r, commit, p);
        mfs_remote_listing_add(out, p, fu, l.items[i].size, 0, model);
        free(fu);
    }
    mfs_hub_entries_free(&l);
    mfs_hub_env_free(&env);
    mfs_hub_ref_free(&r);
    if (rc != 0)
        mfs_remote_listing_free(out);
    return rc;
}
