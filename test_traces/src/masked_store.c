/* A masked store (AVX2 vpmaskmovd) writes lanes 0-3 of watched[] over main's own writes: which bytes of its
 * 32-byte area it wrote, only its mask says.  The last write of watched[0] is the masked store's, not main's. */
#include <immintrin.h>

int watched[8];

__attribute__((noinline, target("avx2"))) void fill(int *p, int lanes)
{
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_epi32(p, mask, _mm256_set1_epi32(7));
}

int main(int argc, char **argv)
{
    (void)argv;
    watched[0] = 1;
    watched[5] = 2;
    fill(watched, argc + 3);
    return watched[0] - 7 + watched[5] - 2;
}
