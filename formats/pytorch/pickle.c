/* The pickle stack machine (see pickle.h). Opcode names and argument
 * encodings follow Lib/pickletools.py; only data is built, and every
 * GLOBAL goes through the caller's hook, so nothing a pickle names is ever
 * imported or called. */
#include "pickle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* Caps on top of "at most one value per byte of pickle". */
#define PK_MAX_VALUES (1u << 23)   /* ~ 8M values: about 400 MB of model at most */
#define PK_MAX_STACK (1u << 20)
#define PK_MAX_MARKS 1000u         /* MARK nesting (Python's own recursion limit) */
#define PK_MAX_MEMO (1u << 23)
#define PK_MAX_LINE 4096u          /* text arguments (GLOBAL names, INT, FLOAT) */

typedef struct run {
    pk_machine *pm;
    mfs_span s;
    uint64_t pos;           /* of the next byte */
    uint64_t op_at;         /* absolute offset of the current opcode */
    uint8_t op;
    const pk_hooks *h;
    mfs_err *e;
    uint32_t *stack;
    uint32_t sn, scap;
    uint32_t marks[PK_MAX_MARKS];
    uint32_t mn;
    uint32_t *memo;         /* PK_NIL where unset */
    uint32_t memo_cap;      /* allocated */
    uint32_t memo_limit;    /* indexes must be below this */
    uint32_t memo_count;    /* entries set: MEMOIZE's next index */
} run;

static const char *pkl_name(const run *r)
{
    return r->h->name ? r->h->name : "data.pkl";
}

static int fail(run *r, const char *fmt, const char *arg)
{
    char what[300];
    snprintf(what, sizeof what, fmt, arg);
    return mfs_fail(r->e, MFS_E_CORRUPT, (int64_t)r->op_at, "%s: %s %s", pkl_name(r),
                    pk_opname(r->op), what);
}

uint32_t pk_new(pk_machine *pm, pk_kind kind, uint64_t at)
{
    if (pm->n >= pm->max_values)
        return PK_NIL;
    if (pm->n == pm->cap) {
        pm->cap = pm->cap ? pm->cap * 2 : 256;
        pm->v = mfs_xreallocarray(pm->v, pm->cap, sizeof *pm->v);
    }
    pk_val *v = &pm->v[pm->n];
    memset(v, 0, sizeof *v);
    v->kind = (uint8_t)kind;
    v->at = at;
    return pm->n++;
}

static uint32_t make(run *r, pk_kind kind)
{
    uint32_t i = pk_new(r->pm, kind, r->op_at);
    if (i == PK_NIL)
        fail(r, "makes more than %s values", "the cap of 8388608");
    return i;
}

bool pk_add(pk_machine *pm, uint32_t c, uint32_t item)
{
    if (pm->items >= pm->max_items)
        return false;
    pk_val *v = &pm->v[c];
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4;
        v->u.items = mfs_xreallocarray(v->u.items, v->cap, sizeof *v->u.items);
    }
    v->u.items[v->n++] = item;
    pm->items++;
    return true;
}

static int container_add(run *r, uint32_t c, uint32_t item)
{
    return pk_add(r->pm, c, item) ? 0 : fail(r, "makes more container items than %s", "2 per byte of the pickle");
}

/* ---- reading the stream ------------------------------------------------ */

static bool take(run *r, uint64_t n, const uint8_t **p)
{
    if (!mfs_span_has(r->s, r->pos, n))
        return false;
    *p = r->s.p + r->pos;
    r->pos += n;
    return true;
}

static bool uint_le(run *r, unsigned n, uint64_t *out)
{
    const uint8_t *p;
    if (!take(r, n, &p))
        return false;
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = (v << 8) | p[i];
    *out = v;
    return true;
}

/* A text argument ending in '\n' (not included). */
static bool line(run *r, const uint8_t **p, size_t *len)
{
    uint64_t left = r->s.len - r->pos;
    uint64_t max = left < PK_MAX_LINE ? left : PK_MAX_LINE;
    const uint8_t *start = r->s.p + r->pos;
    const uint8_t *nl = memchr(start, '\n', (size_t)max);
    if (nl == NULL)
        return false;
    *p = start;
    *len = (size_t)(nl - start);
    r->pos += *len + 1;
    return true;
}

/* PUT and GET's text argument: a memo index of 1 to 12 decimal digits. */
static bool line_index(run *r, uint64_t *n)
{
    const uint8_t *p;
    size_t len;
    if (!line(r, &p, &len) || len == 0 || len > 12)
        return false;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        *n = *n * 10 + (uint64_t)(p[i] - '0');
    }
    return true;
}

/* ---- the stack ------------------------------------------------------------ */

static int push(run *r, uint32_t v)
{
    if (v == PK_NIL)
        return -1;
    if (r->sn == r->scap) {
        if (r->scap >= PK_MAX_STACK)
            return fail(r, "makes the stack deeper than %s values", "1048576");
        r->scap = r->scap ? r->scap * 2 : 64;
        r->stack = mfs_xreallocarray(r->stack, r->scap, sizeof *r->stack);
    }
    r->stack[r->sn++] = v;
    return 0;
}

/* The bottom of the current MARK's items (0 with no mark). */
static uint32_t floor_of(const run *r)
{
    return r->mn ? r->marks[r->mn - 1] : 0;
}

static bool pop(run *r, uint32_t *v)
{
    if (r->sn <= floor_of(r))
        return fail(r, "%s", "with nothing on the stack above the mark") && false;
    *v = r->stack[--r->sn];
    return true;
}

static bool top(run *r, uint32_t *v)
{
    if (r->sn <= floor_of(r))
        return fail(r, "%s", "with nothing on the stack above the mark") && false;
    *v = r->stack[r->sn - 1];
    return true;
}

/* Ends the current MARK: its items are stack[*from .. r->sn). */
static bool pop_mark(run *r, uint32_t *from)
{
    if (r->mn == 0)
        return fail(r, "%s", "without a MARK") && false;
    *from = r->marks[--r->mn];
    return true;
}

static const pk_val *val(const run *r, uint32_t i)
{
    return &r->pm->v[i];
}

/* A tuple of stack[from .. sn), which are dropped. */
static int tuple_from(run *r, uint32_t from)
{
    uint32_t t = make(r, PK_TUPLE);
    if (t == PK_NIL)
        return -1;
    for (uint32_t i = from; i < r->sn; i++)
        if (container_add(r, t, r->stack[i]) != 0)
            return -1;
    r->sn = from;
    return push(r, t);
}

static int tuple_n(run *r, uint32_t n)
{
    if (r->sn - floor_of(r) < n)
        return fail(r, "%s", "with too few items on the stack");
    return tuple_from(r, r->sn - n);
}

/* Appends stack[from .. sn) to the list (or set) below them. */
static int appends(run *r, uint32_t from)
{
    if (from == 0 || from - 1 < floor_of(r))
        return fail(r, "%s", "with no list below its items");
    uint32_t list = r->stack[from - 1];
    if (val(r, list)->kind != PK_LIST)
        return fail(r, "%s", "on something that is not a list or a set");
    for (uint32_t i = from; i < r->sn; i++)
        if (container_add(r, list, r->stack[i]) != 0)
            return -1;
    r->sn = from;
    return 0;
}

static int setitems(run *r, uint32_t from)
{
    if (from == 0 || from - 1 < floor_of(r) || (r->sn - from) % 2 != 0)
        return fail(r, "%s", "with no dict below its items, or a key without a value");
    uint32_t dict = r->stack[from - 1];
    if (val(r, dict)->kind != PK_DICT)
        return fail(r, "%s", "on something that is not a dict");
    for (uint32_t i = from; i < r->sn; i++)
        if (container_add(r, dict, r->stack[i]) != 0)
            return -1;
    r->sn = from;
    return 0;
}

static int memo_put(run *r, uint64_t idx)
{
    if (r->sn <= floor_of(r))
        return fail(r, "%s", "with nothing on the stack to remember");
    if (idx >= r->memo_limit) {
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)idx);
        return fail(r, "index %s is more than this pickle could have written", n);
    }
    if (idx >= r->memo_cap) {
        uint32_t cap = r->memo_cap ? r->memo_cap : 64;
        while (cap <= idx)
            cap *= 2;
        if (cap > r->memo_limit)
            cap = r->memo_limit;
        r->memo = mfs_xreallocarray(r->memo, cap, sizeof *r->memo);
        for (uint32_t i = r->memo_cap; i < cap; i++)
            r->memo[i] = PK_NIL;
        r->memo_cap = cap;
    }
    if (r->memo[idx] == PK_NIL)
        r->memo_count++;
    r->memo[idx] = r->stack[r->sn - 1];
    return 0;
}

static int memo_get(run *r, uint64_t idx)
{
    if (idx >= r->memo_cap || r->memo[idx] == PK_NIL) {
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)idx);
        return fail(r, "of memo index %s, which was never set", n);
    }
    return push(r, r->memo[idx]);
}

/* ---- scalars ------------------------------------------------------------- */

static int push_int(run *r, int64_t i)
{
    uint32_t v = make(r, PK_INT);
    if (v == PK_NIL)
        return -1;
    r->pm->v[v].u.i = i;
    return push(r, v);
}

static int push_span(run *r, pk_kind kind, uint64_t len)
{
    const uint8_t *p;
    if (!take(r, len, &p)) {
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)len);
        return fail(r, "of %s bytes runs past the end of the pickle", n);
    }
    uint32_t v = make(r, kind);
    if (v == PK_NIL)
        return -1;
    r->pm->v[v].u.s.p = p;
    r->pm->v[v].u.s.len = len;
    return push(r, v);
}

/* LONG1 / LONG4: little-endian two's complement of `len` bytes. */
static int push_long(run *r, uint64_t len)
{
    if (len <= 8) {
        const uint8_t *p;
        if (!take(r, len, &p))
            return fail(r, "%s", "runs past the end of the pickle");
        uint64_t u = 0;
        for (uint64_t i = len; i-- > 0;)
            u = (u << 8) | p[i];
        if (len > 0 && len < 8 && (p[len - 1] & 0x80))
            u |= ~0ull << (8 * len);  /* sign-extend */
        return push_int(r, (int64_t)u);
    }
    return push_span(r, PK_BIGINT, len);
}

/* INT / LONG as text: decimal, "01"/"00" are True/False (protocol 0). */
static int push_text_int(run *r, bool is_long)
{
    const uint8_t *p;
    size_t len;
    if (!line(r, &p, &len))
        return fail(r, "%s", "argument is not a line");
    char buf[32];
    if (is_long && len > 0 && p[len - 1] == 'L')
        len--;
    if (len == 0 || len >= sizeof buf)
        return fail(r, "%s", "argument is not an integer that fits 64 bits");
    memcpy(buf, p, len);
    buf[len] = '\0';
    if (!is_long && (strcmp(buf, "00") == 0 || strcmp(buf, "01") == 0)) {
        uint32_t v = make(r, PK_BOOL);
        if (v == PK_NIL)
            return -1;
        r->pm->v[v].u.b = buf[1] == '1';
        return push(r, v);
    }
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (*end != '\0' || end == buf || errno == ERANGE)
        return fail(r, "%s", "argument is not an integer that fits 64 bits");
    return push_int(r, x);
}

static int push_float(run *r, double f)
{
    uint32_t v = make(r, PK_FLOAT);
    if (v == PK_NIL)
        return -1;
    r->pm->v[v].u.f = f;
    return push(r, v);
}

static int push_text_float(run *r)
{
    const uint8_t *p;
    size_t len;
    char buf[64];
    if (!line(r, &p, &len) || len == 0 || len >= sizeof buf)
        return fail(r, "%s", "argument is not a number");
    memcpy(buf, p, len);
    buf[len] = '\0';
    char *end;
    double f = strtod(buf, &end);
    if (*end != '\0')
        return fail(r, "%s", "argument is not a number");
    return push_float(r, f);
}

/* ---- globals and calls -------------------------------------------------- */

static int push_global(run *r, const uint8_t *mod, size_t mlen, const uint8_t *name, size_t nlen)
{
    int sym = r->h->global(r->h->ctx, (const char *)mod, mlen, (const char *)name, nlen, r->op_at,
                           r->e);
    if (sym < 0)
        return -1;
    uint32_t v = make(r, PK_GLOBAL);
    if (v == PK_NIL)
        return -1;
    r->pm->v[v].u.sym = sym;
    return push(r, v);
}

static int global_lines(run *r)
{
    const uint8_t *mod, *name;
    size_t mlen, nlen;
    if (!line(r, &mod, &mlen) || !line(r, &name, &nlen))
        return fail(r, "%s", "arguments are not two lines");
    return push_global(r, mod, mlen, name, nlen);
}

/* func(*args) for a symbol: the caller's hook builds the value. */
static int call(run *r, uint32_t func, uint32_t args)
{
    if (val(r, func)->kind != PK_GLOBAL)
        return fail(r, "%s", "calls something that is not a global");
    if (val(r, args)->kind != PK_TUPLE)
        return fail(r, "%s", "arguments are not a tuple");
    uint32_t v = r->h->call(r->h->ctx, r->pm, val(r, func)->u.sym, args, r->op_at, r->e);
    if (v == PK_NIL) {
        if (r->e->code == MFS_OK)
            fail(r, "makes more than %s values", "the cap of 8388608");
        return -1;
    }
    return push(r, v);
}

/* ---- the loop ------------------------------------------------------------ */

static int step(run *r, bool *done)
{
    const uint8_t *p;
    size_t len;
    uint64_t n;
    uint32_t a, b, from;
    r->op_at = r->s.base + r->pos;
    if (!take(r, 1, &p))
        return mfs_fail(r->e, MFS_E_CORRUPT, (int64_t)r->op_at, "%s ends without STOP", pkl_name(r));
    r->op = *p;
    switch (r->op) {
    case 0x80: /* PROTO */
        return uint_le(r, 1, &n) && n <= 5 ? 0 : fail(r, "%s", "of an unknown protocol");
    case 0x95: /* FRAME: a length hint only */
        return uint_le(r, 8, &n) ? 0 : fail(r, "%s", "runs past the end");
    case '.': /* STOP */
        if (!pop(r, &a))
            return -1;
        r->pm->root = a;
        *done = true;
        return 0;
    case '(': /* MARK */
        if (r->mn == PK_MAX_MARKS)
            return fail(r, "%s", "nests deeper than 1000 marks");
        r->marks[r->mn++] = r->sn;
        return 0;
    case '0': /* POP: a value, or the mark itself when nothing is above it */
        if (r->mn && r->sn == floor_of(r)) {
            r->mn--;
            return 0;
        }
        return pop(r, &a) ? 0 : -1;
    case '1': /* POP_MARK */
        if (!pop_mark(r, &from))
            return -1;
        r->sn = from;
        return 0;
    case '2': /* DUP */
        return top(r, &a) ? push(r, a) : -1;
    case 'N':
        return push(r, make(r, PK_NONE));
    case 0x88: /* NEWTRUE */
    case 0x89: /* NEWFALSE */
        a = make(r, PK_BOOL);
        if (a == PK_NIL)
            return -1;
        r->pm->v[a].u.b = r->op == 0x88;
        return push(r, a);
    case 'I':
        return push_text_int(r, false);
    case 'L':
        return push_text_int(r, true);
    case 'J': /* BININT */
        return uint_le(r, 4, &n) ? push_int(r, (int32_t)(uint32_t)n) : fail(r, "%s", "runs past the end");
    case 'K': /* BININT1 */
        return uint_le(r, 1, &n) ? push_int(r, (int64_t)n) : fail(r, "%s", "runs past the end");
    case 'M': /* BININT2 */
        return uint_le(r, 2, &n) ? push_int(r, (int64_t)n) : fail(r, "%s", "runs past the end");
    case 0x8a: /* LONG1 */
        return uint_le(r, 1, &n) ? push_long(r, n) : fail(r, "%s", "runs past the end");
    case 0x8b: /* LONG4: a signed length */
        if (!uint_le(r, 4, &n))
            return fail(r, "%s", "runs past the end");
        if ((int32_t)(uint32_t)n < 0)
            return fail(r, "%s", "has a negative length");
        return push_long(r, n);
    case 'F':
        return push_text_float(r);
    case 'G': { /* BINFLOAT: big-endian double */
        if (!take(r, 8, &p))
            return fail(r, "%s", "runs past the end");
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = (u << 8) | p[i];
        double f;
        memcpy(&f, &u, sizeof f);
        return push_float(r, f);
    }
    case 'X': /* BINUNICODE */
        return uint_le(r, 4, &n) ? push_span(r, PK_STR, n) : fail(r, "%s", "runs past the end");
    case 0x8c: /* SHORT_BINUNICODE */
        return uint_le(r, 1, &n) ? push_span(r, PK_STR, n) : fail(r, "%s", "runs past the end");
    case 0x8d: /* BINUNICODE8 */
        return uint_le(r, 8, &n) ? push_span(r, PK_STR, n) : fail(r, "%s", "runs past the end");
    case 'T': /* BINSTRING: a signed length; Python 2 str, taken as text */
        if (!uint_le(r, 4, &n))
            return fail(r, "%s", "runs past the end");
        if ((int32_t)(uint32_t)n < 0)
            return fail(r, "%s", "has a negative length");
        return push_span(r, PK_STR, n);
    case 'U': /* SHORT_BINSTRING */
        return uint_le(r, 1, &n) ? push_span(r, PK_STR, n) : fail(r, "%s", "runs past the end");
    case 'B': /* BINBYTES */
        return uint_le(r, 4, &n) ? push_span(r, PK_BYTES, n) : fail(r, "%s", "runs past the end");
    case 'C': /* SHORT_BINBYTES */
        return uint_le(r, 1, &n) ? push_span(r, PK_BYTES, n) : fail(r, "%s", "runs past the end");
    case 0x8e: /* BINBYTES8 */
    case 0x96: /* BYTEARRAY8 */
        return uint_le(r, 8, &n) ? push_span(r, PK_BYTES, n) : fail(r, "%s", "runs past the end");
    case ')': /* EMPTY_TUPLE */
        return push(r, make(r, PK_TUPLE));
    case 't': /* TUPLE */
        return pop_mark(r, &from) ? tuple_from(r, from) : -1;
    case 0x85: /* TUPLE1 */
    case 0x86:
    case 0x87:
        return tuple_n(r, (uint32_t)(r->op - 0x84));
    case ']': /* EMPTY_LIST */
    case 0x8f: /* EMPTY_SET */
        return push(r, make(r, PK_LIST));
    case '}': /* EMPTY_DICT */
        return push(r, make(r, PK_DICT));
    case 'l': /* LIST */
    case 0x91: /* FROZENSET */
    case 'd': { /* DICT */
        if (!pop_mark(r, &from))
            return -1;
        bool dict = r->op == 'd';
        if (dict && (r->sn - from) % 2 != 0)
            return fail(r, "%s", "has a key without a value");
        a = make(r, dict ? PK_DICT : PK_LIST);
        if (a == PK_NIL)
            return -1;
        for (uint32_t i = from; i < r->sn; i++)
            if (container_add(r, a, r->stack[i]) != 0)
                return -1;
        r->sn = from;
        return push(r, a);
    }
    case 'a': /* APPEND */
        if (r->sn - floor_of(r) < 2)
            return fail(r, "%s", "with too few items on the stack");
        return appends(r, r->sn - 1);
    case 'e': /* APPENDS */
    case 0x90: /* ADDITEMS */
        if (!pop_mark(r, &from))
            return -1;
        if (from == 0 || from - 1 < floor_of(r))
            return fail(r, "%s", "with no list below its mark");
        return appends(r, from);
    case 's': /* SETITEM */
        if (r->sn - floor_of(r) < 3)
            return fail(r, "%s", "with too few items on the stack");
        return setitems(r, r->sn - 2);
    case 'u': /* SETITEMS */
        if (!pop_mark(r, &from))
            return -1;
        if (from == 0 || from - 1 < floor_of(r))
            return fail(r, "%s", "with no dict below its mark");
        return setitems(r, from);
    case 'p': /* PUT */
        return line_index(r, &n) ? memo_put(r, n) : fail(r, "%s", "argument is not an index");
    case 'q': /* BINPUT */
        return uint_le(r, 1, &n) ? memo_put(r, n) : fail(r, "%s", "runs past the end");
    case 'r': /* LONG_BINPUT */
        return uint_le(r, 4, &n) ? memo_put(r, n) : fail(r, "%s", "runs past the end");
    case 0x94: /* MEMOIZE: the index is the memo's size */
        return memo_put(r, r->memo_count);
    case 'g': /* GET */
        return line_index(r, &n) ? memo_get(r, n) : fail(r, "%s", "argument is not an index");
    case 'h': /* BINGET */
        return uint_le(r, 1, &n) ? memo_get(r, n) : fail(r, "%s", "runs past the end");
    case 'j': /* LONG_BINGET */
        return uint_le(r, 4, &n) ? memo_get(r, n) : fail(r, "%s", "runs past the end");
    case 'c': /* GLOBAL */
        return global_lines(r);
    case 0x93: { /* STACK_GLOBAL: module and name are strings on the stack */
        if (!pop(r, &b) || !pop(r, &a))
            return -1;
        const pk_val *m = val(r, a), *nm = val(r, b);
        if (m->kind != PK_STR || nm->kind != PK_STR || m->u.s.len > PK_MAX_LINE ||
            nm->u.s.len > PK_MAX_LINE)
            return fail(r, "%s", "arguments are not two short strings");
        return push_global(r, m->u.s.p, (size_t)m->u.s.len, nm->u.s.p, (size_t)nm->u.s.len);
    }
    case 'R': /* REDUCE */
    case 0x81: /* NEWOBJ: cls.__new__(cls, *args), the same symbol call here */
        if (!pop(r, &b) || !pop(r, &a))
            return -1;
        return call(r, a, b);
    case 0x92: { /* NEWOBJ_EX: keyword arguments must be empty */
        uint32_t kw;
        if (!pop(r, &kw) || !pop(r, &b) || !pop(r, &a))
            return -1;
        if (val(r, kw)->kind != PK_DICT || val(r, kw)->n != 0)
            return fail(r, "%s", "has keyword arguments");
        return call(r, a, b);
    }
    case 'i': { /* INST: module, name, then args from the mark */
        const uint8_t *mod, *name;
        size_t mlen, nlen;
        if (!line(r, &mod, &mlen) || !line(r, &name, &nlen))
            return fail(r, "%s", "arguments are not two lines");
        if (!pop_mark(r, &from))
            return -1;
        if (push_global(r, mod, mlen, name, nlen) != 0)
            return -1;
        uint32_t g = r->stack[--r->sn];
        if (tuple_from(r, from) != 0)
            return -1;
        uint32_t args = r->stack[--r->sn];
        return call(r, g, args);
    }
    case 'o': { /* OBJ: cls and args from the mark */
        if (!pop_mark(r, &from))
            return -1;
        if (r->sn == from)
            return fail(r, "%s", "without a class");
        uint32_t cls = r->stack[from];
        if (tuple_from(r, from + 1) != 0)
            return -1;
        uint32_t args = r->stack[--r->sn];
        r->sn = from;
        return call(r, cls, args);
    }
    case 'b': { /* BUILD: state of a dict or an object (attributes); kept out */
        if (!pop(r, &b) || !top(r, &a))
            return -1;
        int took = r->h->build ? r->h->build(r->h->ctx, r->pm, a, b, r->op_at, r->e) : 0;
        if (took != 0)
            return took < 0 ? -1 : 0;
        if (val(r, a)->kind != PK_DICT && val(r, a)->kind != PK_OBJ)
            return fail(r, "%s", "sets the state of something that is not a dict or a tensor");
        return 0;
    }
    case 'P': { /* PERSID: the id as a line of text */
        if (!line(r, &p, &len))
            return fail(r, "%s", "argument is not a line");
        a = make(r, PK_STR);
        if (a == PK_NIL)
            return -1;
        r->pm->v[a].u.s.p = p;
        r->pm->v[a].u.s.len = len;
        b = make(r, PK_PERSID);
        if (b == PK_NIL)
            return -1;
        r->pm->v[b].u.ref = a;
        return push(r, b);
    }
    case 'Q': /* BINPERSID */
        if (!pop(r, &a))
            return -1;
        b = make(r, PK_PERSID);
        if (b == PK_NIL)
            return -1;
        r->pm->v[b].u.ref = a;
        return push(r, b);
    case 0x82: case 0x83: case 0x84: /* EXT1/2/4: the copyreg registry */
        return fail(r, "%s", "(an extension-registry code) is not supported: it names code to run");
    case 'S': case 'V':
        return fail(r, "%s", "(a protocol 0 quoted string) is not supported");
    case 0x97: case 0x98:
        return fail(r, "%s", "(an out-of-band buffer) is not supported");
    default: {
        char hex[8];
        snprintf(hex, sizeof hex, "0x%02x", r->op);
        return mfs_fail(r->e, MFS_E_CORRUPT, (int64_t)r->op_at, "%s: unknown opcode %s", pkl_name(r),
                        hex);
    }
    }
}

int pk_run(pk_machine *pm, mfs_span s, const pk_hooks *h, mfs_err *e)
{
    memset(pm, 0, sizeof *pm);
    pm->root = PK_NIL;
    /* Every value takes at least one opcode byte. */
    pm->max_values = s.len + 16 < PK_MAX_VALUES ? (uint32_t)s.len + 16 : PK_MAX_VALUES;
    pm->max_items = 2ull * pm->max_values;
    run r = { .pm = pm, .s = s, .h = h, .e = e };
    /* A pickler numbers its memo from 0, one PUT (2+ bytes) per entry. */
    r.memo_limit = s.len < PK_MAX_MEMO ? (uint32_t)s.len : PK_MAX_MEMO;
    bool done = false;
    int rc = 0;
    while (!done && rc == 0)
        rc = step(&r, &done);
    free(r.stack);
    free(r.memo);
    return rc;
}

void pk_free(pk_machine *pm)
{
    for (uint32_t i = 0; i < pm->n; i++) {
        uint8_t k = pm->v[i].kind;
        if (k == PK_TUPLE || k == PK_LIST || k == PK_DICT)
            free(pm->v[i].u.items);
    }
    free(pm->v);
    memset(pm, 0, sizeof *pm);
}

const char *pk_opname(uint8_t op)
{
    static const struct { uint8_t op; const char *name; } names[] = {
        { 0x80, "PROTO" }, { 0x95, "FRAME" }, { '.', "STOP" }, { '(', "MARK" }, { '0', "POP" },
        { '1', "POP_MARK" }, { '2', "DUP" }, { 'N', "NONE" }, { 0x88, "NEWTRUE" },
        { 0x89, "NEWFALSE" }, { 'I', "INT" }, { 'L', "LONG" }, { 'J', "BININT" },
        { 'K', "BININT1" }, { 'M', "BININT2" }, { 0x8a, "LONG1" }, { 0x8b, "LONG4" },
        { 'F', "FLOAT" }, { 'G', "BINFLOAT" }, { 'X', "BINUNICODE" }, { 0x8c, "SHORT_BINUNICODE" },
        { 0x8d, "BINUNICODE8" }, { 'T', "BINSTRING" }, { 'U', "SHORT_BINSTRING" },
        { 'B', "BINBYTES" }, { 'C', "SHORT_BINBYTES" }, { 0x8e, "BINBYTES8" },
        { 0x96, "BYTEARRAY8" }, { ')', "EMPTY_TUPLE" }, { 't', "TUPLE" }, { 0x85, "TUPLE1" },
        { 0x86, "TUPLE2" }, { 0x87, "TUPLE3" }, { ']', "EMPTY_LIST" }, { 0x8f, "EMPTY_SET" },
        { '}', "EMPTY_DICT" }, { 'l', "LIST" }, { 0x91, "FROZENSET" }, { 'd', "DICT" },
        { 'a', "APPEND" }, { 'e', "APPENDS" }, { 0x90, "ADDITEMS" }, { 's', "SETITEM" },
        { 'u', "SETITEMS" }, { 'p', "PUT" }, { 'q', "BINPUT" }, { 'r', "LONG_BINPUT" },
        { 0x94, "MEMOIZE" }, { 'g', "GET" }, { 'h', "BINGET" }, { 'j', "LONG_BINGET" },
        { 'c', "GLOBAL" }, { 0x93, "STACK_GLOBAL" }, { 'R', "REDUCE" }, { 0x81, "NEWOBJ" },
        { 0x92, "NEWOBJ_EX" }, { 'i', "INST" }, { 'o', "OBJ" }, { 'b', "BUILD" },
        { 'P', "PERSID" }, { 'Q', "BINPERSID" }, { 0x82, "EXT1" }, { 0x83, "EXT2" },
        { 0x84, "EXT4" }, { 'S', "STRING" }, { 'V', "UNICODE" }, { 0x97, "NEXT_BUFFER" },
        { 0x98, "READONLY_BUFFER" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].op == op)
            return names[i].name;
    return "opcode";
}
