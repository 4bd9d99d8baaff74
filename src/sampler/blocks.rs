//! Each chain's draws not yet in the file, and how they get there: as
//! rectangles of consecutive chains × the same draws.
//!
//! Why rectangles: every HDF5 write costs about 60 k instructions and
//! a system call or two whatever its size, and the collector competes with
//! the sampler threads for the cores. Written one chain's block at a time,
//! eight schools' 1024 chains × 200 draws took 22 k writes (11 datasets ×
//! 2 blocks × 1024 chains), a fifth of a 2-core machine's CPU during
//! sampling. Blocks that are ready together are written together: the
//! batched executors run all chains in step, so chains reach a block's end
//! at about the same time; the native backend runs a thread's chains one
//! after another, each finishing in milliseconds, so the chains finished
//! since the last write all have the same complete range.
//!
//! A chain's block is complete after [`BLOCK_DRAWS`] draws, or when the
//! chain finishes (its last, shorter block). [`write_ready`] writes every
//! complete block, grouped: chains `a..b` whose pending ranges are equal
//! (same first draw, same count) go in one write per dataset.

use super::{DrawRecord, SampleStats};
use crate::output::{Column, DrawWriter, Dtype, GroupKind, OutputError, SampleStatsBlock, VarSpec};
use language::value::Value;
use std::ops::Range;

/// Draws per chain in a complete block.
pub const BLOCK_DRAWS: usize = 100;

/// Draws of one chain in one phase (warmup or sampling) not yet written.
#[derive(Default)]
pub struct ChainBuffer {
    /// Draw index (in its group) of the first buffered draw.
    pub start: usize,
    len: usize,
    /// One flat buffer per variable, draws one after another.
    values: Vec<Vec<f64>>,
    is_int: Vec<bool>,
    stats: Vec<SampleStats>,
}

impl ChainBuffer {
    /// Appends `record`'s draw (its values already split into variables
    /// without tuples, as the file stores them).
    pub fn push(&mut self, values: &[(String, Value)], stats: SampleStats) {
        if self.values.is_empty() {
            self.values = vec![Vec::new(); values.len()];
            self.is_int = values
                .iter()
                .map(|(_, v)| matches!(v.stored_dims(), Some((_, true))))
                .collect();
        }
        for (buffer, (_, value)) in self.values.iter_mut().zip(values) {
            value.flatten_row_major(buffer);
        }
        self.stats.push(stats);
        self.len += 1;
    }

    /// Appends a draw given as stored numbers: the variables of `layout`,
    /// one after another (`numbers` holds exactly their elements).
    pub fn push_stored(&mut self, layout: &[VarSpec], numbers: &[f64], stats: SampleStats) {
        if self.values.is_empty() {
            self.values = vec![Vec::new(); layout.len()];
            self.is_int = layout.iter().map(|v| v.dtype == Dtype::I64).collect();
        }
        let mut rest = numbers;
        for (buffer, var) in self.values.iter_mut().zip(layout) {
            let (these, after) = rest.split_at(var.elements_per_draw());
            buffer.extend_from_slice(these);
            rest = after;
        }
        self.stats.push(stats);
        self.len += 1;
    }

    /// Buffered draws.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Draws to write now: the complete blocks (all draws once the chain
    /// is `finished`).
    fn ready(&self, finished: bool) -> usize {
        if finished {
            self.len
        } else {
            self.len / BLOCK_DRAWS * BLOCK_DRAWS
        }
    }

    /// Elements per draw of each variable.
    fn widths(&self) -> Vec<usize> {
        self.values
            .iter()
            .map(|v| v.len().checked_div(self.len).unwrap_or(0))
            .collect()
    }

    /// Forgets the first `count` draws (written).
    fn drop_front(&mut self, count: usize) {
        let widths = self.widths();
        for (v, w) in self.values.iter_mut().zip(widths) {
            v.drain(..count * w);
        }
        self.stats.drain(..count);
        self.start += count;
        self.len -= count;
    }
}

/// Consecutive chains with the same key: `(chains, key)`, in chain order.
/// `keys[c]` is chain `c`'s (its pending draws and how they are stored),
/// `None` when it has nothing pending, which splits runs.
pub fn runs<K: PartialEq>(keys: Vec<Option<K>>) -> Vec<(Range<usize>, K)> {
    let mut out: Vec<(Range<usize>, K)> = Vec::new();
    for (chain, key) in keys.into_iter().enumerate() {
        let Some(key) = key else { continue };
        match out.last_mut() {
            Some((chains, k)) if chains.end == chain && *k == key => chains.end += 1,
            _ => out.push((chain..chain + 1, key)),
        }
    }
    out
}

/// Writes every ready block of `phase`'s buffers (`buffers[c]` is chain
/// `c`'s; `finished[c]` whether chain `c` has finished), runs of chains
/// with equal ranges in one write per dataset. Returns the draws written
/// per chain summed over chains.
pub fn write_ready(
    writer: &mut DrawWriter,
    buffers: &mut [ChainBuffer],
    finished: &[bool],
    warmup: bool,
) -> Result<usize, OutputError> {
    // A run's chains have the same pending draws and store as many numbers
    // per draw (a model's sizes are fixed, but a chain whose are not must
    // fail the writer's check on its own, not shift its neighbours').
    let keys = buffers
        .iter()
        .zip(finished)
        .map(|(b, &done)| {
            let count = b.ready(done);
            (count > 0).then(|| (b.start, count, b.widths()))
        })
        .collect();
    let group = posterior_group(warmup);
    // Many draws at once (a fast backend, a slow disk) go in pieces of a
    // chunk row: should the disk fill, the pieces before stay written.
    let piece = writer.draws_per_chunk(group).unwrap_or(usize::MAX);
    let mut written = 0;
    for (chains, (start, count, widths)) in runs(keys) {
        let mut done = 0;
        while done < count {
            let from = start + done;
            let n = ((from / piece + 1).saturating_mul(piece)).min(start + count) - from;
            written += write_piece(writer, buffers, chains.clone(), from, n, &widths, warmup)?;
            done += n;
            if done < count {
                // Each piece on the disk before the next is reserved.
                writer.flush()?;
            }
        }
    }
    Ok(written)
}

/// Writes draws `start..start + count` of `chains` (the first `count` of
/// each buffer) and their statistics, and drops them from the buffers;
/// returns the post-warmup draws written.
fn write_piece(
    writer: &mut DrawWriter,
    buffers: &mut [ChainBuffer],
    chains: std::ops::Range<usize>,
    start: usize,
    count: usize,
    widths: &[usize],
    warmup: bool,
) -> Result<usize, OutputError> {
    let group = posterior_group(warmup);
    let run = &buffers[chains.clone()];
    // Each column laid out [chain][draw][element], as write_block wants.
    let mut floats: Vec<Vec<f64>> = widths
        .iter()
        .map(|w| Vec::with_capacity(chains.len() * count * w))
        .collect();
    for buffer in run {
        for ((column, values), w) in floats.iter_mut().zip(&buffer.values).zip(widths) {
            column.extend_from_slice(&values[..count * w]);
        }
    }
    let ints: Vec<Vec<i64>> = floats
        .iter()
        .zip(&run[0].is_int)
        .map(|(v, &is_int)| {
            if is_int {
                v.iter().map(|&x| x as i64).collect()
            } else {
                Vec::new()
            }
        })
        .collect();
    let columns: Vec<Column<'_>> = floats
        .iter()
        .zip(&run[0].is_int)
        .zip(&ints)
        .map(|((v, &is_int), i)| {
            if is_int {
                Column::I64(i)
            } else {
                Column::F64(v)
            }
        })
        .collect();
    let draws = start..start + count;
    writer.write_block(group, chains.clone(), draws.clone(), &columns)?;
    let stats: Vec<&SampleStats> = run.iter().flat_map(|b| &b.stats[..count]).collect();
    let lp: Vec<f64> = stats.iter().map(|x| x.lp).collect();
    let accept: Vec<f64> = stats.iter().map(|x| x.accept_stat).collect();
    let step: Vec<f64> = stats.iter().map(|x| x.step_size).collect();
    let depth: Vec<i64> = stats.iter().map(|x| x.tree_depth).collect();
    let steps: Vec<i64> = stats.iter().map(|x| x.n_leapfrog).collect();
    let divergent: Vec<bool> = stats.iter().map(|x| x.divergent).collect();
    let energy: Vec<f64> = stats.iter().map(|x| x.energy).collect();
    writer.write_sample_stats(
        warmup,
        chains.clone(),
        draws,
        &SampleStatsBlock {
            lp: &lp,
            acceptance_rate: &accept,
            step_size: &step,
            tree_depth: &depth,
            n_steps: &steps,
            diverging: &divergent,
            energy: &energy,
        },
    )?;
    for buffer in &mut buffers[chains.clone()] {
        buffer.drop_front(count);
    }
    Ok(if warmup { 0 } else { chains.len() * count })
}

/// The group of the draws of a phase.
fn posterior_group(warmup: bool) -> GroupKind {
    if warmup {
        GroupKind::WarmupPosterior
    } else {
        GroupKind::Posterior
    }
}

/// A record's draw goes to its chain's buffer of its phase.
pub fn phase(record: &DrawRecord) -> usize {
    usize::from(!record.warmup)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_of_consecutive_chains_make_one_run() {
        let keys = vec![
            Some((0, 100)),
            Some((0, 100)),
            Some((0, 100)),
            Some((100, 100)),
            None,
            Some((0, 100)),
            Some((0, 37)),
        ];
        assert_eq!(
            runs(keys),
            vec![
                (0..3, (0, 100)),
                (3..4, (100, 100)),
                (5..6, (0, 100)),
                (6..7, (0, 37))
            ]
        );
        assert_eq!(runs::<(usize, usize)>(vec![]), vec![]);
        assert_eq!(runs::<(usize, usize)>(vec![None, None]), vec![]);
    }

    /// A draws file of `n_chains` with `specs` in `posterior`.
    fn writer(
        dir: &tempfile::TempDir,
        specs: &[crate::output::VarSpec],
        n_chains: usize,
        planned: usize,
    ) -> (std::path::PathBuf, DrawWriter) {
        let path = dir.path().join("blocks.h5");
        let meta = crate::output::RunMetadata {
            model_name: "m".into(),
            model_source: String::new(),
            data_path: None,
            seed: 1,
            settings_json: "{}".into(),
        };
        let mut writer = DrawWriter::create(&path, &meta, specs, n_chains, planned).unwrap();
        writer.defer_flushes();
        (path, writer)
    }

    fn stats(lp: f64) -> SampleStats {
        SampleStats {
            lp,
            accept_stat: 0.5,
            step_size: 0.1,
            tree_depth: 2,
            n_leapfrog: 3,
            divergent: false,
            energy: 1.0,
        }
    }

    #[test]
    fn only_complete_blocks_are_ready_until_the_chain_finishes() {
        let mut b = ChainBuffer::default();
        let values = vec![("x".to_string(), Value::Real(1.0))];
        for k in 0..BLOCK_DRAWS + 7 {
            b.push(&values, stats(k as f64));
        }
        assert_eq!(b.ready(false), BLOCK_DRAWS);
        assert_eq!(b.ready(true), BLOCK_DRAWS + 7);
        b.drop_front(BLOCK_DRAWS);
        assert_eq!((b.start, b.len(), b.ready(false)), (BLOCK_DRAWS, 7, 0));
        assert_eq!(b.stats[0].lp, BLOCK_DRAWS as f64, "the oldest draws went");
    }

    /// Chain `c`'s draw `d`: x = 1000c + d, v[e] = x + e/10, k = x (int).
    fn draw(c: usize, d: usize) -> Vec<(String, Value)> {
        let x = (1000 * c + d) as f64;
        vec![
            ("x".to_string(), Value::Real(x)),
            (
                "v".to_string(),
                Value::Vector((0..3).map(|e| x + e as f64 / 10.0).collect()),
            ),
            ("k".to_string(), Value::Int(x as i64)),
        ]
    }

    fn push(buffers: &mut [ChainBuffer], chain: usize, draws: Range<usize>) {
        for d in draws {
            buffers[chain].push(&draw(chain, d), stats((1000 * chain + d) as f64));
        }
    }

    #[test]
    fn rectangles_put_every_chains_draws_where_they_belong() {
        let dir = tempfile::tempdir().unwrap();
        let specs = [
            crate::output::VarSpec::real("x", &[]),
            crate::output::VarSpec::real("v", &[3]),
            crate::output::VarSpec::int("k", &[]),
        ];
        let (path, mut writer) = writer(&dir, &specs, 4, 150);
        let mut buffers: Vec<ChainBuffer> = (0..4).map(|_| ChainBuffer::default()).collect();
        // Chains 0, 2 and 3 complete a block; chain 1 is part-way.
        push(&mut buffers, 0, 0..100);
        push(&mut buffers, 1, 0..30);
        push(&mut buffers, 2, 0..100);
        push(&mut buffers, 3, 0..100);
        let mut finished = [false; 4];
        assert_eq!(
            write_ready(&mut writer, &mut buffers, &finished, false).unwrap(),
            300
        );
        assert_eq!(
            buffers.iter().map(|b| b.start).collect::<Vec<_>>(),
            [100, 0, 100, 100]
        );
        // Then every chain finishes: 0 and 2 with 50 more; 1 with its 50
        // draws at once — as many as chains 0 and 2 write, but from draw 0
        // (not 100); 3 stops at 100 draws.
        push(&mut buffers, 0, 100..150);
        push(&mut buffers, 1, 30..50);
        push(&mut buffers, 2, 100..150);
        finished = [true; 4];
        assert_eq!(
            write_ready(&mut writer, &mut buffers, &finished, false).unwrap(),
            150
        );
        assert!(buffers.iter().all(|b| b.len() == 0));
        assert_eq!(
            buffers.iter().map(|b| b.start).collect::<Vec<_>>(),
            [150, 50, 150, 100]
        );
        writer.finish().unwrap();

        let file = crate::output::read_draws(&path).unwrap();
        let x = file.posterior_variable("x").unwrap();
        let v = file.posterior_variable("v").unwrap();
        let k = file.posterior_variable("k").unwrap();
        let lp = file.sample_stats.as_ref().unwrap();
        let lp = lp.iter().find(|s| s.name == "lp").unwrap();
        assert_eq!((x.n_chains, x.n_draws), (4, 150));
        for c in 0..4 {
            for d in 0..[150, 50, 150, 100][c] {
                let expected = (1000 * c + d) as f64;
                let at = c * 150 + d;
                assert_eq!(x.values[at], expected, "x chain {c} draw {d}");
                assert_eq!(k.values[at], expected, "k chain {c} draw {d}");
                assert_eq!(lp.values[at], expected, "lp chain {c} draw {d}");
                for e in 0..3 {
                    assert_eq!(v.values[3 * at + e], expected + e as f64 / 10.0, "v[{e}]");
                }
            }
        }
    }

    /// A chain whose draws store fewer numbers than its neighbours' (a
    /// size that changed) is written on its own and fails the writer's
    /// check with an error, not a panic or its neighbours' numbers shifted.
    #[test]
    fn a_chain_with_other_sizes_is_not_merged_into_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let (_, mut writer) = writer(&dir, &[crate::output::VarSpec::real("v", &[3])], 2, 100);
        let mut buffers: Vec<ChainBuffer> = (0..2).map(|_| ChainBuffer::default()).collect();
        for d in 0..BLOCK_DRAWS {
            let v = |n: usize| vec![("v".to_string(), Value::Vector(vec![d as f64; n]))];
            buffers[0].push(&v(3), stats(0.0));
            buffers[1].push(&v(2), stats(0.0));
        }
        let error = write_ready(&mut writer, &mut buffers, &[false, false], false).unwrap_err();
        assert!(error.to_string().contains("values"), "{error}");
        assert_eq!(buffers[0].start, BLOCK_DRAWS, "chain 0 written");
        assert_eq!(buffers[1].start, 0, "chain 1 not");
    }
}
