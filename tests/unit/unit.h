/* A minimal check harness for the C unit tests: CHECK counts, and
 * unit_finish prints "NAME: N passed, M failed" and gives the exit code. */
#ifndef MFS_UNIT_H
#define MFS_UNIT_H

#include <stdio.h>

static int unit_passed, unit_failed;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (cond) {                                                          \
            unit_passed++;                                                   \
        } else {                                                             \
            unit_failed++;                                                   \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                    \
    } while (0)

static inline int unit_finish(const char *name)
{
    printf("%s: %d passed, %d failed\n", name, unit_passed, unit_failed);
    return unit_failed ? 1 : 0;
}

#endif
