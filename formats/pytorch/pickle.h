/* A pickle reader that never executes anything (formats/pytorch/pickle.c).
 *
 * It runs Python's pickle stack machine (protocols 0-5, the opcodes of
 * Lib/pickletools.py that build plain data) over a bounded value model:
 * None, bools, ints (LONG1/LONG4 kept as their bytes past 64 bits), floats,
 * strings and bytes (borrowed from the pickle, never copied), tuples,
 * lists, dicts, sets (as lists), globals as symbols, persistent ids and
 * opaque objects. A GLOBAL (or STACK_GLOBAL, INST) is never looked up: the
 * caller's `global` hook maps the name to a symbol or refuses it, and
 * REDUCE / NEWOBJ / INST / OBJ of a symbol go to its `call` hook, which
 * builds a value of the model (never code); BUILD goes to the optional
 * `build` hook (TorchScript's objects take their attributes from it). Memo size, stack depth, MARK
 * nesting and the number of values are all bounded by the pickle's length
 * and by fixed caps, so a small pickle cannot take much memory or time. */
#ifndef MFS_PICKLE_H
#define MFS_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "span.h"

typedef enum pk_kind {
    PK_NONE,
    PK_BOOL,
    PK_INT,        /* fits int64 */
    PK_BIGINT,     /* LONG1/LONG4 wider than 64 bits: u.s is its two's complement, little-endian */
    PK_FLOAT,
    PK_STR,        /* UTF-8 as stored (not checked here) */
    PK_BYTES,
    PK_TUPLE,
    PK_LIST,       /* also sets and frozensets */
    PK_DICT,       /* items: key, value, key, value, ... in insertion order */
    PK_GLOBAL,     /* u.sym: the caller's symbol */
    PK_PERSID,     /* u.ref: the persistent id value */
    PK_OBJ,        /* u.obj: made by the caller's call hook */
} pk_kind;

#define PK_NIL UINT32_MAX   /* no value */

typedef struct pk_val {
    uint8_t kind;
    uint32_t n, cap;        /* containers: items used / allocated */
    uint64_t at;            /* absolute file offset of the opcode that made it */
    union {
        bool b;
        int64_t i;
        double f;
        struct { const uint8_t *p; uint64_t len; } s;   /* STR, BYTES, BIGINT */
        uint32_t *items;    /* TUPLE, LIST, DICT */
        int sym;            /* GLOBAL */
        uint32_t ref;       /* PERSID */
        struct { int tag; uint32_t id; } obj;           /* OBJ: the caller's */
    } u;
} pk_val;

typedef struct pk_machine pk_machine;

typedef struct pk_hooks {
    void *ctx;
    /* module.name -> a symbol >= 0, or -1 with e filled (the global named). */
    int (*global)(void *ctx, const char *module, size_t mlen, const char *name, size_t nlen,
                  uint64_t at, mfs_err *e);
    /* sym(*args): a new value (pk_new...), or PK_NIL with e filled. */
    uint32_t (*call)(void *ctx, pk_machine *pm, int sym, uint32_t args, uint64_t at, mfs_err *e);
    /* BUILD: obj.__setstate__(state). 1 when taken, 0 to leave it to the
     * default (a dict's or a tensor's state is kept out; anything else is
     * refused), -1 with e filled. NULL: always the default. */
    int (*build)(void *ctx, pk_machine *pm, uint32_t obj, uint32_t state, uint64_t at, mfs_err *e);
    const char *name;   /* the pickle's member, for messages; NULL: "data.pkl" */
} pk_hooks;

struct pk_machine {
    pk_val *v;              /* every value made; an index is a value's identity */
    uint32_t n, cap;
    uint32_t max_values;
    uint64_t items, max_items;  /* container items made, and their cap */
    uint32_t root;          /* what STOP returned */
};

/* Runs the pickle in `s` (s.base: its absolute offset in the model file,
 * for messages). 0 with pm->root set, or -1 with e (MFS_E_CORRUPT, the
 * offset of the opcode and the problem). Free with pk_free either way. */
int pk_run(pk_machine *pm, mfs_span s, const pk_hooks *h, mfs_err *e);
void pk_free(pk_machine *pm);

/* A new value of `kind` made at `at`; PK_NIL when the value cap is hit. */
uint32_t pk_new(pk_machine *pm, pk_kind kind, uint64_t at);

/* Appends an item to container `c`; false when the item cap is hit (one
 * value can be copied into many containers by a call hook, so items are
 * bounded apart from values). */
bool pk_add(pk_machine *pm, uint32_t c, uint32_t item);

static inline const pk_val *pk_get(const pk_machine *pm, uint32_t i)
{
    return i < pm->n ? &pm->v[i] : NULL;
}

/* The i-th item of a tuple or list, or NULL. */
static inline const pk_val *pk_item(const pk_machine *pm, const pk_val *c, uint32_t i)
{
    return c && (c->kind == PK_TUPLE || c->kind == PK_LIST) && i < c->n ? pk_get(pm, c->u.items[i])
                                                                        : NULL;
}

/* An opcode's name ("BINUNICODE"), for messages. */
const char *pk_opname(uint8_t op);

#endif
