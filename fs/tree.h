/* The immutable directory tree that a mount serves.
 *
 * A loader builds it once (mfs_tree_add / mfs_tree_mkdirs / xattrs), then
 * mfs_tree_finish sorts every directory; after that nothing changes, so the
 * FUSE side reads it from any thread with no lock. A node's index is its
 * identity: the FUSE inode number is index + 1 (the root, index 0, is
 * inode 1), and the same loader calls give the same indexes every time.
 * .npy twins have indexes of their own (MFS_TWIN_BASE + k): read any
 * index through mfs_tree_get, which makes a twin's node on the spot.
 *
 * File contents are the model's own bytes (a range of its source, read
 * through mfs_node_get) or owned by the tree (generated documents, handed
 * over with mfs_tree_own). */
#ifndef MFS_TREE_H
#define MFS_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "job.h"
#include "node_ref.h"
#include "path.h"
#include "produce.h"
#include "source.h"
#include "table.h"

/* Four per tensor, so kept to 16 bytes: the name is a small id into the
 * tree's table (a model uses a handful of names), and the length shares a
 * word with it (mfs_xattr_name, mfs_xattr_len). */
typedef struct mfs_xattr {
    const char *value;      /* not NUL-terminated in general */
    uint32_t node;
    uint32_t len_name;      /* length << 8 | name id; MFS_XATTR_LONG: see mfs_xattr_len */
} mfs_xattr;

_Static_assert(sizeof(mfs_xattr) <= 16, "an xattr is kept in 16 bytes");

#define MFS_XATTR_NAMES_MAX 256u
/* A length of this or more is kept in the 8 bytes before the value. */
#define MFS_XATTR_LONG 0xffffffu

/* One per tensor, so kept to 48 bytes: the rare ops and ctx live in a
 * side array (mfs_tree_ops, mfs_tree_ctx), and what only files use shares
 * room with what only directories use. */
typedef struct mfs_node {
    char *name;             /* one path component; "" for the root */
    uint32_t parent;
    uint32_t xattr_first;   /* into mfs_tree.xattrs, after finish */
    uint32_t xattr_count;
    uint32_t producer;      /* into mfs_tree.producers; MFS_NONE: `data` is the
                               content, always good */
    uint32_t body;          /* MFS_NONE; in a twin's node (mfs_tree_get), the
                               file whose bytes follow `data`: served from
                               that file's own bytes, never copied */
    unsigned kind : 1;          /* mfs_kind */
    bool size_unknown : 1;      /* `size` is a placeholder: the produced bytes tell */
    bool sums : 1;              /* the SHA256SUMS file: lines made on demand (mfs_tree_sums) */
    bool summed : 1;            /* has a line in SHA256SUMS (and the sha256 xattr) */
    bool from_src : 1;          /* its bytes are the model's, at src_off in its
                                   source (mfs_node_get), not `data` */
    bool concat : 1;            /* `data` is its head, other files' bytes follow
                                   (mfs_tree_add_concat, mfs_tree_concat) */
    bool linked : 1;            /* a file of the files view: its bytes are those of
                                   entry `src_off` of its volume's mfs_files
                                   (fs/files_view.h), a file of its own */
    union {
        struct {            /* MFS_NODE_FILE */
            union {
                const uint8_t *data;  /* file bytes owned by the tree (generated); with
                                         a body, only the head: size - body's size bytes */
                uint64_t src_off;     /* from_src: where they start in the source;
                                         linked: its files view entry */
            };
            uint64_t size;
        };
        struct {            /* MFS_NODE_DIR, after finish */
            uint32_t child_first;   /* into mfs_tree.children */
            uint32_t child_count;
            uint32_t subdirs;       /* child directories, for st_nlink */
        };
    };
} mfs_node;

_Static_assert(sizeof(mfs_node) <= 48, "a node is kept in 48 bytes");

/* A node's mfs_tree_set_producer. */
typedef struct mfs_producer {
    const mfs_produce_ops *ops;
    void *ctx;              /* owned by the tree if handed to mfs_tree_own */
} mfs_producer;

/* A tensor's own xattrs (user.modelfs.name, dtype, shape and offset) in
 * 16 bytes instead of four records and the offset's text: a million
 * tensors kept 73 MB of them. The name is the file's own (when the two
 * are equal; else it is a record), dtype and shape are a pair kept once. */
typedef struct mfs_tensor_attrs {
    uint32_t node;
    uint32_t pair;          /* into mfs_tree.pairs; MFS_TATTR_NAME: the name is the file's */
    uint64_t offset;
} mfs_tensor_attrs;

#define MFS_TATTR_NAME 0x80000000u

typedef struct mfs_attr_pair {
    const char *dtype, *shape;  /* interned, not NUL-terminated */
    uint32_t dlen, slen;
} mfs_attr_pair;

/* One xattr as readers see it (mfs_xattr_next): a record, or one of a
 * tensor's own, whose offset is written into `num`. */
typedef struct mfs_xattr_view {
    const char *name;
    const char *value;
    size_t len;
    char num[24];
} mfs_xattr_view;

/* SHA256SUMS (sums.h): one line per tensor file (mfs_tree_mark_summed), in tree
 * order. Every line
 * has a length known without hashing ("HASH  PATH\n", GNU-escaped), so the
 * file's size is exact at mount; the hashes are made when read. */
typedef struct mfs_sums {
    uint32_t node;          /* the SHA256SUMS file; MFS_NONE when there is none */
    uint32_t count;         /* lines */
    uint32_t *files;        /* the file of each line */
    uint64_t *off;          /* count + 1 offsets: line i is [off[i], off[i+1]) */
    size_t max_line;        /* longest line's length */
} mfs_sums;

/* An .npy twin (mfs_tree_add_twin_with) is no node of its own: a million
 * tensors kept a million 48-byte nodes and names for them. Twin k has the
 * index MFS_TWIN_BASE + k, and readers see it through mfs_tree_get, which
 * makes its node on the spot from these few bytes. */
#define MFS_TWIN_BASE 0x80000000u
#define MFS_TWIN_NAMED 0x80000000u  /* in mfs_twin.head: its name is in twin_names */

typedef struct mfs_twin {
    uint32_t body;          /* the file it serves after its head */
    uint32_t head;          /* into mfs_tree.heads; | MFS_TWIN_NAMED */
} mfs_twin;

/* Twins first.. (up to the next run's first) are children of `parent`:
 * a loader adds a folder's twins together. */
typedef struct mfs_twin_run {
    uint32_t first, parent;
} mfs_twin_run;

/* A twin whose name is not its body's name and ".npy" (a "%~2" one). */
typedef struct mfs_twin_name {
    uint32_t twin;
    const char *name;
} mfs_twin_name;

struct mfs_piece {
    const uint8_t *p;
    size_t len;
};

/* A file made of other files (mfs_tree_add_concat): `head_len` bytes of
 * its own (the node's `data`), then each piece's bytes in turn. Nothing
 * is copied at mount: readers serve each piece from where its file's
 * bytes are (the mapping, produced content). */
#define MFS_PIECE_LOGICAL 1u  /* the file's bytes in logical order (C order,
                                 little-endian: fs/tensor_read.h's reader), not as stored */

typedef struct mfs_concat_piece {
    uint64_t at;            /* where it starts in the concatenation */
    uint64_t len;           /* its file's size */
    uint32_t node;          /* the file whose bytes it is */
    uint32_t flags;         /* MFS_PIECE_* */
} mfs_concat_piece;

typedef struct mfs_concat {
    uint32_t node;          /* first: find_keyed's key */
    uint32_t count;         /* pieces */
    mfs_concat_piece *pieces;  /* owned by the tree */
    uint64_t head_len;
} mfs_concat;

typedef struct mfs_tree {
    mfs_node *nodes;
    uint32_t count, cap;
    uint32_t *children;     /* per directory, sorted by name (bytewise) */
    mfs_producer *producers; /* by mfs_node.producer */
    uint32_t producer_count, producer_cap;
    mfs_xattr *xattrs;
    uint32_t xattr_count, xattr_cap;
    mfs_tensor_attrs *tattrs;   /* by node, after finish */
    uint32_t tattr_count, tattr_cap;
    mfs_attr_pair *pairs;
    uint32_t pair_count, pair_cap;
    mfs_table pair_index;       /* (dtype, shape) -> pairs (until finish) */
    const char **xattr_names;   /* by id: the strings loaders passed */
    uint32_t xattr_name_count;
    mfs_table names;        /* (parent, name) -> node index */
    mfs_table interned;     /* bytes -> index in `pieces` (until finish) */
    struct mfs_piece *pieces;
#define MFS_TREE_RECENT 64
    struct mfs_piece recent[MFS_TREE_RECENT];  /* pieces interned lately (tree.c) */
    uint32_t piece_count, piece_cap;
    mfs_twin *twins;
    uint32_t twin_count, twin_cap;
    mfs_twin_run *twin_runs;    /* by first, ascending */
    uint32_t twin_run_count, twin_run_cap;
    mfs_twin_name *twin_names;  /* by twin, ascending */
    uint32_t twin_name_count, twin_name_cap;
    struct mfs_piece *heads;    /* the twins' heads, each kept once */
    uint32_t head_count, head_cap;
    mfs_table head_index;       /* interned head -> heads (until finish) */
    void **owned;
    size_t owned_count, owned_cap;
    /* Names and xattr values live in large blocks of their own, not among
     * the loader's short-lived allocations: otherwise every heap page keeps
     * a few live bytes and the freed rest can never go back to the system. */
    uint8_t *arena_cur;
    size_t arena_left;
    size_t arena_next;      /* the next block's size: grows to ARENA_BLOCK */
    struct mfs_tree_dtor *dtors;    /* mfs_tree_on_destroy's, newest first */
    mfs_sums sums;
    mfs_concat *concats;    /* by node, ascending (nodes are added in order) */
    uint32_t concat_count, concat_cap;
    struct mfs_tree_finisher *finishers;  /* mfs_tree_on_finish's, oldest first */
    struct mfs_layouts *layouts;  /* tensors stored in another order (tensor_read.c) */
    bool finished;
} mfs_tree;

void mfs_tree_init(mfs_tree *t);
void mfs_tree_destroy(mfs_tree *t);

/* True when `name` can be a path component here (mfs_name_ok). */
static inline bool mfs_tree_valid_name(const char *name)
{
    return mfs_name_ok(name, strlen(name));
}

/* Adds a child; returns its index, or MFS_NONE when the name is invalid,
 * already taken, or the parent is not a directory. */
uint32_t mfs_tree_add(mfs_tree *t, uint32_t parent, const char *name, mfs_kind kind,
                      const uint8_t *data, uint64_t size);

/* Adds a file whose bytes are the model's [off, off + size), read from
 * its source when served (an empty one reads nothing); as mfs_tree_add
 * otherwise. */
uint32_t mfs_tree_add_stored(mfs_tree *t, uint32_t parent, const char *name, uint64_t off,
                             uint64_t size);

/* The first free name in `dir` for `name` (malloc'd): itself, then
 * "%~2", "%~3"... (the names rule's duplicate form, cut to stay a valid
 * name). */
char *mfs_tree_free_name(const mfs_tree *t, uint32_t dir, const char *name);

/* Adds a file of the files view whose bytes are those of entry `entry`
 * of its volume's files view (fs/files_view.h); as mfs_tree_add otherwise. */
uint32_t mfs_tree_add_linked(mfs_tree *t, uint32_t parent, const char *name, uint32_t entry,
                             uint64_t size);

/* Finds or creates the directory at "a/b/c" below `parent` (components must
 * be valid names). MFS_NONE when a file is in the way. */
uint32_t mfs_tree_mkdirs(mfs_tree *t, uint32_t parent, const char *path);

/* The child called `name` of `parent`, or MFS_NONE. */
uint32_t mfs_tree_lookup(const mfs_tree *t, uint32_t parent, const char *name);

/* A file whose size is known only once its bytes are produced (a file
 * fetched on first open): shown with size 0, served unbuffered. */
void mfs_tree_set_size_unknown(mfs_tree *t, uint32_t node);

/* A file whose bytes are a head (an .npy header) followed by the bytes of
 * the file `body` (its tensor), in two steps for a head many such files
 * share: mfs_tree_twin_head keeps the head (copied) once and gives its id
 * (MFS_NONE when no more fit), mfs_tree_add_twin_with adds the file: a
 * twin, index MFS_TWIN_BASE + k. MFS_NONE as mfs_tree_add, or when `body`
 * is not a real file of known size or `head` is no id it gave. Named `body`'s
 * name and ".npy", it keeps no name of its own. */
uint32_t mfs_tree_twin_head(mfs_tree *t, const void *head, size_t head_len);
uint32_t mfs_tree_add_twin_with(mfs_tree *t, uint32_t parent, const char *name, uint32_t head,
                                uint32_t body);

/* Adds a concatenation file, empty until mfs_tree_set_concat gives it its
 * head and pieces: as mfs_tree_add otherwise. */
uint32_t mfs_tree_add_concat(mfs_tree *t, uint32_t parent, const char *name);

/* Gives concatenation `node` its bytes: `head` (head_len bytes from
 * malloc, owned by the tree from now on, even on failure) followed by the
 * bytes of each piece's file in turn (`pieces` from malloc, owned the
 * same way; their `at` is set here, `len` must be the file's size).
 * Pieces must be real files of known size, not SHA256SUMS nor another
 * concatenation. Before mfs_tree_finish returns (an mfs_tree_on_finish
 * call may do it). False when a piece is no such file (the file stays
 * empty). */
bool mfs_tree_set_concat(mfs_tree *t, uint32_t node, uint8_t *head, uint64_t head_len,
                         mfs_concat_piece *pieces, uint32_t count);

/* Calls fn(t, arg) in mfs_tree_finish, once directories and xattrs are
 * sorted (the tree reads as it will when mounted) but before it is
 * finished: the last moment to set a file's bytes (a concatenation's,
 * whose header lists tensors by their names). In the order added. */
void mfs_tree_on_finish(mfs_tree *t, void (*fn)(mfs_tree *t, void *arg), void *arg);

/* The concatenation of file `node`, or NULL when it is none. */
const mfs_concat *mfs_tree_concat(const mfs_tree *t, uint32_t node);

/* The piece that holds byte `off` of the concatenation (off at or past
 * head_len and before the file's size): an index into c->pieces. */
uint32_t mfs_concat_piece_at(const mfs_concat *c, uint64_t off);

/* Gives a file node on-demand or verified content (see mfs_produce_ops). */
void mfs_tree_set_producer(mfs_tree *t, uint32_t node, const mfs_produce_ops *ops, void *ctx);

/* Copies the value; `name` must be a string that outlives the tree (a
 * literal): every tensor has the same few names, at most
 * MFS_XATTR_NAMES_MAX distinct ones per tree (more are not added). */
void mfs_tree_add_xattr(mfs_tree *t, uint32_t node, const char *name, const void *value,
                        size_t len);

/* The same for a value many nodes have (a dtype, a shape): kept once. */
void mfs_tree_add_xattr_shared(mfs_tree *t, uint32_t node, const char *name, const void *value,
                               size_t len);

/* The tree frees `p` (from malloc) when it is destroyed. */
void *mfs_tree_own(mfs_tree *t, void *p);

/* Calls fn(arg) when the tree is destroyed, newest first and before the
 * owned memory is freed: for what freeing memory does not release (a
 * directory fd that files of a folder model are opened under). */
void mfs_tree_on_destroy(mfs_tree *t, void (*fn)(void *arg), void *arg);

/* SHA256SUMS (mfs_tree_add_sums, its lines): sums.h. */

/* Sorts directories and xattrs; call once, after the last add. */
void mfs_tree_finish(mfs_tree *t);

/* "a/b/c" relative to the root (malloc'd; "" for the root). */
char *mfs_tree_path(const mfs_tree *t, uint32_t node);
/* The same, or NULL when memory runs out: for code that runs while
 * mounted (formats/base/xalloc.h). */
char *mfs_tree_path_try(const mfs_tree *t, uint32_t node);

/* Node i when it is a real one (not a twin: see mfs_tree_get), or NULL. */
static inline const mfs_node *mfs_tree_node(const mfs_tree *t, uint32_t i)
{
    return i < t->count ? &t->nodes[i] : NULL;
}

static inline bool mfs_tree_is_twin(const mfs_tree *t, uint32_t i)
{
    return i >= MFS_TWIN_BASE && i - MFS_TWIN_BASE < t->twin_count;
}

/* Whether i is a node of the tree, real or twin. */
static inline bool mfs_tree_has(const mfs_tree *t, uint32_t i)
{
    return i < t->count || mfs_tree_is_twin(t, i);
}

/* Room for a twin's node made on the spot. */
typedef struct mfs_node_buf {
    mfs_node node;
    char name[MFS_NAME_MAX + 1];
} mfs_node_buf;

/* Node i, real or twin, or NULL: a twin's node is made in *buf and lives
 * as long as it (a read-only view: nothing of a twin can be set). */
const mfs_node *mfs_tree_get(const mfs_tree *t, uint32_t i, mfs_node_buf *buf);

/* The xattr's name, as the loader passed it ("user.modelfs.dtype"). */
static inline const char *mfs_xattr_name(const mfs_tree *t, const mfs_xattr *x)
{
    uint32_t id = x->len_name & 0xffu;
    return id < t->xattr_name_count ? t->xattr_names[id] : "";
}

/* A tensor's name, dtype, shape and offset xattrs (see mfs_tensor_attrs);
 * once per node. */
void mfs_tree_set_tensor_attrs(mfs_tree *t, uint32_t node, const char *name, size_t name_len,
                               const char *dtype, const char *shape, size_t shape_len,
                               uint64_t offset);

/* The xattrs of a node, in name order (ties: in the order they were
 * added, a tensor's own first). */
typedef struct mfs_xattr_iter {
    const mfs_tree *t;
    uint32_t rec, rec_end;          /* records still to come */
    const mfs_tensor_attrs *ta;     /* NULL when the node has none */
    unsigned syn;                   /* the next of the tensor's own */
} mfs_xattr_iter;

void mfs_xattr_iter_init(const mfs_tree *t, uint32_t node, mfs_xattr_iter *it);
/* The next xattr into *v; false at the end. */
bool mfs_xattr_next(mfs_xattr_iter *it, mfs_xattr_view *v);

/* The value's length in bytes, whatever it is (the mount shows at most
 * 64 KiB; modelfs-ls prints any). */
static inline size_t mfs_xattr_len(const mfs_xattr *x)
{
    uint32_t len = x->len_name >> 8;
    if (len < MFS_XATTR_LONG)
        return len;
    uint64_t long_len;
    memcpy(&long_len, x->value - sizeof long_len, sizeof long_len);
    return (size_t)long_len;
}

/* The node's producer ops (see mfs_produce_ops); NULL when `data` is the
 * content, always good (and for a directory). */
static inline const mfs_produce_ops *mfs_tree_ops(const mfs_tree *t, const mfs_node *n)
{
    return n->producer < t->producer_count ? t->producers[n->producer].ops : NULL;
}

/* The ctx passed with those ops; NULL when there are none. */
static inline void *mfs_tree_ctx(const mfs_tree *t, const mfs_node *n)
{
    return n->producer < t->producer_count ? t->producers[n->producer].ctx : NULL;
}

/* How many bytes of a file are its own `data` (all of them but a body's
 * or a concatenation's pieces; none for SHA256SUMS). */
uint64_t mfs_tree_concat_head_len(const mfs_tree *t, const mfs_node *n);
static inline uint64_t mfs_tree_head_len(const mfs_tree *t, const mfs_node *n)
{
    if (n->sums)
        return 0;  /* made on demand: no bytes of its own */
    if (n->concat)
        return mfs_tree_concat_head_len(t, n);
    return n->body == MFS_NONE ? n->size : n->size - t->nodes[n->body].size;
}

/* Bytes [off, off + len) of file `n` (no producer's: see mfs_tree_ops; no
 * concatenation's past its head: see mfs_tree_concat),
 * whose model reads from `src` (NULL for a model with none): its source's
 * bytes, or its own. Valid until mfs_node_release. -1 with e. */
static inline int mfs_node_get(const mfs_node *n, mfs_src *src, uint64_t off, uint64_t len,
                               mfs_span *out, mfs_err *e)
{
    if (n->from_src) {
        if (src == NULL)
            return mfs_fail(e, MFS_E_INTERNAL, MFS_NO_OFFSET, "a stored file without a source");
        return mfs_src_get(src, n->src_off + off, len, out, e);
    }
    *out = (mfs_span){ n->data ? n->data + off : NULL, len, off };
    return 0;
}

static inline void mfs_node_release(const mfs_node *n, mfs_src *src, mfs_span got)
{
    if (n->from_src && src != NULL)
        mfs_src_release(src, got);
}

#endif
