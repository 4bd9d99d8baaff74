//! The per-lane random streams on the device: Philox-4x32-10 with the
//! CPU's stream layout (`runtime::Rng`): a stream is keyed by the
//! seed, its counter is (block, draw low, draw high, chain), each block
//! gives four 32-bit words used in order; `uniform` takes 53 bits from two
//! words, `std_normal` is the ziggurat over 64-bit words with the CPU's
//! tables (`runtime::ziggurat`). Uniform draws and the ziggurat's
//! fast path (98.5% of normals) are the CPU's bit for bit (integer
//! arithmetic, exact conversions, one product); its wedges and tail use the
//! device's `exp` and `log`, so they equal the CPU's where those do
//! (through the CUDA-on-CPU shim: the same libm) and within a few ulps on a
//! GPU.
//!
//! A stream lives in [`RNG_SLOTS`] consecutive state slots of a lane
//! (`bat_rng_load` / `bat_rng_store`), as doubles holding 32-bit words.

/// Lane state slots of one stream.
pub const RNG_SLOTS: usize = 11;

/// CUDA C of the streams (part of the prelude).
pub fn rng_source() -> String {
    format!(
        "{STREAM_SOURCE}{}{DRAW_SOURCE}",
        runtime::ziggurat::Ziggurat::get().c_source()
    )
}

/// CUDA C of a stream's words and uniforms.
const STREAM_SOURCE: &str = r#"// ---- Philox-4x32-10 streams (runtime::Rng)
struct BatRng {
    unsigned int key0, key1, chain, draw_lo, draw_hi, block;
    unsigned int buffer[4];
    int used;
};
__device__ inline void bat_philox4x32_10(unsigned int* c, unsigned int k0, unsigned int k1) {
    const unsigned long long M0 = 0xD2511F53ULL;
    const unsigned long long M1 = 0xCD9E8D57ULL;
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned long long p0 = M0 * (unsigned long long)c[0];
        const unsigned long long p1 = M1 * (unsigned long long)c[2];
        const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c[1] ^ k0;
        const unsigned int n1 = (unsigned int)p1;
        const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c[3] ^ k1;
        const unsigned int n3 = (unsigned int)p0;
        c[0] = n0; c[1] = n1; c[2] = n2; c[3] = n3;
    }
}
// The stream of draw `draw` of chain `chain` under `seed` (Rng::new).
__device__ inline BatRng bat_rng_new(unsigned long long seed, unsigned int chain, unsigned long long draw) {
    BatRng r;
    r.key0 = (unsigned int)seed;
    r.key1 = (unsigned int)(seed >> 32);
    r.chain = chain;
    r.draw_lo = (unsigned int)draw;
    r.draw_hi = (unsigned int)(draw >> 32);
    r.block = 0;
    for (int i = 0; i < 4; ++i) r.buffer[i] = 0;
    r.used = 4;
    return r;
}
// The stream's next block of four words. Out of line, and the word
// reads inlined around it: three reads in four are a load and an
// increment, which as calls of one function holding the ten rounds cost
// more than the load (g++ kept both out of line: a fifth of a uniform
// draw's instructions were calls, spills and branches).
__device__ __noinline__ void bat_rng_refill(BatRng* r) {
    unsigned int c[4] = {r->block, r->draw_lo, r->draw_hi, r->chain};
    bat_philox4x32_10(c, r->key0, r->key1);
    for (int i = 0; i < 4; ++i) r->buffer[i] = c[i];
    r->block += 1u;
    r->used = 0;
}
__device__ __forceinline__ unsigned int bat_rng_next_u32(BatRng* r) {
    if (r->used == 4) bat_rng_refill(r);
    r->used += 1;
    return r->buffer[r->used - 1];
}
// Uniform on (0, 1) from 53 random bits.
__device__ __forceinline__ double bat_rng_uniform(BatRng* r) {
    const unsigned long long hi = (unsigned long long)(bat_rng_next_u32(r) >> 5);
    const unsigned long long lo = (unsigned long long)(bat_rng_next_u32(r) >> 6);
    return ((double)((hi << 26) | lo) + 0.5) / 9007199254740992.0;
}
"#;

/// CUDA C of one draw from a stream kept in lane state (after the
/// ziggurat's normals).
const DRAW_SOURCE: &str = r#"// One draw from the stream kept at `base` of the lane state (loaded and
// stored around it): uniform on (lo, hi) and normal(mu, sigma), as the
// interpreter computes them from the stream's numbers.
__device__ inline BatRng bat_rng_load(const double* state, long long base, int lane, int n_lanes);
__device__ inline void bat_rng_store(const BatRng* r, double* state, long long base, int lane, int n_lanes);
__device__ inline double bat_draw_uniform(double* state, long long base, int lane, int n_lanes, double lo, double hi) {
    BatRng r = bat_rng_load(state, base, lane, n_lanes);
    const double u = bat_rng_uniform(&r);
    bat_rng_store(&r, state, base, lane, n_lanes);
    return lo + (hi - lo) * u;
}
__device__ inline double bat_draw_normal(double* state, long long base, int lane, int n_lanes, double mu, double sigma) {
    BatRng r = bat_rng_load(state, base, lane, n_lanes);
    const double z = bat_rng_std_normal(&r);
    bat_rng_store(&r, state, base, lane, n_lanes);
    return mu + sigma * z;
}
// A stream kept in 11 lane-state slots from `base` (words as doubles).
__device__ inline BatRng bat_rng_load(const double* state, long long base, int lane, int n_lanes) {
    BatRng r;
    unsigned int w[10];
    for (int i = 0; i < 10; ++i) w[i] = (unsigned int)state[BAT_SLOT(base + i)];
    r.key0 = w[0]; r.key1 = w[1]; r.chain = w[2]; r.draw_lo = w[3]; r.draw_hi = w[4]; r.block = w[5];
    for (int i = 0; i < 4; ++i) r.buffer[i] = w[6 + i];
    r.used = (int)state[BAT_SLOT(base + 10)];
    return r;
}
__device__ inline void bat_rng_store(const BatRng* r, double* state, long long base, int lane, int n_lanes) {
    const unsigned int w[10] = {r->key0, r->key1, r->chain, r->draw_lo, r->draw_hi, r->block,
                                r->buffer[0], r->buffer[1], r->buffer[2], r->buffer[3]};
    for (int i = 0; i < 10; ++i) state[BAT_SLOT(base + i)] = (double)w[i];
    state[BAT_SLOT(base + 10)] = (double)r->used;
}
"#;
