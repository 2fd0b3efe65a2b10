/* modelfs-ls: the same tree as the mount, with no FUSE.
 *   modelfs-ls MODEL          every path, its kind and size
 *   modelfs-ls MODEL PATH     that file's bytes on stdout
 *   modelfs-ls -x MODEL PATH...  each node's xattrs, "name=value" lines
 *   modelfs-ls --sha256 MODEL PATH...  "SHA256  SIZE  PATH" per PATH
 *   modelfs-ls --check MODEL...        "EXIT  MODEL" per MODEL: would it mount?
 *   modelfs-ls --verify MODEL every checked/produced file made and checked
 *   modelfs-ls --diff A B     two models' tensors compared by name (diff.c)
 * It is the oracle the mount tests compare against. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "remote.h"
#include "load_models.h"
#include "log.h"
#include "progress.h"
#include "registry.h"
#include "multi.h"
#include "open_files.h"
#include "content.h"
#include "diff.h"
#include "digest.h"
#include "file.h"
#include "opts.h"
#include "sums.h"
#include "tree.h"
#include "url_redact.h"

static const char *prog = "modelfs-ls";

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [options] MODEL [PATH]\n"
            "       %s [options] MODEL... -- [PATH]\n"
            "       %s --sha256 [options] MODEL PATH...\n"
            "       %s --check [options] MODEL...\n"
            "       %s --diff [--json] [options] A B\n"
            "List the tree modelfs would mount for MODEL, or write one file of it.\n"
            "\n"
            "  MODEL          a model file (%s), or a folder holding an unpacked carton,\n"
            "                 or a folder of models (as `modelfs DIR MNT` mounts it),\n"
            "                 or the http:// or https:// URL of a model file,\n"
            "                 or s3://BUCKET/KEY (s3://BUCKET/PREFIX/: its models, with --),\n"
            "                 or hf://ORG/REPO[@REV][/PATH] (Hugging Face Hub)\n"
            "  MODEL... --    several models, as `modelfs A B MNT` mounts them; the PATHs\n"
            "                 (for --sha256, -x or one file's bytes) come after the --\n"
            "  PATH           a path inside the tree, e.g. tensors/conv1.weight or model.json;\n"
            "                 its bytes are written to stdout exactly as the mount serves them\n"
            "  -x             with one or more PATHs: print each node's extended attributes\n"
            "                 instead (with several, each node's after a line \"# PATH\")\n"
            "  --sha256       with one or more PATHs: print \"SHA256  SIZE  PATH\" for each\n"
            "                 (the bytes' lowercase sha256 and length) instead of the bytes;\n"
            "                 every PATH is tried, the exit code is the first failure's\n"
            "  --check        load each MODEL as a mount would and print \"EXIT  MODEL\" for\n"
            "                 each (EXIT: the code below that modelfs-ls MODEL would give;\n"
            "                 a refused MODEL's reason is on stderr); the exit code is the\n"
            "                 first failure's\n"
            "  --verify       produce and check every file that has a checksum or must be\n"
            "                 decoded or fetched (Carton: MANIFEST); report each failure\n"
            "  --diff         compare the tensors of models A and B (any formats, dtypes),\n"
            "                 paired by name (duplicate names in order): a line for each,\n"
            "                 identical (same dtype and bytes), equal (same numbers, e.g. in\n"
            "                 another dtype), changed (with max_abs and mean_abs of |a-b|,\n"
            "                 rel_l2 = ||a-b||/||a||, cos (cosine similarity) and ndiff,\n"
            "                 the numbers that differ), shape (another shape, or a dtype\n"
            "                 without numbers on one side: not compared), only_a, only_b or\n"
            "                 error; then a summary line. Equal numbers are the same\n"
            "                 number in any dtypes (int64 5 = float32 5.0, -0.0 = 0);\n"
            "                 integers compare exactly (int64 past 2^53 too), figures are\n"
            "                 doubles; two NaNs at the same place are equal; norms and cos take\n"
            "                 the places where both are finite. Dtypes without numbers\n"
            "                 (strings, bytes) compare by bytes. Exits as diff(1) does:\n"
            "                 0 every tensor identical or equal, 1 some difference, 2 trouble\n"
            "                 (a model cannot be loaded, a tensor cannot be read)\n"
            "  --json         with --diff: one JSON document (a tensors list, a summary;\n"
            "                 figures as shortest round-trip numbers, null for NaN or inf)\n"
            "  --links-dir DIR  folder of files named by their sha256, for Carton LINKS\n"
            "  --fetch-max SIZE      most bytes (decoded) one fetched LINKS file may have\n"
            "                        (default 16G)\n"
            "  --fetch-timeout SECS  time for fetching one LINKS file, all its URLs\n"
            "                        together (default 3600)\n"
            "  --fetch-reserve SIZE  stop a fetch before the links_dir file system has less\n"
            "                        than this free (default 1G, or 5%% of it if less)\n"
            "  --cache-dir DIR  where blocks of remote models are kept between runs\n"
            "                   (default $XDG_CACHE_HOME/modelfs, else ~/.cache/modelfs)\n"
            "  --cache-max SIZE most bytes the cache may take (default 10G)\n"
            "  --offline      remote models from the cache only: no request\n"
            "  --no-sign-request  s3:// requests unsigned (a public bucket): no AWS\n"
            "                 credentials looked up\n"
            "  -h, --help     this text\n"
            "  -V, --version\n"
            "\n"
            "Exit codes: 0 ok, 1 internal error, 2 usage, 3 cannot read MODEL,\n"
            "4 unrecognised format, 5 corrupt model, 7 no such PATH (or a directory),\n"
            "8 a file failed to verify or could not be read (--diff: 0, 1 or 2, as above).\n",
            prog, prog, prog, prog, prog, mfs_format_names());
}

/* A model's folder in the top tree of several models: its volume (loaded
 * now), else NULL. */
static const mfs_volume *model_volume(mfs_forest *f, const mfs_volume *v, uint32_t node)
{
    uint32_t k = v->id == 0 ? mfs_forest_model_at(f, node) : MFS_NONE;
    return k == MFS_NONE ? NULL : mfs_forest_get(f, k);
}

/* Sizes as `ls -l` of the mount shows them: a file fetched or made on
 * first open shows the length it has once made. */
static uint64_t shown_size(const mfs_volume *v, uint32_t node)
{
    mfs_node_buf buf;
    const mfs_node *n = mfs_tree_get(v->tree, node, &buf);
    uint64_t size = n->size;
    if (n->size_unknown && v->id == 0 && n->parent == MFS_ROOT &&
        strcmp(n->name, "models.json") == 0 &&
        !mfs_content_known_size(v->content, node, &size)) {
        /* models.json: the mount shows its size once read; so do we (not
         * stats.tsv: 0 until read, here too, as nothing reads it). */
        mfs_held *h = mfs_content_get(v->content, node, NULL);
        mfs_held_unref(h);
    }
    if (n->size_unknown && !mfs_file_known_size(v, node, &size) && n->linked) {
        /* A URL named alone, in the files view: the mount learns its size
         * when it or its model is first opened; we open it now. */
        mfs_file *f = NULL;
        mfs_err e = { 0 };
        if (mfs_file_open_sync(v, node, &f, &e) == 0) {
            mfs_file_known_size(v, node, &size);
            mfs_file_close(v, node, f);
        }
    }
    return size;
}

static void list(mfs_forest *f, const mfs_volume *v, uint32_t dir, const char *prefix)
{
    const mfs_tree *t = v->tree;
    const mfs_node *d = mfs_tree_node(t, dir);
    for (uint32_t i = 0; i < d->child_count; i++) {
        uint32_t c = t->children[d->child_first + i];
        mfs_node_buf buf;
        const mfs_node *n = mfs_tree_get(t, c, &buf);
        char *rel = mfs_tree_path(t, c);
        size_t len = strlen(prefix) + strlen(rel) + 1;
        char *path = malloc(len);
        if (path == NULL)
            abort();
        snprintf(path, len, "%s%s", prefix, rel);
        free(rel);
        const mfs_volume *mv = model_volume(f, v, c);
        if (n->kind == MFS_NODE_DIR) {
            printf("d %12s %s/\n", "-", path);
            if (mv != NULL) {
                char *sub = malloc(len + 1);
                if (sub == NULL)
                    abort();
                snprintf(sub, len + 1, "%s/", path);
                list(f, mv, MFS_ROOT, sub);
                free(sub);
            } else {
                list(f, v, c, prefix);
            }
        } else {
            printf("f %12llu %s\n", (unsigned long long)shown_size(v, c), path);
        }
        free(path);
    }
}

/* The node at `path` and its volume (*v, from the top): a model's folder
 * leads into its model. */
static uint32_t resolve(mfs_forest *f, const mfs_volume **v, const char *path)
{
    uint32_t cur = MFS_ROOT;
    char *copy = strdup(path);
    if (copy == NULL)
        return MFS_NONE;
    for (char *save = NULL, *c = strtok_r(copy, "/", &save); c != NULL && cur != MFS_NONE;
         c = strtok_r(NULL, "/", &save)) {
        cur = mfs_tree_lookup((*v)->tree, cur, c);
        const mfs_volume *mv = cur == MFS_NONE ? NULL : model_volume(f, *v, cur);
        if (mv != NULL) {
            *v = mv;
            cur = MFS_ROOT;
        }
    }
    free(copy);
    return cur;
}

/* A file's bytes as the mount serves them (fs/file.h), to fn(arg, p, len)
 * piece by piece, in order. 0; or an exit code: MFS_E_VERIFY when they
 * cannot be made or read (the reason was logged), MFS_E_CHANGED when the
 * model file changed meanwhile, or fn's own. */
typedef int (*bytes_fn)(void *arg, const uint8_t *p, size_t len);

/* Reads of this much: one source's span or one concatenation's pieces
 * held at a time, however large the file. */
#define LS_STEP (64u << 20)

typedef struct each_bytes {
    bytes_fn fn;
    void *arg;
    uint64_t got;
    int rc;                 /* fn's, or the read's */
} each_bytes;

static void each_piece(void *arg, int rc, const struct iovec *iov, int count, const mfs_err *e)
{
    each_bytes *b = arg;
    b->got = 0;
    if (rc != 0) {
        b->rc = e != NULL && e->code == MFS_E_CHANGED ? MFS_E_CHANGED : MFS_E_VERIFY;
        return;
    }
    for (int i = 0; i < count && b->rc == 0; i++) {
        b->rc = b->fn(b->arg, iov[i].iov_base, iov[i].iov_len);
        b->got += iov[i].iov_len;
    }
}

static int each_byte(const mfs_volume *v, uint32_t node, bytes_fn fn, void *arg)
{
    mfs_file *f;
    mfs_err e = { 0 };
    if (mfs_file_open_sync(v, node, &f, &e) != 0)
        return e.code == MFS_E_CHANGED ? MFS_E_CHANGED : MFS_E_VERIFY;
    each_bytes b = { fn, arg, 0, 0 };
    /* Until a read gives nothing: SHA256SUMS reads may be short. */
    for (uint64_t off = 0;; off += b.got) {
        mfs_file_read_sync(v, node, f, off, LS_STEP, each_piece, &b);
        if (b.rc != 0 || b.got == 0)
            break;
    }
    mfs_file_close(v, node, f);
    return b.rc;
}

/* arg: a bool set when stdout fails. */
static int write_bytes(void *arg, const uint8_t *p, size_t len)
{
    if (fwrite(p, 1, len, stdout) == len)
        return 0;
    *(bool *)arg = true;
    return MFS_E_INTERNAL;
}

typedef struct hash_bytes {
    mfs_sha256_stream *s;
    uint64_t len;
} hash_bytes;

static int hash_piece(void *arg, const uint8_t *p, size_t len)
{
    hash_bytes *h = arg;
    h->len += len;
    /* Guarded: the model file may be cut short meanwhile. */
    return mfs_sha256_add(h->s, p, len, NULL) == 0 ? 0 : MFS_E_CHANGED;
}

/* MODEL as messages name it: no presigned URL's query (url_redact.h). */
static const char *shown_model(const char *model, char *buf, size_t size)
{
    mfs_url_redact(model, buf, size);
    return buf;
}

/* A PATH that is a folder has no bytes: named with its model, exit 7 as
 * a PATH that is no file of the tree. */
static int not_a_file(const char *model, const char *path)
{
    char shown[1024];
    fprintf(stderr, "%s: %s: %s: is a directory, not a file (`%s MODEL` lists the tree)\n", prog,
            shown_model(model, shown, sizeof shown), path, prog);
    return mfs_exit_code(MFS_E_NO_PATH);
}

static int dump(const mfs_volume *vol, uint32_t node, int xattrs, const char *model,
                const char *path)
{
    const mfs_tree *t = vol->tree;
    mfs_node_buf buf;
    const mfs_node *n = mfs_tree_get(t, node, &buf);
    if (xattrs) {
        /* As the mount answers it: made on request, unless the tree has
         * one (a carton file's MANIFEST sha256). */
        mfs_xattr_iter it;
        mfs_xattr_view v;
        mfs_xattr_iter_init(t, node, &it);
        while (mfs_xattr_next(&it, &v)) {
            printf("%s=", v.name);
            fwrite(v.value, 1, v.len, stdout);
            putchar('\n');
        }
        if (mfs_sums_has_xattr(t, node)) {
            char hex[MFS_SHA256_HEX];
            if (mfs_sums_digest_sync(vol, node, hex) != 0)
                return mfs_exit_code(MFS_E_VERIFY);
            printf("%s=%s\n", MFS_XATTR_SHA256, hex);
        }
        return mfs_exit_code(MFS_OK);
    }
    if (n->kind != MFS_NODE_FILE)
        return not_a_file(model, path);
    bool write_failed = false;
    int rc = each_byte(vol, node, write_bytes, &write_failed);
    if (write_failed)
        perror(prog);
    return mfs_exit_code(rc == MFS_E_CHANGED ? MFS_E_VERIFY : (mfs_code)rc);
}

/* --sha256: "SHA256  SIZE  PATH" for one PATH of the tree (as given). */
static int sum_one(mfs_forest *f, const char *model, const char *path)
{
    char shown[1024];
    const mfs_volume *v = &f->top;
    uint32_t node = resolve(f, &v, path);
    const mfs_tree *t = v->tree;
    mfs_node_buf buf;
    if (node == MFS_NONE) {
        fprintf(stderr, "%s: %s: no such path in the tree: %s\n", prog,
                shown_model(model, shown, sizeof shown), path);
        return mfs_exit_code(MFS_E_NO_PATH);
    }
    if (mfs_tree_get(t, node, &buf)->kind != MFS_NODE_FILE)
        return not_a_file(model, path);
    hash_bytes h = { mfs_sha256_begin(), 0 };
    if (h.s == NULL)
        return mfs_exit_code(MFS_E_INTERNAL);
    char hex[MFS_SHA256_HEX];
    int rc = each_byte(v, node, hash_piece, &h);
    if (rc != 0) {
        mfs_sha256_abandon(h.s);
        if (rc != MFS_E_CHANGED)
            return mfs_exit_code((mfs_code)rc);
        fprintf(stderr, "%s: %s: %s: the file changed while it was read\n", prog,
                shown_model(model, shown, sizeof shown), path);
        return mfs_exit_code(MFS_E_CHANGED);
    }
    if (mfs_sha256_end(h.s, hex) != 0)
        return mfs_exit_code(MFS_E_INTERNAL);
    printf("%s  %llu  %s\n", hex, (unsigned long long)h.len, path);
    return mfs_exit_code(MFS_OK);
}

/* --check: loads each model as the mount would; "EXIT  MODEL" for each. */
static int check_all(char **models, int n, const mfs_load_opts *opts)
{
    int rc = mfs_exit_code(MFS_OK);
    for (int i = 0; i < n; i++) {
        mfs_origin origin = { 0 };
        mfs_tree tree;
        mfs_tree_init(&tree);
        int r = mfs_exit_code(mfs_load_one(&tree, &origin, models[i], opts, prog));
        printf("%d  %s\n", r, models[i]);
        fflush(stdout);  /* a line per model, in order with stderr's */
        mfs_tree_destroy(&tree);
        mfs_origin_close(&origin);
        if (rc == mfs_exit_code(MFS_OK))
            rc = r;
    }
    return rc;
}

/* Produces and checks every file that has something to produce or check,
 * in every model. */
static void verify_volume(const mfs_volume *v, unsigned *checked, unsigned *failed)
{
    const mfs_tree *t = v->tree;
    mfs_content *content = v->content;
    for (uint32_t i = 0; i < t->count; i++) {
        const mfs_node *n = mfs_tree_node(t, i);
        if (n->kind != MFS_NODE_FILE || mfs_tree_ops(t, n) == NULL)
            continue;
        (*checked)++;
        mfs_held *h = mfs_content_get(content, i, NULL);
        if (h == NULL) {
            (*failed)++;  /* the reason was logged, with the path */
            continue;
        }
        mfs_held_unref(h);
    }
}

static int verify_all(mfs_forest *f)
{
    unsigned checked = 0, failed = 0, bad_models = 0;
    if (f->count == 0)
        verify_volume(&f->top, &checked, &failed);
    for (uint32_t k = 0; k < f->count; k++) {
        const mfs_volume *v = mfs_forest_get(f, k);
        if (v == NULL || f->models[k].failed)
            bad_models++;
        else
            verify_volume(v, &checked, &failed);
    }
    if (f->count)
        printf("verify: %u models, %u did not load; %u files checked, %u failed\n", f->count,
               bad_models, checked, failed);
    else
        printf("verify: %u files checked, %u failed\n", checked, failed);
    return mfs_exit_code(failed || bad_models ? MFS_E_VERIFY : MFS_OK);
}

/* A URL with a user or password: refused, and not echoed. */
static bool refuse_userinfo(const char *model, int i)
{
    if (!mfs_is_remote(model) || !mfs_url_has_userinfo(model))
        return false;
    fprintf(stderr, "%s: model %d: a URL with a user or password is refused (it would show in "
            "messages)\n", prog, i + 1);
    return true;
}

int main(int argc, char **argv)
{
    int xattrs = 0, verify = 0, sums = 0, check = 0, diff = 0, json = 0, argi = 1;
    mfs_load_opts opts = { 0 };
    mfs_log_set_program(prog);  /* the layers' messages say whose they are */
    mfs_raise_open_files();  /* a descriptor per loaded model of a folder */
    for (; argi < argc && argv[argi][0] == '-' && argv[argi][1]; argi++) {
        const char *a = argv[argi];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return mfs_exit_code(MFS_OK);
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("modelfs-ls %s\n", MODELFS_VERSION);
            return mfs_exit_code(MFS_OK);
        } else if (!strcmp(a, "-x")) {
            xattrs = 1;
        } else if (!strcmp(a, "--verify")) {
            verify = 1;
        } else if (!strcmp(a, "--sha256")) {
            sums = 1;
        } else if (!strcmp(a, "--check")) {
            check = 1;
        } else if (!strcmp(a, "--diff")) {
            diff = 1;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--links-dir") && argi + 1 < argc) {
            opts.links_dir = argv[++argi];
        } else if (!strcmp(a, "--cache-dir") && argi + 1 < argc) {
            opts.cache_dir = argv[++argi];
        } else if (!strcmp(a, "--offline")) {
            opts.offline = true;
        } else if (!strcmp(a, "--no-sign-request")) {
            opts.no_sign_request = true;
        } else if (!strcmp(a, "--cache-max") && argi + 1 < argc) {
            if (!mfs_parse_size(argv[++argi], &opts.cache_max) || opts.cache_max == 0) {
                fprintf(stderr, "%s: %s %s: not a size above 0 (e.g. 512M)\n", prog, a, argv[argi]);
                return mfs_exit_code(MFS_E_USAGE);
            }
        } else if ((!strcmp(a, "--fetch-max") || !strcmp(a, "--fetch-reserve")) && argi + 1 < argc) {
            uint64_t *to = !strcmp(a, "--fetch-max") ? &opts.fetch_max : &opts.fetch_reserve;
            if (!mfs_parse_size(argv[++argi], to) || *to == 0) {
                fprintf(stderr, "%s: %s %s: not a size above 0 (e.g. 512M)\n", prog, a, argv[argi]);
                return mfs_exit_code(MFS_E_USAGE);
            }
        } else if (!strcmp(a, "--fetch-timeout") && argi + 1 < argc) {
            if (!mfs_parse_seconds(argv[++argi], &opts.fetch_timeout)) {
                fprintf(stderr, "%s: %s %s: not a number of seconds above 0\n", prog, a, argv[argi]);
                return mfs_exit_code(MFS_E_USAGE);
            }
        } else if (!strcmp(a, "--")) {
            argi++;
            break;
        } else {
            fprintf(stderr, "%s: unknown option '%s' (try --help)\n", prog, a);
            return mfs_exit_code(MFS_E_USAGE);
        }
    }
    if (diff) {
        /* A B, nothing else: exit codes as diff(1)'s (2 for a bad line too). */
        if (argc - argi != 2 || xattrs || verify || sums || check) {
            if (argc - argi != 2)
                fprintf(stderr, "%s: --diff needs two models, got %d\n", prog, argc - argi);
            else
                fprintf(stderr, "%s: --diff goes with --json and the fetch and cache options "
                        "only\n", prog);
            usage(stderr);
            return mfs_exit_code(MFS_E_USAGE);
        }
        for (int i = argi; i < argc; i++)
            if (refuse_userinfo(argv[i], i - argi))
                return mfs_exit_code(MFS_E_USAGE);
        return mfs_ls_diff(prog, argv[argi], argv[argi + 1], &opts, json != 0);
    }
    if (json) {
        fprintf(stderr, "%s: --json goes with --diff (try --help)\n", prog);
        return mfs_exit_code(MFS_E_USAGE);
    }
    if (check) {
        if (argi >= argc || xattrs || verify || sums) {
            usage(stderr);
            return mfs_exit_code(MFS_E_USAGE);
        }
        for (int i = argi; i < argc; i++)
            if (refuse_userinfo(argv[i], i - argi))
                return mfs_exit_code(MFS_E_USAGE);
        int rc = check_all(argv + argi, argc - argi, &opts);
        return fflush(stdout) != 0 && rc == 0 ? mfs_exit_code(MFS_E_INTERNAL) : rc;
    }
    /* MODEL [PATH...], or MODEL... -- [PATH...] for several models. */
    int nmodels = 1, first_path = argi + 1;
    for (int i = argi; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            nmodels = i - argi;
            first_path = i + 1;
            break;
        }
    }
    int npaths = argc - first_path;
    if (nmodels < 1 || argi + nmodels > argc || (npaths > 1 && !sums && !xattrs) || (xattrs && npaths < 1) ||
        (verify && npaths != 0) || (sums && (npaths < 1 || xattrs || verify))) {
        usage(stderr);
        return mfs_exit_code(MFS_E_USAGE);
    }
    const char *const *models = (const char *const *)(argv + argi);
    const char *model = models[0];
    for (int i = 0; i < nmodels; i++)
        if (refuse_userinfo(models[i], i))
            return mfs_exit_code(MFS_E_USAGE);
    mfs_progress_start(prog);
    mfs_forest forest;
    mfs_models held;
    int code = mfs_models_load(&held, &forest, models, (size_t)nmodels, &opts, NULL, prog);
    bool loaded = code == MFS_OK;
    int rc = mfs_exit_code(code);
    if (loaded) {
        if (verify) {
            rc = verify_all(&forest);
        } else if (sums) {
            for (int i = first_path; i < argc; i++) {
                int r = sum_one(&forest, model, argv[i]);
                if (rc == 0)
                    rc = r;
            }
        } else if (npaths == 0) {
            list(&forest, &forest.top, MFS_ROOT, "");
        } else {
            /* One PATH's bytes, or the xattrs of each PATH (many nodes in
             * one load: the tests sample dozens a model). */
            for (int i = first_path; i < argc; i++) {
                const mfs_volume *v = &forest.top;
                uint32_t node = resolve(&forest, &v, argv[i]);
                if (npaths > 1)
                    printf("# %s\n", argv[i]);
                int r;
                if (node == MFS_NONE) {
                    char shown[1024];
                    fprintf(stderr, "%s: %s: no such path in the tree: %s\n", prog,
                            shown_model(model, shown, sizeof shown), argv[i]);
                    r = mfs_exit_code(MFS_E_NO_PATH);
                } else {
                    r = dump(v, node, xattrs, model, argv[i]);
                }
                if (rc == 0)
                    rc = r;
            }
        }
    }
    mfs_progress_stop();
    if (fflush(stdout) != 0 && rc == 0)
        rc = mfs_exit_code(MFS_E_INTERNAL);
    if (loaded)
        mfs_models_close(&held, &forest);
    return rc;
}
