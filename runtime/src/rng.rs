//! Counter-based random numbers (Philox-4x32-10) and the `_rng` functions.
//!
//! A stream is keyed by the seed; its counter holds the chain id, the draw
//! number and a block counter, so the numbers of draw `d` of chain `c` are
//! the same however draws and chains are batched.

use super::error::{Result, RuntimeError};
use super::values::{flat, is_scalar, real};
use super::ziggurat::Ziggurat;
use bat_math::scalar as m;
use language::mir::Prim;
use language::value::Value;

/// Philox-4x32-10 (Salmon et al. 2011, "Parallel random numbers: as easy
/// as 1, 2, 3").
pub fn philox4x32(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    let (mut c, mut k) = (counter, key);
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = M0 * u64::from(c[0]);
        let p1 = M1 * u64::from(c[2]);
        c = [
            ((p1 >> 32) as u32) ^ c[1] ^ k[0],
            p1 as u32,
            ((p0 >> 32) as u32) ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// The random stream of one draw of one chain.
#[derive(Clone, Debug)]
pub struct Rng {
    key: [u32; 2],
    chain: u32,
    draw: u64,
    block: u32,
    buffer: [u32; 4],
    used: usize,
}

impl Rng {
    pub fn new(seed: u64, chain: u32, draw: u64) -> Rng {
        Rng {
            key: [seed as u32, (seed >> 32) as u32],
            chain,
            draw,
            block: 0,
            buffer: [0; 4],
            used: 4,
        }
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.used == 4 {
            let counter = [
                self.block,
                self.draw as u32,
                (self.draw >> 32) as u32,
                self.chain,
            ];
            self.buffer = philox4x32(counter, self.key);
            self.block = self.block.wrapping_add(1);
            self.used = 0;
        }
        self.used += 1;
        self.buffer[self.used - 1]
    }

    /// Uniform on the open interval (0, 1), 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        let hi = u64::from(self.next_u32() >> 5);
        let lo = u64::from(self.next_u32() >> 6);
        ((hi << 26 | lo) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// 64 random bits: the next two words, the first the high half.
    pub fn next_u64(&mut self) -> u64 {
        let hi = u64::from(self.next_u32());
        hi << 32 | u64::from(self.next_u32())
    }

    /// A standard normal draw by the ziggurat (`super::ziggurat`).
    pub fn std_normal(&mut self) -> f64 {
        Ziggurat::get().draw(self)
    }

    /// Gamma(shape α, rate 1) by Marsaglia and Tsang.
    pub fn gamma(&mut self, alpha: f64) -> f64 {
        if alpha < 1.0 {
            let u = self.uniform();
            return self.gamma(alpha + 1.0) * u.powf(1.0 / alpha);
        }
        let d = alpha - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.std_normal();
            let v = (1.0 + c * x).powi(3);
            if v <= 0.0 {
                continue;
            }
            let u = self.uniform();
            if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
                return d * v;
            }
        }
    }

    pub fn poisson(&mut self, lambda: f64) -> i64 {
        if lambda < 10.0 {
            let limit = (-lambda).exp();
            let (mut k, mut p) = (0, 1.0);
            loop {
                p *= self.uniform();
                if p <= limit {
                    return k;
                }
                k += 1;
            }
        }
        // Hörmann's transformed rejection with squeeze (PTRS).
        let slam = lambda.sqrt();
        let loglam = lambda.ln();
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = self.uniform() - 0.5;
            let v = self.uniform();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return k as i64;
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            if v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln()
                <= -lambda + k * loglam - m::lgamma(k + 1.0)
            {
                return k as i64;
            }
        }
    }
}

fn domain(name: &str, what: &str, x: f64) -> RuntimeError {
    RuntimeError::rejection(format!("{name}: {what} is {x}, but must be valid"))
}

fn need(name: &str, what: &str, x: f64, ok: bool) -> Result<f64> {
    if ok {
        Ok(x)
    } else {
        Err(domain(name, what, x))
    }
}

/// One draw of `p` at scalar arguments `a`.
fn draw_one(p: Prim, rng: &mut Rng, a: &[f64]) -> Result<Value> {
    use Prim::*;
    let name = p.name();
    let pos = |i: usize, what: &str| need(name, what, a[i], a[i] > 0.0 && a[i].is_finite());
    let fin = |i: usize, what: &str| need(name, what, a[i], a[i].is_finite());
    let prob = |x: f64| need(name, "probability", x, (0.0..=1.0).contains(&x));
    Ok(match p {
        NormalRng => Value::Real(fin(0, "location")? + pos(1, "scale")? * rng.std_normal()),
        LognormalRng => {
            Value::Real((fin(0, "location")? + pos(1, "scale")? * rng.std_normal()).exp())
        }
        UniformRng => {
            let (lo, hi) = (fin(0, "lower bound")?, fin(1, "upper bound")?);
            if !(lo < hi) {
                return Err(domain(name, "lower bound", lo));
            }
            Value::Real(lo + (hi - lo) * rng.uniform())
        }
        ExponentialRng => Value::Real(-rng.uniform().ln() / pos(0, "inverse scale")?),
        GammaRng => {
            let (alpha, beta) = (pos(0, "shape")?, pos(1, "inverse scale")?);
            Value::Real(rng.gamma(alpha) / beta)
        }
        BetaRng => {
            let (x, y) = (
                rng.gamma(pos(0, "first shape")?),
                rng.gamma(pos(1, "second shape")?),
            );
            Value::Real(x / (x + y))
        }
        StudentTRng => {
            let nu = pos(0, "degrees of freedom")?;
            let (mu, sigma) = (fin(1, "location")?, pos(2, "scale")?);
            let chi2 = 2.0 * rng.gamma(nu / 2.0);
            Value::Real(mu + sigma * rng.std_normal() / (chi2 / nu).sqrt())
        }
        CauchyRng => {
            let (mu, sigma) = (fin(0, "location")?, pos(1, "scale")?);
            Value::Real(mu + sigma * (std::f64::consts::PI * (rng.uniform() - 0.5)).tan())
        }
        BernoulliRng => Value::Int((rng.uniform() < prob(a[0])?) as i64),
        BernoulliLogitRng => Value::Int((rng.uniform() < m::inv_logit(fin(0, "logit")?)) as i64),
        BinomialRng => {
            let n = need(name, "population size", a[0], a[0] >= 0.0)? as i64;
            let theta = prob(a[1])?;
            Value::Int((0..n).filter(|_| rng.uniform() < theta).count() as i64)
        }
        PoissonRng => Value::Int(rng.poisson(need(
            name,
            "rate",
            a[0],
            a[0] >= 0.0 && a[0] < 2f64.powi(30),
        )?)),
        PoissonLogRng => {
            let rate = a[0].exp();
            need(name, "log rate", a[0], rate < 2f64.powi(30))?;
            Value::Int(rng.poisson(rate))
        }
        NegBinomial2Rng | NegBinomial2LogRng => {
            // Poisson with a gamma(φ, φ/μ) rate
            let mu = if p == NegBinomial2LogRng {
                a[0].exp()
            } else {
                a[0]
            };
            let mu = need(name, "location", mu, mu > 0.0 && mu.is_finite())?;
            let phi = pos(1, "precision")?;
            let rate = rng.gamma(phi) * mu / phi;
            Value::Int(rng.poisson(need(name, "gamma rate", rate, rate < 2f64.powi(30))?))
        }
        DoubleExponentialRng => {
            let (mu, sigma) = (fin(0, "location")?, pos(1, "scale")?);
            let u = rng.uniform() - 0.5;
            Value::Real(mu - sigma * u.signum() * (1.0 - 2.0 * u.abs()).ln())
        }
        LogisticRng => {
            let (mu, sigma) = (fin(0, "location")?, pos(1, "scale")?);
            let u = rng.uniform();
            Value::Real(mu + sigma * (u / (1.0 - u)).ln())
        }
        WeibullRng => {
            let (alpha, sigma) = (pos(0, "shape")?, pos(1, "scale")?);
            Value::Real(sigma * (-rng.uniform().ln()).powf(1.0 / alpha))
        }
        ChiSquareRng => Value::Real(2.0 * rng.gamma(pos(0, "degrees of freedom")? / 2.0)),
        InvGammaRng => {
            let (alpha, beta) = (pos(0, "shape")?, pos(1, "scale")?);
            Value::Real(beta / rng.gamma(alpha))
        }
        GumbelRng => {
            let (mu, beta) = (fin(0, "location")?, pos(1, "scale")?);
            Value::Real(mu - beta * (-rng.uniform().ln()).ln())
        }
        _ => {
            return Err(RuntimeError::fatal(format!(
                "{name} is not a random number generator"
            )));
        }
    })
}

/// One draw of `p` at scalar arguments (`None` for the categorical
/// primitives, whose argument is a simplex).
pub(crate) fn draw_scalar(p: Prim, rng: &mut Rng, xs: &[f64]) -> Option<Result<Value>> {
    if p == Prim::CategoricalRng || p == Prim::CategoricalLogitRng {
        return None;
    }
    Some(draw_one(p, rng, xs))
}

/// Draw from `p` at `args`: one draw for scalar arguments, an array of
/// draws (one per element) when an argument is a container.
pub(crate) fn draw(p: Prim, rng: &mut Rng, args: &[Value]) -> Result<Value> {
    if p == Prim::CategoricalRng || p == Prim::CategoricalLogitRng {
        let mut theta = flat(&args[0]);
        if p == Prim::CategoricalLogitRng {
            theta = bat_math::vector::softmax(&theta);
        }
        let total: f64 = theta.iter().sum();
        if theta.iter().any(|t| !(*t >= 0.0)) || (total - 1.0).abs() > 1e-8 {
            return Err(RuntimeError::rejection(
                "categorical_rng: probabilities must be a simplex",
            ));
        }
        let u = rng.uniform();
        let mut acc = 0.0;
        for (k, t) in theta.iter().enumerate() {
            acc += t;
            if u < acc {
                return Ok(Value::Int(k as i64 + 1));
            }
        }
        return Ok(Value::Int(theta.len() as i64));
    }
    let n = args.iter().find(|a| !is_scalar(a)).map(|a| flat(a).len());
    let columns: Vec<Vec<f64>> = args.iter().map(flat).collect();
    let at = |i: usize| -> Vec<f64> {
        columns
            .iter()
            .map(|c| if c.len() == 1 { c[0] } else { c[i] })
            .collect()
    };
    match n {
        None => {
            let xs: Vec<f64> = args.iter().map(real).collect::<Result<_>>()?;
            draw_one(p, rng, &xs)
        }
        Some(n) => {
            for c in &columns {
                if c.len() != 1 && c.len() != n {
                    return Err(RuntimeError::fatal(format!("{p}: argument sizes differ")));
                }
            }
            Ok(Value::Array(
                (0..n)
                    .map(|i| draw_one(p, rng, &at(i)))
                    .collect::<Result<_>>()?,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors from the Random123 distribution (kat_vectors).
    #[test]
    fn philox_known_answers() {
        assert_eq!(
            philox4x32([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32(
                [0xffff_ffff, 0xffff_ffff, 0xffff_ffff, 0xffff_ffff],
                [0xffff_ffff, 0xffff_ffff]
            ),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }
}
