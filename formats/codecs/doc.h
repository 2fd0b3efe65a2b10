/* A JSON-like document value: what model.json, model.toml and graph.json are
 * generated from, and what the TOML parser produces. Object keys keep their
 * insertion order, so the same loader calls always give the same bytes. */
#ifndef MFS_DOC_H
#define MFS_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mfs_vtype {
    MFS_V_NULL,
    MFS_V_BOOL,
    MFS_V_INT,
    MFS_V_FLOAT,
    MFS_V_STR,
    MFS_V_DATETIME,   /* TOML date/time; `dt` says which kind, `s` holds the text */
    MFS_V_ARR,
    MFS_V_OBJ,
    MFS_V_UINT,       /* an integer above INT64_MAX (mfs_uint): exact in JSON, a string in TOML */
} mfs_vtype;

typedef enum mfs_dtkind {
    MFS_DT_OFFSET,    /* 1979-05-27T07:32:00Z */
    MFS_DT_LOCAL,     /* 1979-05-27T07:32:00 */
    MFS_DT_DATE,      /* 1979-05-27 */
    MFS_DT_TIME,      /* 07:32:00 */
} mfs_dtkind;

typedef struct mfs_val mfs_val;

struct mfs_val {
    mfs_vtype type;
    mfs_dtkind dt;
    union {
        bool b;
        int64_t i;
        uint64_t u;                                         /* UINT */
        double f;
        struct { char *p; size_t len; } s;                 /* STR, DATETIME: any bytes */
        struct { mfs_val **items; size_t n, cap; } arr;
        struct { char **keys; size_t *klens; mfs_val **vals; size_t n, cap; } obj;
    } u;
};

/* Memory that documents built from untrusted bytes may still take (the
 * TOML parser's values, a driver's generated files): a file small enough to
 * look harmless must not make the mount build gigabytes. Charges are
 * estimates of heap bytes; `exceeded` stays set once a charge did not fit. */
typedef struct mfs_budget {
    uint64_t left;
    bool exceeded;
} mfs_budget;

/* Takes `bytes` from `b`; false (and b->exceeded) when they are not there.
 * A NULL budget is unlimited. */
bool mfs_budget_take(mfs_budget *b, uint64_t bytes);

/* Roughly what one value costs on the heap: the value, its allocator
 * overhead and its slot in an array or object. */
#define MFS_VAL_COST 96u

mfs_val *mfs_null(void);
mfs_val *mfs_bool(bool b);
mfs_val *mfs_int(int64_t i);
mfs_val *mfs_float(double f);
/* Document integers are int64: a u64 above INT64_MAX (e.g. half of all
 * 64-bit hashes used as ids) becomes its decimal string, never a changed
 * number. */
mfs_val *mfs_u64(uint64_t u);
/* An unsigned 64-bit integer kept exact (GGUF's uint64 metadata): an INT
 * when it fits, else a UINT, which JSON writes as a number and TOML (whose
 * integers are signed 64-bit) as its decimal string. */
mfs_val *mfs_uint(uint64_t u);
mfs_val *mfs_str(const char *s);                 /* NUL-terminated */
mfs_val *mfs_strn(const void *s, size_t len);    /* any bytes */
mfs_val *mfs_datetime(mfs_dtkind kind, const char *s, size_t len);
mfs_val *mfs_arr(void);
mfs_val *mfs_obj(void);

/* Appends `v` (taking ownership) and returns it. */
/* Room for `n` items or keys in all (fewer reallocations for a value
 * whose size is known ahead: a tensor table entry). */
void mfs_arr_reserve(mfs_val *arr, size_t n);
void mfs_obj_reserve(mfs_val *obj, size_t n);
mfs_val *mfs_arr_push(mfs_val *arr, mfs_val *v);
/* Appends key -> v (taking ownership; keys are not checked for duplicates:
 * callers that need uniqueness look up first) and returns v. */
mfs_val *mfs_obj_set(mfs_val *obj, const char *key, mfs_val *v);
/* Takes the last key's value out of `obj` (the caller owns it) and
 * removes the key; NULL when there is none. */
mfs_val *mfs_obj_pop(mfs_val *obj);
/* Takes the last item out of `arr` (the caller owns it); NULL when empty. */
mfs_val *mfs_arr_pop(mfs_val *arr);
mfs_val *mfs_obj_setn(mfs_val *obj, const char *key, size_t klen, mfs_val *v);
/* The value under `key`, or NULL. */
mfs_val *mfs_obj_get(const mfs_val *obj, const char *key);
mfs_val *mfs_obj_getn(const mfs_val *obj, const char *key, size_t klen);

/* Deep copy. */
mfs_val *mfs_val_clone(const mfs_val *v);
/* Deep equality (object key order matters not; floats compare bitwise
 * except that NaN equals NaN). */
bool mfs_val_equal(const mfs_val *a, const mfs_val *b);
void mfs_val_free(mfs_val *v);

/* An array of at most `max` non-negative integers (a shape, an axis
 * order) into out[0..*n); false when `a` is not one. */
bool mfs_val_uint_list(const mfs_val *a, uint64_t *out, size_t max, size_t *n);

#endif
