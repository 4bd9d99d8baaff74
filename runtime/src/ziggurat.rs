//! Standard normal draws by Marsaglia and Tsang's ziggurat ("The ziggurat
//! method for generating random variables", J. Stat. Softw. 2000), 256
//! layers, with Doornik's fix ("An improved ziggurat method", 2005): the
//! layer, the sign and the uniform come from disjoint bits of one 64-bit
//! word.
//!
//! Why not Box–Muller: it spent a whole Philox block, a `log`, a `sqrt` and a
//! `cos` on each normal (~400 instructions); NUTS refreshes the momentum
//! with one normal per coordinate per iteration, which made the normals ~12%
//! of the instructions of an eight-schools gradient in the sampler. The
//! ziggurat's fast path (98.5% of draws) takes half a block and a multiply.
//!
//! Every backend draws the same numbers: the tables are computed here once
//! and written into generated code as exact literals
//! ([`Ziggurat::c_source`]); the fast path is a product of an integer and a
//! table entry (exact IEEE arithmetic); only the rare wedge and tail draws
//! use `exp` and `log`.
//!
//! Layers: edges `x₁ = R > x₂ > … > x₂₅₅ > x₂₅₆ = 0` under `f(x) = e^{-x²/2}`,
//! each layer of area `v`. Layer `i ≥ 1` is the box `[0, xᵢ] × [f(xᵢ),
//! f(xᵢ₊₁)]`; layer 0 is the box `[0, R] × [0, f(R)]` plus the tail beyond
//! `R`, drawn as the box `[0, x₀]` with `x₀ = v / f(R)`, whose part past `R`
//! stands for the tail. A draw picks a layer and a point `x` uniform in
//! `[0, xᵢ)`: below `xᵢ₊₁` it is under the curve (the fast path); past it,
//! layer 0 draws from the tail (Marsaglia 1964) and other layers accept
//! `x` when a uniform height in the layer falls under `f(x)`, or start over.

use super::rng::Rng;
use std::sync::OnceLock;

/// Layers of the ziggurat.
pub const LAYERS: usize = 256;

/// The right edge of the base layer's box (Marsaglia and Tsang's `r` for
/// 256 layers): the layers' common area is fixed by it.
pub const R: f64 = 3.654_152_885_361_009;

/// 2⁵²: the uniform in a layer is a 52-bit integer.
const SCALE: f64 = 4_503_599_627_370_496.0;

/// The tables one draw reads.
#[derive(Debug)]
pub struct Ziggurat {
    /// `xᵢ / 2⁵²`: the point drawn in layer `i` is `m · width[i]` for the
    /// 52-bit integer `m`.
    pub width: [f64; LAYERS],
    /// `⌊2⁵² xᵢ₊₁ / xᵢ⌋`: `m` below it is under the curve.
    pub fast: [u64; LAYERS],
    /// `f(xᵢ)` for `i` in `0..=256` (`f(x₂₅₆) = 1`): layer `i`'s heights.
    pub height: [f64; LAYERS + 1],
}

impl Ziggurat {
    /// The tables (computed on first use).
    pub fn get() -> &'static Ziggurat {
        static TABLES: OnceLock<Ziggurat> = OnceLock::new();
        TABLES.get_or_init(Ziggurat::compute)
    }

    fn compute() -> Ziggurat {
        let edges = edges();
        let mut z = Ziggurat {
            width: [0.0; LAYERS],
            fast: [0; LAYERS],
            height: [0.0; LAYERS + 1],
        };
        for i in 0..LAYERS {
            z.width[i] = edges[i] / SCALE;
            z.fast[i] = (SCALE * (edges[i + 1] / edges[i])) as u64;
        }
        for (h, x) in z.height.iter_mut().zip(edges) {
            *h = density(x);
        }
        z
    }

    /// One standard normal draw from `stream`: a 64-bit word per attempt
    /// and, on the rare slow paths, uniforms.
    pub fn draw(&self, stream: &mut Rng) -> f64 {
        loop {
            let word = stream.next_u64();
            let layer = (word & 0xff) as usize;
            let signed = |x: f64| if word & 0x100 != 0 { -x } else { x };
            let magnitude = word >> 12;
            let x = magnitude as f64 * self.width[layer];
            if magnitude < self.fast[layer] {
                return signed(x);
            }
            if layer == 0 {
                loop {
                    let a = -stream.uniform().ln() / R;
                    let b = -stream.uniform().ln();
                    if b + b > a * a {
                        return signed(R + a);
                    }
                }
            }
            let (low, high) = (self.height[layer], self.height[layer + 1]);
            if low + stream.uniform() * (high - low) < density(x) {
                return signed(x);
            }
        }
    }

    /// The tables and the draw as CUDA C over a `BatRng` (`bat_rng_next_u32`,
    /// `bat_rng_uniform`): the same numbers as [`Ziggurat::draw`] over the
    /// stream's words. Floats are written as their shortest round-trip
    /// decimals, which C compilers read back exactly.
    pub fn c_source(&self) -> String {
        let list = |items: Vec<String>| {
            items
                .chunks(4)
                .map(|c| format!("    {},", c.join(", ")))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let reals = |xs: &[f64]| list(xs.iter().map(|x| format!("{x:e}")).collect());
        let words = list(self.fast.iter().map(|k| format!("{k:#x}ULL")).collect());
        format!(
            r#"// ---- standard normals by the ziggurat (runtime::ziggurat)
__constant__ double bat_zig_width[{LAYERS}] = {{
{width}
}};
__constant__ unsigned long long bat_zig_fast[{LAYERS}] = {{
{words}
}};
__constant__ double bat_zig_height[{heights}] = {{
{height}
}};
__device__ __forceinline__ unsigned long long bat_rng_next_u64(BatRng* r) {{
    const unsigned long long hi = bat_rng_next_u32(r);
    return (hi << 32) | bat_rng_next_u32(r);
}}
// The wedges and the tail (1.5% of draws), out of line.
__device__ __noinline__ double bat_rng_std_normal_slow(BatRng* r, unsigned long long word) {{
    for (;;) {{
        const int layer = (int)(word & 0xffULL);
        const double sign = (word & 0x100ULL) ? -1.0 : 1.0;
        const unsigned long long magnitude = word >> 12;
        const double x = (double)magnitude * bat_zig_width[layer];
        if (magnitude < bat_zig_fast[layer]) return sign * x;
        if (layer == 0) {{
            for (;;) {{
                const double a = -log(bat_rng_uniform(r)) / {r:e};
                const double b = -log(bat_rng_uniform(r));
                if (b + b > a * a) return sign * ({r:e} + a);
            }}
        }}
        const double low = bat_zig_height[layer], high = bat_zig_height[layer + 1];
        if (low + bat_rng_uniform(r) * (high - low) < exp(-0.5 * x * x)) return sign * x;
        word = bat_rng_next_u64(r);
    }}
}}
__device__ __forceinline__ double bat_rng_std_normal(BatRng* r) {{
    const unsigned long long word = bat_rng_next_u64(r);
    const int layer = (int)(word & 0xffULL);
    const unsigned long long magnitude = word >> 12;
    if (magnitude < bat_zig_fast[layer]) {{
        const double x = (double)magnitude * bat_zig_width[layer];
        return (word & 0x100ULL) ? -x : x;
    }}
    return bat_rng_std_normal_slow(r, word);
}}
"#,
            width = reals(&self.width),
            heights = LAYERS + 1,
            height = reals(&self.height),
            r = R,
        )
    }
}

/// The unnormalized standard normal density `e^{-x²/2}`.
fn density(x: f64) -> f64 {
    (-0.5 * x * x).exp()
}

/// The common area of the layers: the base box and the tail past `R`.
pub fn layer_area() -> f64 {
    R * density(R)
        + (std::f64::consts::PI / 2.0).sqrt() * bat_math::scalar::erfc(R / std::f64::consts::SQRT_2)
}

/// `x₀ … x₂₅₆` (`x₀ = v / f(R)`, `x₁ = R`, `x₂₅₆ = 0`).
pub fn edges() -> [f64; LAYERS + 1] {
    let v = layer_area();
    let mut x = [0.0; LAYERS + 1];
    x[0] = v / density(R);
    x[1] = R;
    for i in 1..LAYERS - 1 {
        x[i + 1] = (-2.0 * (density(x[i]) + v / x[i]).ln()).sqrt();
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layer holds the same area, the top one included: the recursion
    /// closes at `f(0) = 1` only when `R` is right.
    #[test]
    fn the_layers_have_equal_areas() {
        let (x, v) = (edges(), layer_area());
        for i in 1..LAYERS {
            let area = x[i] * (density(x[i + 1]) - density(x[i]));
            assert!(
                ((area - v) / v).abs() < 1e-9,
                "layer {i}: area {area}, expected {v}"
            );
        }
        // the base: its box of width x₀ and height f(R) is the layer area
        assert!(((x[0] * density(R) - v) / v).abs() < 1e-15);
        // v · 256 is the area under e^{-x²/2} on [0, ∞) plus the box
        // overhang: a little more than √(π/2)
        let half = (std::f64::consts::PI / 2.0).sqrt();
        let total = v * LAYERS as f64;
        assert!(total > half && total < 1.02 * half, "{total}");
    }

    #[test]
    fn fast_bounds_are_the_next_edge() {
        let (z, x) = (Ziggurat::get(), edges());
        for i in 0..LAYERS - 1 {
            // the largest fast point is below the next edge, one more is not
            assert!((z.fast[i] - 1) as f64 * z.width[i] < x[i + 1], "layer {i}");
            assert!((z.fast[i] + 1) as f64 * z.width[i] >= x[i + 1], "layer {i}");
        }
        // the top layer has no box under the curve: every draw is a wedge
        assert_eq!(z.fast[LAYERS - 1], 0);
    }
}
