//! The permutation that sorts draws, by a radix sort of their keys.
//!
//! Ranking is most of `bat summary`'s time (two rankings of every
//! quantity's pooled draws — 300,000 numbers for 1,000 chains × 300
//! draws). A comparison sort of (key, index) pairs makes ~18 passes of
//! comparisons over them; a least-significant-digit radix sort of the 64-bit
//! keys makes at most six passes of 11-bit digits (fewer: a digit every
//! draw shares, such as the sign and exponent bits of draws of similar size,
//! is skipped) from one histogram read. It is stable, so equal keys keep
//! their indices' order: the permutation is exactly the one a sort of
//! (key, index) pairs gives.

/// Digits of this many bits per pass (a 2,048-entry count table per pass
/// stays in L1).
const DIGIT_BITS: u32 = 11;
const BUCKETS: usize = 1 << DIGIT_BITS;
const PASSES: usize = 64usize.div_ceil(DIGIT_BITS as usize);
/// Below this many keys a comparison sort is as fast.
const RADIX_FROM: usize = 512;

/// `values` sorted by `f64::total_cmp`, and the permutation that sorts
/// them (ties in index order): `values[order[k]]` is `sorted[k]`.
pub struct Sorted {
    pub sorted: Vec<f64>,
    pub order: Vec<usize>,
}

/// [`Sorted`] of `values`.
pub fn sort(values: &[f64]) -> Sorted {
    let keys: Vec<u64> = values.iter().map(|&v| total_order_key(v)).collect();
    let (keys, order) = if keys.len() < RADIX_FROM || u32::try_from(keys.len()).is_err() {
        let mut keyed: Vec<(u64, usize)> = keys.into_iter().zip(0..).collect();
        keyed.sort_unstable();
        keyed.into_iter().unzip()
    } else {
        radix_order(keys)
    };
    Sorted {
        sorted: keys.into_iter().map(from_total_order_key).collect(),
        order,
    }
}

/// `values` in the order of `f64::total_cmp` (the same bits as
/// `sort_unstable_by(f64::total_cmp)`: equal keys are equal bits); the
/// keys alone are moved, no permutation kept (the quantiles need none).
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut keys: Vec<u64> = values.iter().map(|&v| total_order_key(v)).collect();
    if keys.len() < RADIX_FROM || u32::try_from(keys.len()).is_err() {
        keys.sort_unstable();
    } else {
        keys = radix(keys, false).0;
    }
    keys.into_iter().map(from_total_order_key).collect()
}

/// An unsigned key whose order is `f64::total_cmp`'s: flip all bits of
/// negatives, only the sign bit of positives.
pub fn total_order_key(value: f64) -> u64 {
    let bits = value.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// The number whose key is `key` ([`total_order_key`] inverted).
fn from_total_order_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

/// `keys` sorted and their stable sorting permutation (fewer than 2³² keys).
fn radix_order(keys: Vec<u64>) -> (Vec<u64>, Vec<usize>) {
    let (keys, index) = radix(keys, true);
    (keys, index.into_iter().map(|i| i as usize).collect())
}

/// `keys` sorted and, `with_order`, their stable sorting permutation
/// (else an empty one); fewer than 2³² keys.
fn radix(mut keys: Vec<u64>, with_order: bool) -> (Vec<u64>, Vec<u32>) {
    let n = keys.len();
    let digit = |k: u64, pass: usize| ((k >> (pass as u32 * DIGIT_BITS)) as usize) & (BUCKETS - 1);
    let mut counts = vec![[0u32; BUCKETS]; PASSES];
    for &k in &keys {
        for (pass, count) in counts.iter_mut().enumerate() {
            count[digit(k, pass)] += 1;
        }
    }
    let mut index: Vec<u32> = if with_order {
        (0..n as u32).collect()
    } else {
        Vec::new()
    };
    let mut keys_to = vec![0u64; n];
    let mut index_to = vec![0u32; index.len()];
    for (pass, count) in counts.iter().enumerate() {
        // Every key has the same digit here: the pass would move nothing.
        if count.iter().any(|&c| c as usize == n) {
            continue;
        }
        let mut next = [0u32; BUCKETS];
        let mut start = 0u32;
        for (next, &c) in next.iter_mut().zip(count) {
            *next = start;
            start += c;
        }
        if with_order {
            for (&k, &i) in keys.iter().zip(&index) {
                let at = &mut next[digit(k, pass)];
                keys_to[*at as usize] = k;
                index_to[*at as usize] = i;
                *at += 1;
            }
            std::mem::swap(&mut index, &mut index_to);
        } else {
            for &k in &keys {
                let at = &mut next[digit(k, pass)];
                keys_to[*at as usize] = k;
                *at += 1;
            }
        }
        std::mem::swap(&mut keys, &mut keys_to);
    }
    (keys, index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the summary sorted before: (key, index) pairs.
    fn by_comparison(values: &[f64]) -> Vec<usize> {
        let mut keyed: Vec<(u64, usize)> = values
            .iter()
            .map(|&v| total_order_key(v))
            .zip(0..)
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, i)| i).collect()
    }

    /// Draws of similar size (shared high digits, skipped passes), many
    /// ties, both zeros, infinities and NaNs of either sign.
    fn draws() -> impl Strategy<Value = Vec<f64>> {
        let special = prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(f64::MIN_POSITIVE / 4.0),
        ];
        let value = prop_oneof![
            4 => -3.0f64..3.0,
            2 => (0i32..6).prop_map(|k| k as f64 * 0.5),
            1 => special,
            1 => any::<f64>(),
        ];
        proptest::collection::vec(value, 0..3000)
    }

    proptest! {
        #[test]
        fn the_radix_permutation_is_the_comparison_sorts(values in draws()) {
            let want_order = by_comparison(&values);
            let keys = values.iter().map(|&v| total_order_key(v)).collect();
            prop_assert_eq!(&radix_order(keys).1, &want_order);
            let got = sort(&values);
            prop_assert_eq!(&got.order, &want_order);
            let mut want = values.clone();
            want.sort_unstable_by(f64::total_cmp);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            prop_assert_eq!(bits(&got.sorted), bits(&want));
            // The keys-only sort: the same numbers.
            prop_assert_eq!(bits(&sorted(&values)), bits(&want));
        }
    }

    #[test]
    fn keys_invert() {
        for v in [
            0.0,
            -0.0,
            1.5,
            -1.5,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
            5e-324,
        ] {
            assert_eq!(
                from_total_order_key(total_order_key(v)).to_bits(),
                v.to_bits()
            );
        }
    }

    #[test]
    fn keys_order_as_total_cmp() {
        let values = [f64::NAN, 1.0, -0.0, 0.0, -1.0, f64::NEG_INFINITY, -f64::NAN];
        let mut by_key = values.to_vec();
        by_key.sort_by_key(|&v| total_order_key(v));
        let mut by_total = values.to_vec();
        by_total.sort_by(f64::total_cmp);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&by_key), bits(&by_total));
    }
}
