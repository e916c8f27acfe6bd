/* The `blocked` filter's algorithm as a plain C loop: the speed yardstick for bloomdb's kernels.
 *
 * Same bits as bloomdb's `blocked` family for uint64 keys: XXH3-64 (seed 0) of the key's 8-byte
 * little-endian encoding, RocksDB FastLocalBloom line selection and probes, RocksDB sizing.
 * Batch add and query both hash a group of keys ahead and prefetch their lines (the "prefetch then
 * check" two-phase loop). Build: gcc -O3 -march=native -o blocked_loop blocked_loop.c
 * Usage: blocked_loop N BITS_PER_KEY [filter-out-file]  -> prints ns/key for add, query present,
 * query absent, and the FP rate; with a file, writes the filter's bytes there (for comparison).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* XXH3-64, seed 0, of an 8-byte input (xxHash 0.8 len 4..8 path with len == 8). */
static inline uint64_t xxh3_u64(uint64_t x) {
    uint64_t h = rotl64(x, 32) ^ 0xC73AB174C5ECD5A2ULL;
    h ^= rotl64(h, 49) ^ rotl64(h, 24);
    h *= 0x9FB21C651E98DF25ULL;
    h ^= (h >> 35) + 8;
    h *= 0x9FB21C651E98DF25ULL;
    return h ^ (h >> 28);
}

static int choose_k(int mb) {
    static const int lim[] = {2080, 3580, 5100, 6640, 8300, 10070, 11720, 14001, 16050, 18300, 22001, 25501};
    for (int i = 0; i < 12; i++) if (mb <= lim[i]) return i + 1;
    return mb <= 50000 ? (mb - 1) / 2000 - 1 : 24;
}

#define GROUP 16

static void add_batch(uint32_t *w, uint64_t lines, int k, const uint64_t *keys, size_t n) {
    uint64_t base[GROUP]; uint32_t g[GROUP];
    for (size_t s = 0; s < n; s += GROUP) {
        size_t m = n - s < GROUP ? n - s : GROUP;
        for (size_t j = 0; j < m; j++) {
            uint64_t h = xxh3_u64(keys[s + j]);
            base[j] = (((h & 0xffffffffULL) * lines) >> 32) * 16;
            g[j] = (uint32_t)(h >> 32);
            __builtin_prefetch(w + base[j]);
        }
        for (size_t j = 0; j < m; j++) {
            uint32_t x = g[j];
            for (int p = 0; p < k; p++) {
                uint32_t b = x >> 23;
                w[base[j] + (b >> 5)] |= 1u << (b & 31);
                x *= 0x9e3779b9u;
            }
        }
    }
}

static void query_batch(const uint32_t *w, uint64_t lines, int k, const uint64_t *keys, size_t n, uint8_t *out) {
    uint64_t base[GROUP]; uint32_t g[GROUP];
    for (size_t s = 0; s < n; s += GROUP) {
        size_t m = n - s < GROUP ? n - s : GROUP;
        for (size_t j = 0; j < m; j++) {
            uint64_t h = xxh3_u64(keys[s + j]);
            base[j] = (((h & 0xffffffffULL) * lines) >> 32) * 16;
            g[j] = (uint32_t)(h >> 32);
            __builtin_prefetch(w + base[j]);
        }
        for (size_t j = 0; j < m; j++) {
            uint32_t x = g[j], ok = 1;
            for (int p = 0; p < k; p++) {
                uint32_t b = x >> 23;
                ok &= w[base[j] + (b >> 5)] >> (b & 31);
                x *= 0x9e3779b9u;
            }
            out[s + j] = ok & 1;
        }
    }
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

/* Same key generator as bloomdb.bench.filter_bench.make_keys(n, "int", seed=0, offset). */
static void make_keys(uint64_t *k, size_t n, uint64_t offset) {
    for (size_t i = 0; i < n; i++) {
        uint64_t x = (offset + i) * 0x9E3779B97F4A7C15ULL;
        k[i] = x ^ (x >> 29);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s N BITS_PER_KEY [out]\n", argv[0]); return 2; }
    size_t n = strtoull(argv[1], 0, 10);
    double bpk = atof(argv[2]);
    int mb = (int)(bpk * 1000 + 0.500001);
    uint64_t bytes = ((uint64_t)n * mb + 7999) / 8000;
    uint64_t lines = (bytes + 63) / 64;
    int k = choose_k(mb);
    uint32_t *w = aligned_alloc(64, lines * 64);
    uint64_t *keys = malloc(n * 8), *absent = malloc(n * 8);
    uint8_t *out = malloc(n);
    make_keys(keys, n, 0);
    make_keys(absent, n, 1ULL << 40);
    double best_add = 1e9, best_q = 1e9, best_a = 1e9;
    size_t fps = 0;
    for (int rep = 0; rep < 3; rep++) {
        memset(w, 0, lines * 64);
        double t0 = now(); add_batch(w, lines, k, keys, n); double t1 = now();
        query_batch(w, lines, k, keys, n, out); double t2 = now();
        for (size_t i = 0; i < n; i++) if (!out[i]) { fprintf(stderr, "false negative\n"); return 1; }
        query_batch(w, lines, k, absent, n, out); double t3 = now();
        fps = 0; for (size_t i = 0; i < n; i++) fps += out[i];
        if (t1 - t0 < best_add) best_add = t1 - t0;
        if (t2 - t1 < best_q) best_q = t2 - t1;
        if (t3 - t2 < best_a) best_a = t3 - t2;
    }
    printf("{\"keys\": %zu, \"k\": %d, \"add_ns\": %.3f, \"query_present_ns\": %.3f, \"query_absent_ns\": %.3f, \"fpr\": %.6f}\n",
           n, k, best_add / n * 1e9, best_q / n * 1e9, best_a / n * 1e9, (double)fps / n);
    if (argc > 3) { FILE *f = fopen(argv[3], "wb"); fwrite(w, 1, lines * 64, f); fclose(f); }
    return 0;
}
