/* formats/base/hash.c: SipHash against the reference vectors of the SipHash paper
 * (2-4, the rounds the paper's vectors use; 1-3 is the same code with
 * other round counts), and mfs_hash's salt and key use. */
#include <stdint.h>
#include <string.h>

#include "hash.h"
#include "unit.h"

int main(void)
{
    uint8_t key[16], msg[64];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    /* Appendix A of the paper: key 00..0f, message 00..0e. */
    CHECK(mfs_siphash(key, 2, 4, msg, 15) == 0xa129ca6149be45e5ull);
    /* The reference implementation's vectors.h: messages 00..(n-1). */
    CHECK(mfs_siphash(key, 2, 4, msg, 0) == 0x726fdb47dd0e0e31ull);
    CHECK(mfs_siphash(key, 2, 4, msg, 1) == 0x74f839c593dc67fdull);
    CHECK(mfs_siphash(key, 2, 4, msg, 8) == 0x93f5f5799a932462ull);
    CHECK(mfs_siphash(key, 2, 4, msg, 63) == 0x958a324ceb064572ull);
    /* Fewer rounds, another function. */
    CHECK(mfs_siphash(key, 1, 3, msg, 15) != mfs_siphash(key, 2, 4, msg, 15));

    /* mfs_hash: stable within the process; the salt and every byte count. */
    uint64_t h = mfs_hash(7, "tensor", 6);
    CHECK(h == mfs_hash(7, "tensor", 6));
    CHECK(h != mfs_hash(8, "tensor", 6));
    CHECK(h != mfs_hash(7, "tensos", 6));
    CHECK(h != mfs_hash(7, "tensor", 5));
    CHECK(mfs_hash(0, "", 0) != mfs_hash(0, "\0", 1));
    /* The process's key is secret: equal to no fixed key such as zero. */
    uint8_t zero[16] = { 0 };
    uint8_t salted[14] = { 7, 0, 0, 0, 0, 0, 0, 0, 't', 'e', 'n', 's', 'o', 'r' };
    CHECK(h != mfs_siphash(zero, 1, 3, salted, sizeof salted));
    return unit_finish("hash");
}
