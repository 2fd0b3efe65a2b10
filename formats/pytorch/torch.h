/* The PyTorch driver's parts (formats/pytorch/): what torch.save's pickle
 * means (torch_rebuild.c: the accepted globals and what calling them
 * builds), what a TorchScript archive's pickles add (torchscript.c), the names and metadata of a checkpoint (torch_walk.c), the
 * bytes of a view that is not one run of its storage (torch_strided.c),
 * and the driver (pytorch.c). */
#ifndef MFS_TORCH_H
#define MFS_TORCH_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "doc.h"
#include "err.h"
#include "pickle.h"
#include "model.h"
#include "table.h"

#define PT_MAX_DIMS 64
#define PT_TAG_TENSOR 1     /* pk_val OBJ tag: u.obj.id indexes pt_rebuild.t */

/* One _rebuild_tensor call: a view of a storage. */
typedef struct pt_tensor {
    const char *dir;            /* the storages' folder: "data", "constants" */
    const char *dtype;          /* numpy name */
    const char *storage_type;   /* "FloatStorage", "UntypedStorage" */
    char *key;                  /* storage key (DIR/KEY) */
    uint64_t numel;             /* as the persistent id says */
    uint64_t offset;            /* storage_offset, elements */
    uint64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
    size_t ndim;
    uint64_t at;                /* file offset of the REDUCE, for messages */
} pt_tensor;

/* A TorchScript object (a module, a custom class): a dict of its
 * attributes, value `value` of the pickle, of class classes[cls]. */
typedef struct pt_module {
    uint32_t value;
    uint32_t cls;
} pt_module;

typedef struct pt_rebuild {
    pt_tensor *t;
    size_t n, cap;
    const char *pkl;            /* the pickle's member, for messages */
    const char *dir;            /* its storages' folder */
    bool torchscript;           /* __torch__ classes and torch.jit._pickle accepted */
    char **classes;             /* TorchScript class names met, once each */
    size_t nclasses, ccap;
    mfs_table class_index;
    pt_module *mods;            /* of the pickle run last, by value, rising
                                   (made in pickle order) */
    size_t nmods, mcap;
} pt_rebuild;

/* The hooks that give pickle.c torch's globals; ctx is a pt_rebuild. */
extern const pk_hooks pt_hooks_template;
void pt_rebuild_free(pt_rebuild *rb);
/* Whether s[0..len) (a pickle's name, not NUL-terminated) is `lit`. */
static inline bool pt_is(const char *s, size_t len, const char *lit)
{
    return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* "torch._utils._rebuild_tensor_v2" for a symbol, for metadata. */
const char *pt_sym_name(int sym);

/* TorchScript (torchscript.c): a __torch__.* class or a torch.jit._pickle
 * helper as a symbol (>= 0), -1 with e when refused, -2 when the name is
 * none of these. */
#define PT_TS_NOT_OURS (-2)
int pt_ts_global(pt_rebuild *rb, const char *mod, size_t mlen, const char *name, size_t nlen,
                 uint64_t at, mfs_err *e);
/* Whether sym is one of pt_ts_global's; then pt_ts_call makes its value. */
bool pt_ts_sym(int sym);
uint32_t pt_ts_call(pt_rebuild *rb, pk_machine *pm, int sym, uint32_t args, uint64_t at,
                    mfs_err *e);
/* BUILD of a TorchScript object: its state (a dict of attributes, or the
 * value of a custom class's __getstate__ at "__getstate__") joins its dict. */
int pt_ts_build(void *ctx, pk_machine *pm, uint32_t obj, uint32_t state, uint64_t at, mfs_err *e);
/* The class of value v when it is a TorchScript object, else NULL. */
const char *pt_ts_class_of(const pt_rebuild *rb, uint32_t v);
/* A symbol's class name, or NULL when it is not a class. */
const char *pt_ts_sym_name(const pt_rebuild *rb, int sym);

/* A tensor at a name: entries in pickle order. */
typedef struct pt_entry {
    char *name;
    size_t name_len;
    size_t tensor;              /* index into pt_rebuild.t */
    long first;                 /* the entry of the same tensor object met first, or -1 */
} pt_entry;

typedef struct pt_walk {
    pt_entry *e;
    size_t n, cap;
    mfs_val *metadata;          /* object: non-tensor leaves at their joined keys */
    mfs_val *modules;           /* object: a TorchScript object's path -> its class */
} pt_walk;

/* Names every tensor under `root` (dict keys joined with '.') and puts the
 * other leaves in w->metadata. Bounded: nesting depth, values visited
 * (shared references count at every visit) and the memory of metadata
 * (budget). -1 with e when a bound is passed. */
int pt_walk_run(pt_walk *w, const pk_machine *pm, const pt_rebuild *rb, uint32_t root,
                mfs_budget *budget, mfs_err *e);
/* Then a TorchScript archive's constants.pkl (a tuple): item i at
 * "CONSTANTS.c<i>", the name its code/ gives it. */
int pt_walk_constants(pt_walk *w, const pk_machine *pm, const pt_rebuild *rb, uint32_t root,
                      mfs_budget *budget, mfs_err *e);
void pt_walk_free(pt_walk *w);

/* A view whose bytes are made on open (torch_strided.c): gathered in C
 * order from a storage that is in place (stored member) or decoded. */
typedef struct pt_view {
    bool inplace;               /* a stored storage: read from the source */
    mfs_src *src;               /* then: its elements from `first` (the view's
                                   lowest) on are bytes [in_off, in_off +
                                   in_len) of the source, got on open */
    uint64_t first, in_off, in_len;
    const void *zip;            /* else: the mfs_zip and entry to decode */
    const void *entry;
    uint64_t storage_len;       /* bytes of the storage */
    uint64_t esize, offset;     /* element size; storage_offset in elements */
    uint64_t nbytes;            /* of the view, in C order */
    size_t ndim;
    uint64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
} pt_view;

extern const mfs_produce_ops pt_view_ops;

/* Writes the view into out (v->nbytes bytes) from `storage`, which holds
 * the storage's elements from element `first` on; false when `job` was
 * cancelled. Every element read lies in storage_len (checked at mount)
 * and none before `first`; the work is one pass over the output. */
bool pt_gather(const pt_view *v, const uint8_t *storage, uint64_t first, uint8_t *out,
               const mfs_job *job);

#endif
