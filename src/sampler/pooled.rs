//! Pooled warmup (`bat run --adapt pooled`): all chains share one step
//! size and one inverse metric (diagonal, or dense with `--metric dense`),
//! adapted from every chain's iterations at once, so that with many chains
//! warmup needs few iterations per chain.
//!
//! The warmup is a sequence of short runs of the ordinary sampler program
//! ("segments", [`SYNC_EVERY`] iterations or fewer) on whatever executor
//! `bat run` uses: in a segment every chain runs NUTS with the shared
//! kernel, fixed ([`Settings::kernel`]), from where the previous segment
//! left it ([`Init::PerChain`]), drawing from a stream of its own for that
//! segment. Between segments the host pools what the chains report
//! ([`Settings::report_points`]), in chain order, so the kernel depends
//! only on the seed and the number of chains, never on threads, executors
//! or ranks:
//!
//! - **step size**: after every segment, from the mean acceptance
//!   statistic ā of all chains' iterations in it, assuming 1 − a ∝ ε²
//!   (the leapfrog error's order): ε ← ε·√((1 − δ)/(1 − ā)), the factor
//!   held within [¼, 4]. Over thousands of transitions ā is nearly exact,
//!   so a Newton step converges in a few segments where Stan's dual
//!   averaging (made for one noisy chain) needs hundreds of iterations.
//!   The first segment starts each chain from Stan's step-size heuristic;
//!   the shared step size is then the geometric mean of theirs. The
//!   sampling step size is the geometric mean of the targets of the
//!   later half of the segments after the last metric update (at least
//!   [`TERMINAL_UPDATES`] of them).
//! - **metric**: Stan's windows (initial buffer, doubling windows,
//!   terminal buffer: `window_params` and `next_window` of `nuts.stan`),
//!   but each window's variance is over all chains' iterations in it,
//!   regularized as Stan does, (N/(N + 5))·var + 10⁻³·5/(N + 5); for a
//!   dense metric the covariance, (N/(N + 5))·Σ + 10⁻³·5/(N + 5)·I (Stan's
//!   `dense_e`), which the chains get as its Cholesky factor.
//!
//! - **stuck chains**: a chain whose mean log density over a segment lies
//!   far below the others' ([`stuck_chains`]: in a minor mode, or with
//!   its step size collapsed far from where the others are) counts for
//!   nothing in that segment and restarts from another chain's point, until
//!   the terminal buffer. Warmup draws are discarded, so this changes where
//!   sampling starts, not what a chain's draws mean; with one kernel for
//!   all chains, one stuck chain would otherwise shrink everyone's step
//!   size and inflate the metric.
//!
//! After warmup the chains sample independently with the final kernel
//! (a run with no warmup iterations), so the draws are ordinary MCMC
//! draws of a fixed kernel.

use super::{
    Algorithm, ChainJob, Control, Event, Init, InvMetric, Kernel, Metric, SamplerExecutor,
    Settings, Trajectory,
};
use std::sync::Arc;
use std::sync::mpsc;

/// Iterations between two synchronizations of all chains (fewer where a
/// metric window ends): each is a step-size update.
pub const SYNC_EVERY: usize = 5;

/// The chains' exchange of their segment reports: this rank's records
/// in, every rank's out (one process: the same). A rank whose chain
/// failed says so instead (`Err` with the reason), and every rank then
/// gets an error that names it, so that all stop together.
pub trait Gather {
    fn gather(&self, mine: Result<Vec<f64>, String>) -> Result<Vec<f64>, String>;
}

/// One process: its records are all the records.
pub struct OneProcess;

impl Gather for OneProcess {
    fn gather(&self, mine: Result<Vec<f64>, String>) -> Result<Vec<f64>, String> {
        mine
    }
}

/// What pooled warmup ends with.
#[derive(Clone, Debug, PartialEq)]
pub struct Pooled {
    pub kernel: Kernel,
    /// Chain `i`'s point at the end of warmup (every chain of the run).
    pub starts: Arc<[Vec<f64>]>,
    /// Synchronized segments run.
    pub segments: usize,
    /// Gradient evaluations of this process's chains.
    pub gradient_evaluations: u64,
    /// Divergent transitions during warmup, all chains.
    pub divergences: usize,
    /// The chains restarted, stuck far below the others (each once, in
    /// order).
    pub restarted: Vec<usize>,
}

/// Why pooled warmup stopped.
#[derive(Debug)]
pub enum PooledError {
    /// A chain failed (or was interrupted): the first in chain order.
    Chain(super::ChainError),
    /// The ranks could not exchange their reports.
    Gather(String),
}

/// One segment of warmup: iterations `start..end` (counted from 0) and
/// what ends with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    start: usize,
    end: usize,
    /// Its iterations belong to a metric window.
    in_window: bool,
    /// A metric window ends with it: the metric is updated after it.
    closes_window: bool,
    /// Chains stuck far below the others restart after it (not in the
    /// terminal buffer, which leaves a restarted chain time to move away
    /// from the point it copied).
    restarts: bool,
}

/// Step-size updates in the terminal buffer (after the last metric
/// update), at least: its segments are shorter than [`SYNC_EVERY`] where
/// the buffer is short.
const TERMINAL_UPDATES: usize = 3;

/// The segments of `num_warmup` iterations: every [`SYNC_EVERY`]
/// iterations and at the ends of Stan's metric windows, and at least
/// [`TERMINAL_UPDATES`] in the terminal buffer.
fn schedule(num_warmup: usize) -> Vec<Segment> {
    // Stan's windowed adaptation (`window_params`, `next_window`).
    let adapt_metric = num_warmup >= 20;
    let (init_buffer, term_buffer, base_window) = if 75 + 25 + 50 > num_warmup {
        let init = (0.15 * num_warmup as f64).floor() as usize;
        let term = (0.1 * num_warmup as f64).floor() as usize;
        (init, term, num_warmup - (init + term))
    } else {
        (75, 50, 25)
    };
    let mut window_ends = Vec::new();
    if adapt_metric {
        let last = num_warmup - term_buffer - 1;
        let mut size = base_window;
        let mut end = init_buffer + size - 1;
        loop {
            window_ends.push(end);
            if end == last {
                break;
            }
            size *= 2;
            let mut next = end + size;
            if next != last && next + 2 * size >= num_warmup - term_buffer {
                next = last;
            }
            end = next.min(last);
        }
    }
    let in_window = |i: usize| adapt_metric && i >= init_buffer && i < num_warmup - term_buffer;
    let mut cuts: Vec<usize> = (SYNC_EVERY..num_warmup).step_by(SYNC_EVERY).collect();
    // The step size has to settle to the last metric in the terminal
    // buffer: at least TERMINAL_UPDATES updates there, however short it
    // is (with a 3-iteration buffer of a 30-iteration warmup, one update
    // left the logistic regression's acceptance at 0.99).
    let term_start = num_warmup - term_buffer;
    let term_step = term_buffer.div_ceil(TERMINAL_UPDATES).clamp(1, SYNC_EVERY);
    cuts.retain(|&c| c <= term_start);
    cuts.extend((term_start..num_warmup).step_by(term_step).skip(1));
    cuts.extend(window_ends.iter().map(|e| e + 1));
    if adapt_metric {
        cuts.push(init_buffer);
    }
    cuts.push(num_warmup);
    cuts.sort_unstable();
    cuts.dedup();
    let mut segments = Vec::new();
    let mut start = 0;
    for end in cuts.into_iter().filter(|&c| c > 0) {
        segments.push(Segment {
            start,
            end,
            in_window: in_window(start),
            closes_window: window_ends.contains(&(end - 1)),
            restarts: adapt_metric && end <= num_warmup - term_buffer,
        });
        start = end;
    }
    segments
}

/// The seed of segment `k`'s streams: a stream of its own for every
/// segment (the sampling run keeps the run's seed).
fn segment_seed(seed: u64, k: usize) -> u64 {
    // splitmix64 of the seed offset by the segment.
    let mut z = seed ^ (0xA076_1D64_78BD_642F_u64.wrapping_mul(k as u64 + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One chain's report of one segment, and its record for [`Gather`]:
/// chain, iterations, Σ accept_stat, Σ log step size, divergences, Σ lp, then
/// the last point, the mean and the sums of squared deviations of its
/// points (Welford, over the segment's iterations: per coordinate for a
/// diagonal metric, the d×d matrix of cross products for a dense one),
/// then with [`Algorithm::Chees`] every iteration's trajectory
/// ([`TrajectoryRecord`]).
#[derive(Clone, Debug)]
struct ChainReport {
    chain: usize,
    n: usize,
    accept_sum: f64,
    log_step_sum: f64,
    divergences: usize,
    lp_sum: f64,
    point: Vec<f64>,
    mean: Vec<f64>,
    /// Σ (x − x̄)² per coordinate, or Σ (x − x̄)(x − x̄)ᵀ row-major.
    m2: Vec<f64>,
    /// [`TrajectoryRecord`]s, one per iteration, back to back.
    trajectories: Vec<f64>,
    /// The trajectory of the iteration whose `Iteration` comes next.
    pending: Option<Trajectory>,
}

/// One jittered-HMC iteration as ChEES adaptation reads it: its
/// trajectory's start, end and velocity there (`dim` numbers each), its
/// time, acceptance probability and whether it diverged (1 or 0).
struct TrajectoryRecord<'a> {
    start: &'a [f64],
    end: &'a [f64],
    velocity: &'a [f64],
    time: f64,
    accept: f64,
    divergent: bool,
}

impl<'a> TrajectoryRecord<'a> {
    fn width(dim: usize) -> usize {
        3 * dim + 3
    }

    fn write(trajectory: &Trajectory, stats: &super::SampleStats, out: &mut Vec<f64>) {
        out.extend(&trajectory.start);
        out.extend(&trajectory.end);
        out.extend(&trajectory.velocity);
        out.extend([
            trajectory.time,
            stats.accept_stat,
            f64::from(u8::from(stats.divergent)),
        ]);
    }

    fn read(record: &'a [f64], dim: usize) -> TrajectoryRecord<'a> {
        TrajectoryRecord {
            start: &record[..dim],
            end: &record[dim..2 * dim],
            velocity: &record[2 * dim..3 * dim],
            time: record[3 * dim],
            accept: record[3 * dim + 1],
            divergent: record[3 * dim + 2] != 0.0,
        }
    }
}

impl ChainReport {
    fn new(chain: usize, dim: usize, metric: Metric) -> ChainReport {
        ChainReport {
            chain,
            n: 0,
            accept_sum: 0.0,
            log_step_sum: 0.0,
            divergences: 0,
            lp_sum: 0.0,
            point: vec![f64::NAN; dim],
            mean: vec![0.0; dim],
            m2: vec![0.0; m2_len(dim, metric)],
            trajectories: Vec::new(),
            pending: None,
        }
    }

    fn add(&mut self, stats: &super::SampleStats, point: Vec<f64>) {
        self.n += 1;
        self.accept_sum += stats.accept_stat;
        self.log_step_sum += stats.step_size.ln();
        self.divergences += usize::from(stats.divergent);
        self.lp_sum += stats.lp;
        if let Some(trajectory) = self.pending.take() {
            TrajectoryRecord::write(&trajectory, stats, &mut self.trajectories);
        }
        let k = self.n as f64;
        let dim = point.len();
        // (For one coordinate both updates are the same arithmetic.)
        if self.m2.len() == dim {
            for ((mean, m2), &x) in self.mean.iter_mut().zip(&mut self.m2).zip(&point) {
                let delta = x - *mean;
                *mean += delta / k;
                *m2 += (x - *mean) * delta;
            }
        } else {
            let delta: Vec<f64> = point.iter().zip(&self.mean).map(|(x, m)| x - m).collect();
            for (mean, d) in self.mean.iter_mut().zip(&delta) {
                *mean += d / k;
            }
            // The lower triangle, mirrored: the matrix stays symmetric
            // whatever the rounding.
            for (i, (x, mean)) in point.iter().zip(&self.mean).enumerate() {
                let centered = x - mean;
                for (j, d) in delta.iter().enumerate().take(i + 1) {
                    self.m2[i * dim + j] += centered * d;
                    self.m2[j * dim + i] = self.m2[i * dim + j];
                }
            }
        }
        self.point = point;
    }

    /// The record's width for a segment of `iterations` iterations.
    fn width(dim: usize, iterations: usize, settings: &Settings) -> usize {
        let trajectories = match settings.algorithm {
            // A model without parameters runs no trajectories.
            Algorithm::Chees if dim > 0 => iterations * TrajectoryRecord::width(dim),
            _ => 0,
        };
        6 + 2 * dim + m2_len(dim, settings.metric) + trajectories
    }

    fn write(&self, out: &mut Vec<f64>) {
        out.extend([
            self.chain as f64,
            self.n as f64,
            self.accept_sum,
            self.log_step_sum,
            self.divergences as f64,
            self.lp_sum,
        ]);
        out.extend(&self.point);
        out.extend(&self.mean);
        out.extend(&self.m2);
        out.extend(&self.trajectories);
    }

    fn read(record: &[f64], dim: usize, metric: Metric) -> ChainReport {
        let part = |k: usize| record[6 + k * dim..6 + (k + 1) * dim].to_vec();
        let moments_end = 6 + 2 * dim + m2_len(dim, metric);
        ChainReport {
            chain: record[0] as usize,
            n: record[1] as usize,
            accept_sum: record[2],
            log_step_sum: record[3],
            divergences: record[4] as usize,
            lp_sum: record[5],
            point: part(0),
            mean: part(1),
            m2: record[6 + 2 * dim..moments_end].to_vec(),
            trajectories: record[moments_end..].to_vec(),
            pending: None,
        }
    }

    /// Its iterations' trajectories, in order.
    fn trajectories(&self, dim: usize) -> impl Iterator<Item = TrajectoryRecord<'_>> {
        self.trajectories
            .chunks_exact(TrajectoryRecord::width(dim))
            .map(move |record| TrajectoryRecord::read(record, dim))
    }
}

/// The sums of squared deviations a report holds: one per coordinate for
/// a diagonal metric, the d×d matrix for a dense one.
fn m2_len(dim: usize, metric: Metric) -> usize {
    match metric {
        Metric::Diag => dim,
        Metric::Dense => dim * dim,
    }
}

/// How far below the others a chain's mean log density over a segment
/// must be to count as stuck: below the lower quartile of the chains' means
/// by 3 interquartile ranges and this many units more.
pub const STUCK_MARGIN: f64 = 5.0;

/// The chains of `reports` whose mean lp over the segment lies far below
/// the others' (a chain in a minor mode, or with its step size stuck near
/// zero, far from where the others are): `[chain] -> stuck`. Needs at
/// least 4 chains to tell.
fn stuck_chains(reports: &[ChainReport]) -> Vec<bool> {
    let lp: Vec<f64> = reports
        .iter()
        .map(|r| r.lp_sum / r.n.max(1) as f64)
        .collect();
    if lp.len() < 4 || lp.iter().any(|x| !x.is_finite()) {
        return vec![false; lp.len()];
    }
    let mut sorted = lp.clone();
    sorted.sort_by(f64::total_cmp);
    let quartile = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    let (q1, q3) = (quartile(0.25), quartile(0.75));
    let floor = q1 - 3.0 * (q3 - q1) - STUCK_MARGIN;
    lp.iter().map(|&x| x < floor).collect()
}

/// Count, mean and sums of squared deviations of points (per coordinate,
/// or the matrix of cross products), pooled from chains' Welford moments
/// (Chan et al.'s combination).
#[derive(Clone, Debug)]
struct Moments {
    metric: Metric,
    n: f64,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl Moments {
    fn new(dim: usize, metric: Metric) -> Moments {
        Moments {
            metric,
            n: 0.0,
            mean: vec![0.0; dim],
            m2: vec![0.0; m2_len(dim, metric)],
        }
    }

    /// Adds the points `report` summarizes.
    fn merge(&mut self, report: &ChainReport) {
        if report.n == 0 {
            return;
        }
        let nb = report.n as f64;
        let total = self.n + nb;
        let dim = self.mean.len();
        if self.metric == Metric::Diag {
            for ((mean, m2), (&mean_b, &m2_b)) in
                (self.mean.iter_mut().zip(&mut self.m2)).zip(report.mean.iter().zip(&report.m2))
            {
                let delta = mean_b - *mean;
                *mean += delta * nb / total;
                *m2 += m2_b + delta * delta * self.n * nb / total;
            }
        } else {
            let delta: Vec<f64> = (report.mean.iter().zip(&self.mean))
                .map(|(b, a)| b - a)
                .collect();
            let weight = self.n * nb / total;
            for (k, (m2, m2_b)) in self.m2.iter_mut().zip(&report.m2).enumerate() {
                *m2 += m2_b + delta[k / dim] * delta[k % dim] * weight;
            }
            for (mean, d) in self.mean.iter_mut().zip(&delta) {
                *mean += d * nb / total;
            }
        }
        self.n = total;
    }

    /// The window's inverse metric in the form its sums say, regularized
    /// as Stan does; None when a dense one has no Cholesky factor (the
    /// chains keep the metric they had).
    fn inv_metric(&self) -> Option<InvMetric> {
        let n = self.n;
        if self.metric == Metric::Diag {
            return Some(InvMetric::Diag(Arc::from(regularized_variance(
                n, &self.m2,
            ))));
        }
        let matrix = regularized_covariance(n, &self.m2, self.mean.len());
        let factor = cholesky_lower(&matrix, self.mean.len())?;
        Some(InvMetric::Dense {
            matrix: Arc::from(matrix),
            factor: Arc::from(factor),
        })
    }
}

/// Stan's regularized variance of `n` points, (n/(n + 5))·var + 10⁻³·5/(n + 5).
fn regularized_variance(n: f64, m2: &[f64]) -> Vec<f64> {
    m2.iter()
        .map(|&s| (n / (n + 5.0)) * (s / (n - 1.0)) + 1e-3 * (5.0 / (n + 5.0)))
        .collect()
}

/// Stan's regularized covariance of `n` points from their d×d sums of
/// cross products (row-major), (n/(n + 5))·Σ + 10⁻³·5/(n + 5)·I.
fn regularized_covariance(n: f64, m2: &[f64], dim: usize) -> Vec<f64> {
    m2.iter()
        .enumerate()
        .map(|(k, &s)| {
            let shrink = if k / dim == k % dim {
                1e-3 * (5.0 / (n + 5.0))
            } else {
                0.0
            };
            (n / (n + 5.0)) * (s / (n - 1.0)) + shrink
        })
        .collect()
}

/// The lower Cholesky factor L (row-major) of a symmetric d×d matrix
/// (row-major), A = L Lᵀ; None unless A is numerically positive definite.
fn cholesky_lower(a: &[f64], dim: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; dim * dim];
    for i in 0..dim {
        for j in 0..=i {
            let dot: f64 = (0..j).map(|k| l[i * dim + k] * l[j * dim + k]).sum();
            let s = a[i * dim + j] - dot;
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i * dim + i] = s.sqrt();
            } else {
                l[i * dim + j] = s / l[j * dim + j];
            }
        }
    }
    Some(l)
}

/// The step size that would bring the mean acceptance statistic `accept`
/// (measured at `step_size`) to `delta`, if 1 − a ∝ ε².
fn step_size_target(step_size: f64, accept: f64, delta: f64) -> f64 {
    let accept = if accept.is_nan() {
        0.0
    } else {
        accept.clamp(0.0, 0.999)
    };
    let factor = ((1.0 - delta) / (1.0 - accept)).sqrt().clamp(0.25, 4.0);
    step_size * factor
}

/// Runs pooled warmup for `chains` (this rank's share of `n_chains`) of
/// `job` with `executor`; `gather` brings every rank's reports.
pub fn warmup(
    executor: &dyn SamplerExecutor,
    job: &ChainJob<'_>,
    chains: &[usize],
    n_chains: usize,
    gather: &dyn Gather,
    control: &Control,
) -> Result<Pooled, PooledError> {
    let settings = job.settings;
    let dim = job.model.num_unconstrained();
    let mut kernel: Option<Kernel> = None;
    let mut starts: Option<Arc<[Vec<f64>]>> = None;
    let mut gradient_evaluations = 0;
    let mut divergences = 0;
    let mut restarted = Vec::new();
    let mut window = Moments::new(dim, settings.metric);
    // Step-size targets (and with ChEES trajectory lengths) since the last
    // metric update.
    let mut targets: Vec<f64> = Vec::new();
    let mut lengths: Vec<f64> = Vec::new();
    let mut length_adaptation = TrajectoryLengthAdaptation::new();
    let segments = schedule(settings.num_warmup);
    for (k, segment) in segments.iter().enumerate() {
        let segment_settings = Settings {
            num_warmup: 0,
            num_samples: segment.end - segment.start,
            thin: 1,
            save_warmup: false,
            seed: segment_seed(settings.seed, k),
            init: starts
                .clone()
                .map_or_else(|| settings.init.clone(), Init::PerChain),
            kernel: kernel.clone(),
            report_points: true,
            jitter_start: settings.jitter_start + segment.start,
            ..settings.clone()
        };
        let segment_job = ChainJob {
            model: job.model,
            grad: job.grad,
            settings: &segment_settings,
        };
        let (all, evaluations) =
            run_segment(executor, &segment_job, chains, n_chains, gather, control)?;
        gradient_evaluations += evaluations;
        divergences += all.iter().map(|r| r.divergences).sum::<usize>();
        // Stuck chains restart from the others' points and count for
        // nothing: their acceptance and spread would skew the kernel.
        let stuck = if segment.restarts {
            stuck_chains(&all)
        } else {
            vec![false; all.len()]
        };
        let good: Vec<ChainReport> = all
            .iter()
            .zip(&stuck)
            .filter(|(_, is_stuck)| !**is_stuck)
            .map(|(r, _)| r.clone())
            .collect();
        let iterations: f64 = good.iter().map(|r| r.n as f64).sum();
        let accept = good.iter().map(|r| r.accept_sum).sum::<f64>() / iterations;
        // The step size the segment ran with: the shared one, or in the
        // first segment the geometric mean of the chains' own.
        let step_size = match &kernel {
            Some(kernel) => kernel.step_size,
            None => (good.iter().map(|r| r.log_step_sum).sum::<f64>() / iterations).exp(),
        };
        let target = step_size_target(step_size, accept, settings.adapt_delta);
        targets.push(target);
        let mut inv_metric = kernel.as_ref().map_or_else(
            || InvMetric::unit(settings.metric, dim),
            |k| k.inv_metric.clone(),
        );
        let trajectory_length = match settings.algorithm {
            Algorithm::Nuts => None,
            Algorithm::Chees => {
                let length = kernel
                    .as_ref()
                    .and_then(|k| k.trajectory_length)
                    .unwrap_or(step_size);
                let length = length_adaptation.update(length, &good, &inv_metric, dim);
                let length = length.clamp(target, MAX_LEAPFROG_STEPS * target);
                lengths.push(length);
                Some(length)
            }
        };
        if segment.in_window {
            // In chain order, so the same on every executor.
            for report in &good {
                window.merge(report);
            }
        }
        if segment.closes_window && window.n > 1.0 {
            if let Some(adapted) = window.inv_metric() {
                inv_metric = adapted;
            }
            window = Moments::new(dim, settings.metric);
            targets.clear();
            lengths.clear();
        }
        kernel = Some(Kernel {
            step_size: target,
            inv_metric,
            trajectory_length,
        });
        // The k-th stuck chain restarts at the point of the k-th good
        // chain (cycling): chain order, so the same on every executor.
        let mut donors = good.iter().cycle();
        starts = Some(
            all.into_iter()
                .zip(&stuck)
                .map(|(r, &is_stuck)| {
                    if is_stuck && let Some(donor) = donors.next() {
                        restarted.push(r.chain);
                        return donor.point.clone();
                    }
                    r.point
                })
                .collect(),
        );
    }
    let kernel = kernel.map(|mut kernel| {
        // The step size: the geometric mean of the later half of the
        // targets since the last metric update (the first ones still move
        // from the step size of the metric before); the trajectory
        // length: the geometric mean of its values since then.
        if let Some(step_size) = geometric_mean(&targets[targets.len() / 2..]) {
            kernel.step_size = step_size;
        }
        if let (Some(length), Some(_)) = (geometric_mean(&lengths), kernel.trajectory_length) {
            kernel.trajectory_length = Some(length);
        }
        kernel
    });
    match (kernel, starts) {
        (Some(kernel), Some(starts)) => Ok(Pooled {
            kernel,
            starts,
            segments: segments.len(),
            gradient_evaluations,
            divergences,
            restarted: {
                restarted.sort_unstable();
                restarted.dedup();
                restarted
            },
        }),
        _ => Err(PooledError::Gather(
            "pooled warmup needs at least one warmup iteration".into(),
        )),
    }
}

fn geometric_mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// Runs one segment (`job`, whose settings are the segment's) for this
/// rank's `chains` and brings every rank's reports, in chain order; and
/// this rank's gradient evaluations.
fn run_segment(
    executor: &dyn SamplerExecutor,
    job: &ChainJob<'_>,
    chains: &[usize],
    n_chains: usize,
    gather: &dyn Gather,
    control: &Control,
) -> Result<(Vec<ChainReport>, u64), PooledError> {
    let settings = job.settings;
    let dim = job.model.num_unconstrained();
    let mut gradient_evaluations = 0;
    let mut reports: Vec<ChainReport> = chains
        .iter()
        .map(|&c| ChainReport::new(c, dim, settings.metric))
        .collect();
    let index_of = |chain: usize| chains.binary_search(&chain).ok();
    let mut failures = Vec::new();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || executor.run(job, chains, &tx, control));
        for event in rx.iter().flat_map(Event::flatten) {
            match event {
                Event::Iteration { chain, record } => {
                    if let (Some(i), Some(point)) = (index_of(chain), record.point) {
                        reports[i].add(&record.stats, point);
                    }
                }
                Event::Trajectory { chain, trajectory } => {
                    if let Some(i) = index_of(chain) {
                        reports[i].pending = Some(trajectory);
                    }
                }
                Event::Finished { result, .. } => match result {
                    Ok(totals) => gradient_evaluations += totals.gradient_evaluations,
                    Err(error) => failures.push(error),
                },
                _ => {}
            }
        }
    });
    if let Some(first) = failures.into_iter().min_by_key(|e| e.chain) {
        // The other ranks learn of it at the exchange and stop too.
        let _ = gather.gather(Err(format!(
            "chain {} failed in pooled warmup: {}",
            first.chain + 1,
            first.error.message
        )));
        return Err(PooledError::Chain(first));
    }
    let width = ChainReport::width(dim, settings.num_samples, settings);
    let mut mine = Vec::with_capacity(reports.len() * width);
    for report in &reports {
        report.write(&mut mine);
    }
    let all = gather.gather(Ok(mine)).map_err(PooledError::Gather)?;
    let mut all: Vec<ChainReport> = all
        .chunks_exact(width)
        .map(|r| ChainReport::read(r, dim, settings.metric))
        .collect();
    all.sort_by_key(|r| r.chain);
    if all.len() != n_chains || all.iter().enumerate().any(|(i, r)| r.chain != i) {
        return Err(PooledError::Gather(format!(
            "pooled warmup got the reports of {} chains, expected {n_chains}",
            all.len()
        )));
    }
    Ok((all, gradient_evaluations))
}

/// The most leapfrog steps of a ChEES trajectory (before its jitter): the
/// trajectory length is held within one and this many step sizes.
pub const MAX_LEAPFROG_STEPS: f64 = 1000.0;

/// Adam's learning rate for the log trajectory length, per iteration (the
/// paper's).
const CHEES_LEARNING_RATE: f64 = 0.025;

/// The largest change of the log trajectory length in one iteration
/// (about log(2)/2, as TFP and BlackJAX clip it).
const CHEES_MAX_LOG_STEP: f64 = 0.35;

/// ChEES adaptation of jittered HMC's trajectory length T (Hoffman, Radul
/// & Sountsov 2021): gradient ascent with Adam on log T of the ChEES rate
/// ChEES/T (TFP's `chees_rate_criterion`), ChEES = ¼ E[(‖q′ − E q′‖² −
/// ‖q − E q‖²)²] being the change in the chains' expected squared distance
/// from their mean over one trajectory and T its cost: ChEES alone is
/// nearly flat past its first maximum, with later local maxima that cost
/// more gradients for nothing. Every iteration, across all chains, ChEES
/// is estimated as the acceptance-weighted mean of ¼(‖q̃′‖² − ‖q̃‖²)² and
/// its gradient in log T as that of t·(‖q̃′‖² − ‖q̃‖²)·(q̃′·ṽ′), over
/// non-divergent trajectories: t is the trajectory's length ⌈u·T/ε⌉·ε
/// (which grows with T as u·T does), q̃ its start and q̃′ its end centered
/// on the chains' means, ṽ′ the velocity there, all in coordinates scaled
/// by the metric (q/√M⁻¹; for a dense metric the sampler's whitened
/// coordinates L⁻¹q, in which it reports trajectories) so that every
/// coordinate counts alike. The rate's gradient in log T is then
/// gradient/ChEES − 1.
#[derive(Clone, Debug)]
struct TrajectoryLengthAdaptation {
    /// Adam's moments and steps taken.
    first: f64,
    second: f64,
    steps: i32,
}

impl TrajectoryLengthAdaptation {
    fn new() -> TrajectoryLengthAdaptation {
        TrajectoryLengthAdaptation {
            first: 0.0,
            second: 0.0,
            steps: 0,
        }
    }

    /// The trajectory length after the iterations of a segment run with
    /// `length` (one Adam step each, in order; the chains of `reports`, in
    /// chain order).
    fn update(
        &mut self,
        length: f64,
        reports: &[ChainReport],
        inv_metric: &InvMetric,
        dim: usize,
    ) -> f64 {
        let scale: Vec<f64> = match inv_metric {
            InvMetric::Diag(diagonal) => diagonal.iter().map(|v| 1.0 / v.sqrt()).collect(),
            InvMetric::Dense { .. } => vec![1.0; dim],
        };
        let iterations: Vec<Vec<TrajectoryRecord<'_>>> = reports
            .iter()
            .map(|r| r.trajectories(dim).collect())
            .collect();
        let n = iterations.iter().map(Vec::len).min().unwrap_or(0);
        const BETA1: f64 = 0.9;
        const BETA2: f64 = 0.999;
        let mut log_length = length.ln();
        for j in 0..n {
            let at_j: Vec<&TrajectoryRecord<'_>> =
                iterations.iter().map(|chain| &chain[j]).collect();
            let (criterion, criterion_gradient) = chees_estimate(&at_j, &scale);
            let gradient = criterion_gradient / criterion - 1.0;
            if !gradient.is_finite() {
                continue;
            }
            self.steps += 1;
            self.first = BETA1 * self.first + (1.0 - BETA1) * gradient;
            self.second = BETA2 * self.second + (1.0 - BETA2) * gradient * gradient;
            let first = self.first / (1.0 - BETA1.powi(self.steps));
            let second = self.second / (1.0 - BETA2.powi(self.steps));
            // Ascent: the rate is maximized.
            let step = CHEES_LEARNING_RATE * first / (second.sqrt() + 1e-8);
            log_length += step.clamp(-CHEES_MAX_LOG_STEP, CHEES_MAX_LOG_STEP);
        }
        log_length.exp()
    }
}

/// The ChEES criterion and its gradient with respect to log T estimated
/// from one iteration of every chain (`scale`: the metric's 1/√M⁻¹).
fn chees_estimate(iteration: &[&TrajectoryRecord<'_>], scale: &[f64]) -> (f64, f64) {
    let dim = scale.len();
    // The proposals' mean weighted by acceptance (divergent and
    // non-finite ones count for nothing), the starts' plain mean.
    let mut end_mean = vec![0.0; dim];
    let mut start_mean = vec![0.0; dim];
    let mut weights = 0.0;
    for &t in iteration {
        let usable = !t.divergent && t.accept.is_finite() && t.end.iter().all(|x| x.is_finite());
        if usable {
            weights += t.accept;
            for (mean, x) in end_mean.iter_mut().zip(t.end) {
                *mean += t.accept * x;
            }
        }
        for (mean, x) in start_mean.iter_mut().zip(t.start) {
            *mean += x;
        }
    }
    end_mean.iter_mut().for_each(|m| *m /= weights + 1e-20);
    start_mean
        .iter_mut()
        .for_each(|m| *m /= iteration.len() as f64);
    let (mut criterion, mut gradient, mut total) = (0.0, 0.0, 0.0);
    for t in iteration.iter().filter(|t| !t.divergent) {
        let (mut end_sq, mut start_sq, mut end_dot_velocity) = (0.0, 0.0, 0.0);
        let ends = t.end.iter().zip(&end_mean);
        let starts = t.start.iter().zip(&start_mean);
        for (((end, start), velocity), scale) in ends.zip(starts).zip(t.velocity).zip(scale) {
            let end = (end.0 - end.1) * scale;
            let start = (start.0 - start.1) * scale;
            end_sq += end * end;
            start_sq += start * start;
            end_dot_velocity += end * velocity * scale;
        }
        let change = end_sq - start_sq;
        let change_gradient = t.time * change * end_dot_velocity;
        if change_gradient.is_finite() {
            criterion += t.accept * 0.25 * change * change;
            gradient += t.accept * change_gradient;
            total += t.accept + 1e-20;
        }
    }
    (criterion / total, gradient / total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The segments tile the warmup, cut every SYNC_EVERY iterations and
    /// at Stan's window ends (for 1000 iterations: 75 + 25, 50, 100, 200,
    /// 500 stretched to the terminal buffer of 50).
    #[test]
    fn segments_follow_stans_windows() {
        let segments = schedule(1000);
        assert_eq!(segments[0].start, 0);
        assert_eq!(segments.last().unwrap().end, 1000);
        for pair in segments.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        assert!(segments.iter().all(|s| s.end - s.start <= SYNC_EVERY));
        let closes: Vec<usize> = segments
            .iter()
            .filter(|s| s.closes_window)
            .map(|s| s.end)
            .collect();
        assert_eq!(closes, vec![100, 150, 250, 450, 950]);
        let first_in = segments.iter().find(|s| s.in_window).unwrap();
        assert_eq!(first_in.start, 75);
        assert!(
            segments
                .iter()
                .filter(|s| s.start >= 950)
                .all(|s| !s.in_window)
        );
        // Short warmups: Stan's 15% / 75% / 10%.
        let short = schedule(100);
        let closes: Vec<usize> = short
            .iter()
            .filter(|s| s.closes_window)
            .map(|s| s.end)
            .collect();
        assert_eq!(closes, vec![90]);
        assert_eq!(short.iter().find(|s| s.in_window).unwrap().start, 15);
        // At least three step-size updates after the last metric update,
        // however short the terminal buffer (30 iterations: 3 of them).
        for warmup in [30, 100, 1000] {
            let segments = schedule(warmup);
            let last_close = segments.iter().rposition(|s| s.closes_window).unwrap();
            let after = segments.len() - 1 - last_close;
            assert!(after >= TERMINAL_UPDATES, "{warmup}: {segments:?}");
        }
        assert_eq!(
            schedule(30)
                .iter()
                .rev()
                .take(3)
                .map(|s| s.end - s.start)
                .sum::<usize>(),
            3
        );
        // No metric adaptation under 20 iterations.
        assert!(
            schedule(10)
                .iter()
                .all(|s| !s.in_window && !s.closes_window)
        );
    }

    /// Statistics of an iteration, where only its point matters.
    fn iteration_stats() -> super::super::SampleStats {
        super::super::SampleStats {
            lp: 0.0,
            accept_stat: 0.5,
            step_size: 1.0,
            tree_depth: 1,
            n_leapfrog: 1,
            divergent: false,
            energy: 0.0,
        }
    }

    /// Chan's combination equals the moments of all points at once.
    #[test]
    fn pooled_moments_are_those_of_all_points() {
        let points = [
            [1.0, -2.0],
            [3.0, 0.5],
            [-4.0, 2.0],
            [0.25, 8.0],
            [2.0, 2.0],
        ];
        let mut a = ChainReport::new(0, 2, Metric::Diag);
        let mut b = ChainReport::new(1, 2, Metric::Diag);
        let stats = iteration_stats();
        for (i, p) in points.iter().enumerate() {
            let target = if i < 2 { &mut a } else { &mut b };
            target.add(&stats, p.to_vec());
        }
        let mut pooled = Moments::new(2, Metric::Diag);
        pooled.merge(&a);
        pooled.merge(&b);
        let (n, mean, m2) = (pooled.n, pooled.mean, pooled.m2);
        assert_eq!(n, 5.0);
        for d in 0..2 {
            let m = points.iter().map(|p| p[d]).sum::<f64>() / 5.0;
            let s: f64 = points.iter().map(|p| (p[d] - m).powi(2)).sum();
            assert!((mean[d] - m).abs() < 1e-12);
            assert!((m2[d] - s).abs() < 1e-12);
        }
    }

    /// The dense window: chains' Welford cross products, sent through
    /// their records and pooled in chain order, are the two-pass
    /// covariance of all their points; regularized as Stan's dense_e and
    /// factored, L Lᵀ gives it back.
    #[test]
    fn pooled_covariance_is_that_of_all_points() {
        let dim = 3;
        // Correlated points (a fixed linear map of a low-discrepancy
        // sequence), split over chains of unequal lengths.
        let points: Vec<Vec<f64>> = (0..40)
            .map(|i| {
                let u = |k: u64| {
                    ((segment_seed(11, 3 * i + k as usize) >> 11) as f64) / (1u64 << 53) as f64
                        - 0.5
                };
                let (a, b, c) = (u(0), u(1), u(2));
                vec![
                    10.0 + 3.0 * a,
                    -2.0 + 2.0 * a + 0.5 * b,
                    0.1 * c - a + 100.0,
                ]
            })
            .collect();
        let stats = iteration_stats();
        let sizes = [1, 13, 0, 26];
        let mut pooled = Moments::new(dim, Metric::Dense);
        let mut next = points.iter();
        let settings = Settings::stan_defaults(0, 1, 1);
        let settings = Settings {
            metric: Metric::Dense,
            ..settings
        };
        for (chain, &size) in sizes.iter().enumerate() {
            let mut report = ChainReport::new(chain, dim, Metric::Dense);
            for point in next.by_ref().take(size) {
                report.add(&stats, point.clone());
            }
            // As every rank reads it after the exchange.
            let mut record = Vec::new();
            report.write(&mut record);
            assert_eq!(record.len(), ChainReport::width(dim, size, &settings));
            pooled.merge(&ChainReport::read(&record, dim, Metric::Dense));
        }
        let n = points.len() as f64;
        assert_eq!(pooled.n, n);
        let mean: Vec<f64> = (0..dim)
            .map(|d| points.iter().map(|p| p[d]).sum::<f64>() / n)
            .collect();
        for i in 0..dim {
            assert!((pooled.mean[i] - mean[i]).abs() < 1e-12);
            for j in 0..dim {
                let s: f64 = points
                    .iter()
                    .map(|p| (p[i] - mean[i]) * (p[j] - mean[j]))
                    .sum();
                let got = pooled.m2[i * dim + j];
                assert!(
                    (got - s).abs() < 1e-12 * s.abs().max(1.0),
                    "{i},{j}: {got} vs {s}"
                );
                assert_eq!(got, pooled.m2[j * dim + i]);
            }
        }
        let Some(InvMetric::Dense { matrix, factor }) = pooled.inv_metric() else {
            panic!("a dense metric");
        };
        for i in 0..dim {
            for j in 0..dim {
                let s: f64 = points
                    .iter()
                    .map(|p| (p[i] - mean[i]) * (p[j] - mean[j]))
                    .sum();
                let stan = (n / (n + 5.0)) * s / (n - 1.0)
                    + if i == j { 1e-3 * 5.0 / (n + 5.0) } else { 0.0 };
                assert!((matrix[i * dim + j] - stan).abs() < 1e-12);
                let product: f64 = (0..dim)
                    .map(|k| factor[i * dim + k] * factor[j * dim + k])
                    .sum();
                assert!((product - stan).abs() < 1e-12, "L Lᵀ at {i},{j}");
                if j > i {
                    assert_eq!(factor[i * dim + j], 0.0);
                }
            }
        }
        // One coordinate: a dense metric still (a 1×1 matrix).
        let mut one = Moments::new(1, Metric::Dense);
        let mut report = ChainReport::new(0, 1, Metric::Dense);
        for x in [1.0, 2.0, 4.0] {
            report.add(&stats, vec![x]);
        }
        one.merge(&report);
        assert!(matches!(one.inv_metric(), Some(InvMetric::Dense { .. })));
        // A matrix that is not positive definite has no factor.
        assert_eq!(cholesky_lower(&[1.0, 2.0, 2.0, 1.0], 2), None);
    }

    /// A chain far below the others is stuck; the spread of the others
    /// is not.
    #[test]
    fn stuck_chains_are_far_below_the_others() {
        let report = |chain: usize, lp: f64| ChainReport {
            n: 5,
            lp_sum: 5.0 * lp,
            ..ChainReport::new(chain, 1, Metric::Diag)
        };
        let lps = [
            28.1, 25.3, 28.2, 28.1, 27.9, 28.1, 28.5, 28.3, -424.7, 27.7, 17.9, -12.0,
        ];
        let reports: Vec<ChainReport> = lps
            .iter()
            .enumerate()
            .map(|(i, &lp)| report(i, lp))
            .collect();
        let stuck = stuck_chains(&reports);
        let named: Vec<usize> = (0..lps.len()).filter(|&i| stuck[i]).collect();
        // 17.9 is within reach of the spread that 25.3 opens.
        assert_eq!(named, vec![8, 11]);
        // A wide but unbroken spread (chains still converging together).
        let spread: Vec<ChainReport> = (0..16).map(|i| report(i, -10.0 * i as f64)).collect();
        assert!(stuck_chains(&spread).iter().all(|s| !s));
        // Too few chains to tell.
        assert!(stuck_chains(&reports[7..10]).iter().all(|s| !s));
    }

    /// For a standard normal and exact Hamiltonian flow (q(t) = q₀ cos t +
    /// p sin t), ChEES(t) = ¼E[(q(t)² − q₀²)²] = sin²t, so its gradient in
    /// log t is t·sin 2t: rising before t = π/2, falling after. The
    /// estimates over many chains find both, also when the coordinate has
    /// variance 4 and the metric says so.
    #[test]
    fn chees_estimates_are_the_criterion_and_its_gradient() {
        let uniform = |k: usize| ((segment_seed(7, k) >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let normal = |k: usize| {
            let (u, v) = (uniform(2 * k), uniform(2 * k + 1));
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let chains = 200_000;
        let sd = 2.0;
        for t in [0.5f64, 1.0, 2.0, 2.5] {
            let records: Vec<Vec<f64>> = (0..chains)
                .map(|i| {
                    let (q0, p) = (normal(2 * i), normal(2 * i + 1));
                    let q = q0 * t.cos() + p * t.sin();
                    let velocity = -q0 * t.sin() + p * t.cos();
                    vec![sd * q0, sd * q, sd * velocity, t, 1.0, 0.0]
                })
                .collect();
            let trajectories: Vec<TrajectoryRecord<'_>> = records
                .iter()
                .map(|r| TrajectoryRecord::read(r, 1))
                .collect();
            let refs: Vec<&TrajectoryRecord<'_>> = trajectories.iter().collect();
            let (criterion, gradient) = chees_estimate(&refs, &[1.0 / sd]);
            let exact = t.sin().powi(2);
            assert!(
                (criterion - exact).abs() < 0.03,
                "t {t}: ChEES {criterion} vs {exact}"
            );
            let exact = t * (2.0 * t).sin();
            assert!(
                (gradient - exact).abs() < 0.05 + 0.05 * exact.abs(),
                "t {t}: gradient {gradient} vs {exact}"
            );
        }
    }

    /// The Newton step lands on delta when 1 − a ∝ ε² holds exactly.
    #[test]
    fn step_size_target_solves_the_acceptance_model() {
        let c = 0.3;
        let accept_at = |eps: f64| 1.0 - c * eps * eps;
        let target = step_size_target(0.5, accept_at(0.5), 0.8);
        assert!((accept_at(target) - 0.8).abs() < 1e-12);
        // Far off: the factor is held within [1/4, 4].
        assert!((step_size_target(1.0, 0.0, 0.8) - 0.2f64.sqrt()).abs() < 1e-15);
        assert_eq!(step_size_target(1.0, 1.0, 0.8), 4.0);
    }
}
