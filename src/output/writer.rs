//! Incremental writer of draws into a netCDF-4-compatible InferenceData HDF5 file.
//!
//! Layout: one group per [`GroupKind`]; in each, one dataset per variable shaped
//! (chain, draw, dims...) with an unlimited draw axis, chunked chain-block ×
//! draw-block, and the coordinate datasets `chain`, `draw`, `<var>_dim_<k>` marked as
//! dimension scales and attached to every axis. Each `write_block` extends the draw
//! axis as needed, writes, and flushes the file, so a killed process leaves a file
//! that readers open with every block written so far.

use super::dimscale::{attach_scale, set_scale};
use super::error::OutputError;
use super::room::Reservation;
use super::spec::{
    Column, Dtype, GroupKind, RunMetadata, SampleStatsBlock, VarSpec, sample_stats_specs,
};
use hdf5::plist::file_create::{AttrCreationOrder, LinkCreationOrder};
use hdf5::types::VarLenUnicode;
use hdf5::{Dataset, Extent, File, Group, Hyperslab, Selection, SimpleExtents, SliceOrIndex};
use ndarray::ArrayViewD;
use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Most bytes per chunk: small enough for the default 1 MiB chunk cache.
const CHUNK_BYTES: usize = 1 << 20;
/// Most draws per chunk (a chunk holds one chain's draws: see [`draw_block`]).
const MAX_DRAW_BLOCK: usize = 1024;

/// How the file is laid out beyond its variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterOptions {
    pub n_chains: usize,
    /// Planned post-warmup draws per chain (sizes chunks; the axis grows as needed).
    pub n_draws_planned: usize,
    /// Planned warmup draws per chain; `Some` creates the warmup groups.
    pub n_warmup_planned: Option<usize>,
}

/// Writes draws of one run, block by block.
pub struct DrawWriter {
    path: PathBuf,
    file: File,
    n_chains: usize,
    groups: Vec<GroupWriter>,
    /// [`DrawWriter::write_block`] leaves flushing to the caller.
    deferred: bool,
    /// Blocks were written since the last flush.
    unflushed: bool,
    /// Disk blocks reserved ahead of the writes (see [`super::room`]).
    room: Reservation,
    /// Bytes kept free beyond what the next write needs, for the metadata
    /// of later flushes and of closing the file.
    slack: u64,
    /// The `run_status` written last.
    status: RunStatus,
    /// Block writes so far, and the one the test switch
    /// `BAT_TEST_FAIL_WRITE` fails from.
    writes: u64,
    fail_from: Option<u64>,
}

/// How a run stands, as the attribute `run_status` (of the root and of
/// every group) says: `running`
/// until the file is closed (so a killed run's file says so), then
/// `complete`, `interrupted` (Ctrl-C) or `failed` (a chain's error or a
/// write the disk refused; `run_status_reason` says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunStatus {
    Running,
    Complete,
    Interrupted,
    Failed,
}

impl RunStatus {
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// The value of an attribute set with [`DrawWriter::set_attributes`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Attribute<'a> {
    Text(&'a str),
    Real(f64),
    Int(i64),
}

struct GroupWriter {
    kind: GroupKind,
    group: Group,
    draw_scale: Dataset,
    variables: Vec<(VarSpec, Dataset)>,
    /// Current length of the draw axis.
    n_draws: usize,
    /// Per chain, the draws written (each chain's draws are written in
    /// order from the first): the group's attribute `draws_per_chain`.
    reached: Vec<usize>,
    /// `reached` as the file last recorded it.
    recorded: Vec<usize>,
    /// (draws per chunk, bytes of one chain's chunk) of each variable.
    chunks: Vec<(usize, u64)>,
}

/// Bytes kept free beyond what the next write needs (see `slack`).
const BASE_SLACK: u64 = 1 << 20;

impl DrawWriter {
    /// Creates (truncating) `path` with `posterior` holding `variables` and
    /// `sample_stats` holding Stan's NUTS statistics.
    pub fn create(
        path: impl AsRef<Path>,
        meta: &RunMetadata,
        variables: &[VarSpec],
        n_chains: usize,
        n_draws_planned: usize,
    ) -> Result<Self, OutputError> {
        let options = WriterOptions {
            n_chains,
            n_draws_planned,
            n_warmup_planned: None,
        };
        Self::create_with(path, meta, variables, &options)
    }

    /// Like [`DrawWriter::create`], with warmup groups when requested.
    pub fn create_with(
        path: impl AsRef<Path>,
        meta: &RunMetadata,
        variables: &[VarSpec],
        options: &WriterOptions,
    ) -> Result<Self, OutputError> {
        let path = path.as_ref().to_path_buf();
        if options.n_chains == 0 {
            return Err(OutputError::InvalidWrite(
                "at least one chain is needed".into(),
            ));
        }
        check_names(variables)?;
        // The v1.8 format (as netCDF-4 itself writes) stores large attributes densely:
        // a scale's REFERENCE_LIST outgrows 64 KiB past ~4000 attached variables.
        // Keeping the low bound below v1.10 keeps superblock v2, which has no
        // "file is open for writing" flag to trip readers after a crash.
        let file = File::with_options()
            .with_fapl(|p| p.libver_v18())
            .with_fcpl(|p| {
                p.link_creation_order(LinkCreationOrder::Indexed)
                    .attr_creation_order(AttrCreationOrder::Indexed)
            })
            .create(&path)?;
        write_root_attributes(&file, meta)?;
        let stats = sample_stats_specs();
        let mut plan = vec![
            (GroupKind::Posterior, variables, options.n_draws_planned),
            (GroupKind::SampleStats, &stats[..], options.n_draws_planned),
        ];
        if let Some(warmup) = options.n_warmup_planned {
            plan.push((GroupKind::WarmupPosterior, variables, warmup));
            plan.push((GroupKind::WarmupSampleStats, &stats[..], warmup));
        }
        let mut groups = Vec::with_capacity(plan.len());
        for (kind, specs, planned) in plan {
            groups.push(GroupWriter::create(
                &file,
                kind,
                specs,
                options.n_chains,
                planned,
            )?);
        }
        write_string_attribute(&file, "run_status", RunStatus::Running.name())?;
        write_string_attribute(&file, "run_status_reason", "")?;
        file.flush()?;
        let room = Reservation::new(&path).map_err(|source| OutputError::Io {
            path: path.clone(),
            source,
        })?;
        let mut writer = Self {
            path,
            file,
            n_chains: options.n_chains,
            groups,
            deferred: false,
            unflushed: false,
            room,
            // Attributes and the adaptation's per-chain values at the end.
            slack: BASE_SLACK + 64 * options.n_chains as u64,
            status: RunStatus::Running,
            writes: 0,
            fail_from: super::room::failing_write(),
        };
        writer.ensure_room(0)?;
        Ok(writer)
    }

    /// Keeps `bytes` more free for the end of the run (e.g. the adapted
    /// metrics [`DrawWriter::write_adaptation`] writes), reserving them now.
    pub fn keep_for_closing(&mut self, bytes: u64) -> Result<(), OutputError> {
        self.slack = self.slack.saturating_add(bytes);
        self.ensure_room(0)
    }

    /// Reserves room for `bytes` more in the file plus the slack; refused
    /// with [`OutputError::Refused`] when the disk has not got it.
    fn ensure_room(&mut self, bytes: u64) -> Result<(), OutputError> {
        let size = self.file.size().max(self.room.file_len());
        let to = size.saturating_add(bytes).saturating_add(self.slack);
        self.room.ensure(to).map_err(|source| OutputError::Refused {
            path: self.path.clone(),
            needed: bytes,
            source,
        })
    }

    /// From now on [`DrawWriter::write_block`] leaves flushing to the
    /// caller ([`DrawWriter::flush`]), for a caller that writes many small
    /// blocks at once (the collector: a block per chain) and flushes once
    /// for all of them — a flush per block was 4% of a 1000-chain run's
    /// CPU, on the thread competing with sampling for the cores.
    pub fn defer_flushes(&mut self) {
        self.deferred = true;
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Variables of `group`, in the order `write_block` expects their columns.
    pub fn variables(&self, group: GroupKind) -> Option<Vec<&VarSpec>> {
        self.group_index(group)
            .map(|i| self.groups[i].variables.iter().map(|(s, _)| s).collect())
    }

    /// The fewest draws a chunk of `group`'s variables holds: a caller
    /// with many draws at once writes them in pieces of this many (aligned
    /// to it), so that a disk that fills midway keeps every piece before.
    pub fn draws_per_chunk(&self, group: GroupKind) -> Option<usize> {
        let index = self.group_index(group)?;
        let chunks = &self.groups[index].chunks;
        Some(
            chunks
                .iter()
                .map(|&(draws, _)| draws)
                .min()
                .unwrap_or(MAX_DRAW_BLOCK)
                .max(1),
        )
    }

    /// Draws written so far along the draw axis of `group`.
    pub fn n_draws(&self, group: GroupKind) -> Option<usize> {
        self.group_index(group).map(|i| self.groups[i].n_draws)
    }

    /// Writes `values` (one column per variable of `group`, each laid out
    /// `[chain][draw][element]`) into the block `chains` × `draws`, growing the draw
    /// axis when the block reaches past it, then flushes the file.
    pub fn write_block(
        &mut self,
        group: GroupKind,
        chains: Range<usize>,
        draws: Range<usize>,
        values: &[Column<'_>],
    ) -> Result<(), OutputError> {
        let index = self.group_index(group).ok_or_else(|| {
            OutputError::InvalidWrite(format!("the file has no `{}` group", group.name()))
        })?;
        if chains.start > chains.end || chains.end > self.n_chains {
            return Err(OutputError::InvalidWrite(format!(
                "chains {chains:?} out of range for {} chains",
                self.n_chains
            )));
        }
        if draws.start > draws.end {
            return Err(OutputError::InvalidWrite(format!(
                "empty or reversed draw range {draws:?}"
            )));
        }
        let writer = &mut self.groups[index];
        writer.check_columns(&chains, &draws, values)?;
        if chains.is_empty() || draws.is_empty() {
            return Ok(());
        }
        let needed = writer.new_bytes(&chains, &draws);
        self.writes += 1;
        if self.fail_from.is_some_and(|n| self.writes >= n) {
            return Err(OutputError::Io {
                path: self.path.clone(),
                source: std::io::Error::from_raw_os_error(nix::libc::EIO),
            });
        }
        self.ensure_room(needed)?;
        let writer = &mut self.groups[index];
        writer.grow_draws(self.n_chains, draws.end)?;
        for ((spec, dataset), column) in writer.variables.iter().zip(values) {
            write_column(dataset, spec, &chains, &draws, column)?;
        }
        for chain in chains {
            writer.reached[chain] = writer.reached[chain].max(draws.end);
        }
        self.unflushed = true;
        if !self.deferred {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes a block of NUTS statistics into `sample_stats` (or
    /// `warmup_sample_stats` when `warmup`).
    pub fn write_sample_stats(
        &mut self,
        warmup: bool,
        chains: Range<usize>,
        draws: Range<usize>,
        stats: &SampleStatsBlock<'_>,
    ) -> Result<(), OutputError> {
        let group = if warmup {
            GroupKind::WarmupSampleStats
        } else {
            GroupKind::SampleStats
        };
        self.write_block(group, chains, draws, &stats.columns())
    }

    /// Stores each chain's adapted step size and inverse metric in
    /// `sample_stats` as `adapted_step_size` (chain) and `inv_metric`:
    /// (chain, inv_metric_dim_0) for a diagonal metric, (chain,
    /// inv_metric_dim_0, inv_metric_dim_1) for a `dense` one (each chain's
    /// matrix row-major); `inv_metric` is chain-major.
    pub fn write_adaptation(
        &mut self,
        step_sizes: &[f64],
        inv_metric: &[f64],
        dense: bool,
    ) -> Result<(), OutputError> {
        let n = self.n_chains;
        let per_chain = inv_metric.len() / n.max(1);
        let dim = if dense { per_chain.isqrt() } else { per_chain };
        let square = !dense || dim * dim == per_chain;
        if step_sizes.len() != n || !inv_metric.len().is_multiple_of(n) || !square {
            return Err(OutputError::InvalidWrite(format!(
                "adaptation needs {n} step sizes and {n} equal-length metrics"
            )));
        }
        let index = self
            .group_index(GroupKind::SampleStats)
            .expect("sample_stats always exists");
        let group = &self.groups[index].group;
        let chain_scale = group.dataset("chain")?;
        let step = group
            .new_dataset::<f64>()
            .shape(n)
            .create("adapted_step_size")?;
        step.write_raw(step_sizes)?;
        attach_scale(&step, &chain_scale, 0)?;
        let dim_scale = create_index_scale(group, "inv_metric_dim_0", dim)?;
        let shape = if dense {
            vec![n, dim, dim]
        } else {
            vec![n, dim]
        };
        let metric = group
            .new_dataset::<f64>()
            .shape(shape)
            .create("inv_metric")?;
        metric.write_raw(inv_metric)?;
        attach_scale(&metric, &chain_scale, 0)?;
        attach_scale(&metric, &dim_scale, 1)?;
        if dense {
            let column_scale = create_index_scale(group, "inv_metric_dim_1", dim)?;
            attach_scale(&metric, &column_scale, 2)?;
        }
        self.file.flush()?;
        Ok(())
    }

    /// Shrinks the draw axis of `group` to its first `n_draws` draws (e.g.
    /// after an interrupted run, to the draws every chain has), then flushes.
    pub fn truncate_draws(&mut self, group: GroupKind, n_draws: usize) -> Result<(), OutputError> {
        let index = self.group_index(group).ok_or_else(|| {
            OutputError::InvalidWrite(format!("the file has no `{}` group", group.name()))
        })?;
        let writer = &mut self.groups[index];
        if n_draws >= writer.n_draws {
            return Ok(());
        }
        for (spec, dataset) in &writer.variables {
            let mut shape = vec![self.n_chains, n_draws];
            shape.extend(&spec.dims);
            dataset.resize(shape)?;
        }
        writer.draw_scale.resize(n_draws)?;
        writer.n_draws = n_draws;
        for reached in &mut writer.reached {
            *reached = (*reached).min(n_draws);
        }
        writer.record_counts()?;
        self.file.flush()?;
        Ok(())
    }

    /// Per chain, the draws of `group` written so far.
    pub fn draws_per_chain(&self, group: GroupKind) -> Option<&[usize]> {
        self.group_index(group).map(|i| &self.groups[i].reached[..])
    }

    /// After a write failed: shrinks every group's draw axis to the draws
    /// some chain has (a failed write may have grown it) and records each
    /// chain's draws, so that the file closes with every block written
    /// before. Best effort: the first error is returned, after trying all.
    pub fn keep_written(&mut self) -> Result<(), OutputError> {
        let mut first = Ok(());
        for writer in &mut self.groups {
            let end = writer.reached.iter().copied().max().unwrap_or(0);
            if end < writer.n_draws {
                for (spec, dataset) in &writer.variables {
                    let mut shape = vec![self.n_chains, end];
                    shape.extend(&spec.dims);
                    if let Err(e) = dataset.resize(shape) {
                        first = first.and(Err(e.into()));
                    }
                }
                if let Err(e) = writer.draw_scale.resize(end) {
                    first = first.and(Err(e.into()));
                }
                writer.n_draws = end;
            }
            first = first.and(writer.record_counts());
        }
        first
    }

    /// Records how the run stands (`run_status`, `run_status_reason`);
    /// written with the next flush.
    pub fn set_status(&mut self, status: RunStatus, reason: &str) -> Result<(), OutputError> {
        self.status = status;
        let reason = reason.replace('\0', " ");
        for (name, value) in [
            ("run_status", status.name()),
            ("run_status_reason", &reason),
        ] {
            let value: VarLenUnicode = value.parse().map_err(|_| {
                OutputError::InvalidWrite(format!("attribute `{name}` is not text"))
            })?;
            self.file.attr(name)?.write_scalar(&value)?;
            // ArviZ shows a group's attributes, not the root's.
            for writer in &self.groups {
                writer.group.attr(name)?.write_scalar(&value)?;
            }
        }
        self.unflushed = true;
        Ok(())
    }

    /// Sets (or replaces) attributes of the root and of every group (ArviZ
    /// shows a group's attributes, not the root's); written with the next
    /// flush.
    pub fn set_attributes(
        &mut self,
        attributes: &[(&str, Attribute<'_>)],
    ) -> Result<(), OutputError> {
        let mut locations = vec![self.file.as_group()?];
        locations.extend(self.groups.iter().map(|w| w.group.clone()));
        for location in &locations {
            for (name, value) in attributes {
                if location.attr(name).is_ok() {
                    location.delete_attr(name)?;
                }
                match value {
                    Attribute::Text(text) => write_string_attribute(location, name, text)?,
                    Attribute::Real(x) => {
                        location.new_attr::<f64>().create(*name)?.write_scalar(x)?
                    }
                    Attribute::Int(n) => {
                        location.new_attr::<i64>().create(*name)?.write_scalar(n)?
                    }
                }
            }
        }
        self.unflushed = true;
        Ok(())
    }

    /// Flushes everything written so far to disk (nothing to do when no
    /// block was written since the last flush).
    pub fn flush(&mut self) -> Result<(), OutputError> {
        if self.unflushed {
            for writer in &mut self.groups {
                writer.record_counts()?;
            }
            self.file.flush()?;
            self.unflushed = false;
        }
        Ok(())
    }

    /// Flushes and closes the file; a file still `running` becomes
    /// `complete`.
    pub fn finish(mut self) -> Result<(), OutputError> {
        let mut result = Ok(());
        if self.status == RunStatus::Running {
            result = self.set_status(RunStatus::Complete, "");
        }
        for writer in &mut self.groups {
            result = result.and(writer.record_counts());
        }
        // Closed even when the steps before failed: what can be written is.
        let flushed = self.file.flush();
        let Self { file, room, .. } = self;
        let closed = file.close();
        room.release();
        result?;
        flushed?;
        closed?;
        Ok(())
    }

    fn group_index(&self, kind: GroupKind) -> Option<usize> {
        self.groups.iter().position(|g| g.kind == kind)
    }
}

impl GroupWriter {
    fn create(
        file: &File,
        kind: GroupKind,
        specs: &[VarSpec],
        n_chains: usize,
        n_draws_planned: usize,
    ) -> Result<Self, OutputError> {
        let group = file
            .create_group_builder()
            .with_gcpl(|p| {
                p.link_creation_order(LinkCreationOrder::Indexed)
                    .attr_creation_order(AttrCreationOrder::Indexed)
            })
            .create(kind.name())?;
        write_group_attributes(&group)?;
        let chain_scale = create_index_scale(&group, "chain", n_chains)?;
        let draw_block = n_draws_planned.clamp(1, MAX_DRAW_BLOCK);
        let draw_scale = group
            .new_dataset::<i64>()
            .chunk(draw_block)
            .shape(SimpleExtents::from_vec(vec![Extent::new(0, None)]))
            .create("draw")?;
        set_scale(&draw_scale, "draw")?;
        write_string_attribute(&group, "run_status", RunStatus::Running.name())?;
        write_string_attribute(&group, "run_status_reason", "")?;
        let counts = group
            .new_attr::<i64>()
            .shape(n_chains)
            .create("draws_per_chain")?;
        counts.write_raw(&vec![0i64; n_chains])?;
        let mut variables = Vec::with_capacity(specs.len());
        let mut chunks = Vec::with_capacity(specs.len());
        for spec in specs {
            chunks.push(chunk_of(spec, n_draws_planned));
            let dataset = create_variable(&group, spec, n_chains, n_draws_planned)?;
            attach_scale(&dataset, &chain_scale, 0)?;
            attach_scale(&dataset, &draw_scale, 1)?;
            for (axis, &len) in spec.dims.iter().enumerate() {
                let scale = create_index_scale(&group, &spec.dim_name(axis), len)?;
                attach_scale(&dataset, &scale, axis + 2)?;
            }
            if spec.dtype == Dtype::Bool {
                write_string_attribute(&dataset, "dtype", "bool")?;
            }
            variables.push((spec.clone(), dataset));
        }
        Ok(Self {
            kind,
            group,
            draw_scale,
            variables,
            n_draws: 0,
            reached: vec![0; n_chains],
            recorded: vec![0; n_chains],
            chunks,
        })
    }

    /// Writes `draws_per_chain` when it changed.
    fn record_counts(&mut self) -> Result<(), OutputError> {
        if self.reached != self.recorded {
            let counts: Vec<i64> = self.reached.iter().map(|&n| n as i64).collect();
            self.group.attr("draws_per_chain")?.write_raw(&counts)?;
            self.recorded.clone_from(&self.reached);
        }
        Ok(())
    }

    /// Bytes of file space writing `chains` × `draws` will allocate: the
    /// chunks it reaches that no earlier write reached, and the scale.
    fn new_bytes(&self, chains: &Range<usize>, draws: &Range<usize>) -> u64 {
        let mut bytes = 8 * draws.end.saturating_sub(self.n_draws) as u64;
        for &(block, chunk_bytes) in &self.chunks {
            let chunks: usize = self.reached[chains.clone()]
                .iter()
                .map(|&reached| {
                    draws
                        .end
                        .div_ceil(block)
                        .saturating_sub(reached.div_ceil(block))
                })
                .sum();
            bytes = bytes.saturating_add(chunks as u64 * chunk_bytes);
        }
        bytes
    }

    fn check_columns(
        &self,
        chains: &Range<usize>,
        draws: &Range<usize>,
        values: &[Column<'_>],
    ) -> Result<(), OutputError> {
        if values.len() != self.variables.len() {
            return Err(OutputError::InvalidWrite(format!(
                "`{}` has {} variables but {} columns were given",
                self.kind.name(),
                self.variables.len(),
                values.len()
            )));
        }
        for ((spec, _), column) in self.variables.iter().zip(values) {
            let expected = chains.len() * draws.len() * spec.elements_per_draw();
            if column.len() != expected || column.dtype() != spec.dtype {
                return Err(OutputError::InvalidWrite(format!(
                    "`{}`: expected {expected} values of {:?}, got {} of {:?}",
                    spec.name,
                    spec.dtype,
                    column.len(),
                    column.dtype()
                )));
            }
        }
        Ok(())
    }

    /// Extends the draw axis of every variable and of the `draw` scale to `end`.
    fn grow_draws(&mut self, n_chains: usize, end: usize) -> Result<(), OutputError> {
        if end <= self.n_draws {
            return Ok(());
        }
        for (spec, dataset) in &self.variables {
            let mut shape = vec![n_chains, end];
            shape.extend(&spec.dims);
            dataset.resize(shape)?;
        }
        self.draw_scale.resize(end)?;
        let indices: Vec<i64> = (self.n_draws as i64..end as i64).collect();
        self.draw_scale
            .write_slice(&indices[..], self.n_draws..end)?;
        self.n_draws = end;
        Ok(())
    }
}

fn check_names(variables: &[VarSpec]) -> Result<(), OutputError> {
    let mut taken: HashSet<String> = ["chain", "draw"].map(String::from).into();
    for spec in variables {
        // `.` is allowed: a tuple's components are stored as `t.1`, `t.2`
        // (Stan's names for them; netCDF and HDF5 accept the dot).
        if spec.name.is_empty() || spec.name.contains('/') || spec.name == "." {
            return Err(OutputError::InvalidWrite(format!(
                "invalid variable name `{}`",
                spec.name
            )));
        }
        let names = std::iter::once(spec.name.clone())
            .chain((0..spec.dims.len()).map(|axis| spec.dim_name(axis)));
        for name in names {
            if !taken.insert(name.clone()) {
                return Err(OutputError::InvalidWrite(format!(
                    "name `{name}` is used twice in the draws file"
                )));
            }
        }
    }
    Ok(())
}

fn create_variable(
    group: &Group,
    spec: &VarSpec,
    n_chains: usize,
    n_draws_planned: usize,
) -> Result<Dataset, OutputError> {
    let mut extents = vec![Extent::fixed(n_chains), Extent::new(0, None)];
    // A zero-length fixed axis cannot hold a chunk of 1; make it resizable instead.
    extents.extend(spec.dims.iter().map(|&len| {
        if len == 0 {
            Extent::new(0, None)
        } else {
            Extent::fixed(len)
        }
    }));
    let mut chunk = vec![1, draw_block(spec, n_draws_planned)];
    chunk.extend(spec.dims.iter().map(|&len| len.max(1)));
    let extents = SimpleExtents::from_vec(extents);
    let builder = match spec.dtype {
        Dtype::F64 => group
            .new_dataset::<f64>()
            .fill_value(f64::NAN)
            .chunk(chunk)
            .shape(extents),
        Dtype::I64 => group.new_dataset::<i64>().chunk(chunk).shape(extents),
        Dtype::Bool => group.new_dataset::<i8>().chunk(chunk).shape(extents),
    };
    Ok(builder.create(spec.name.as_str())?)
}

/// Draws per chunk of `spec`'s dataset. A chunk holds ONE chain's draws: the
/// collector writes each chain's block of draws on its own, and a chunk
/// shared by several chains is read back and rewritten whole for each
/// chain's block once the chunk cache (1 MiB per dataset) cannot hold it —
/// with chunks of 64 chains, eight schools' 1024 chains × (300 + 300) moved
/// 15 GB in and 17 GB out of a 135 MB file, on the thread that competes
/// with sampling for the cores. Up to [`MAX_DRAW_BLOCK`] draws (and
/// [`CHUNK_BYTES`]) per chunk keep scalars' chunks from getting tiny for
/// readers (8 KB at 1000 draws).
fn draw_block(spec: &VarSpec, n_draws_planned: usize) -> usize {
    let per_draw_bytes = spec.elements_per_draw().max(1) * 8;
    (CHUNK_BYTES / per_draw_bytes).clamp(1, n_draws_planned.clamp(1, MAX_DRAW_BLOCK))
}

/// (draws per chunk, bytes of a chunk) of `spec`'s dataset.
fn chunk_of(spec: &VarSpec, n_draws_planned: usize) -> (usize, u64) {
    let block = draw_block(spec, n_draws_planned);
    let item = match spec.dtype {
        Dtype::F64 | Dtype::I64 => 8,
        Dtype::Bool => 1,
    };
    let per_draw: usize = spec.dims.iter().map(|&len| len.max(1)).product();
    (block, (block * per_draw * item) as u64)
}

/// About the bytes of a complete run's file: every variable's chunks for
/// every chain (as [`DrawWriter`] lays them out), and the metadata.
pub fn estimate_file_bytes(variables: &[VarSpec], options: &WriterOptions) -> u64 {
    let stats = sample_stats_specs();
    let mut plan = vec![
        (variables, options.n_draws_planned),
        (&stats[..], options.n_draws_planned),
    ];
    if let Some(warmup) = options.n_warmup_planned {
        plan.push((variables, warmup));
        plan.push((&stats[..], warmup));
    }
    // The superblock, groups, attributes (the model's source among them)
    // and the adapted metrics; per variable its header, scales and chunk
    // index.
    let mut bytes: u64 = 256 << 10;
    for (specs, planned) in plan {
        for spec in specs {
            let (block, chunk_bytes) = chunk_of(spec, planned);
            let chunks = planned.div_ceil(block.max(1)).max(1) as u64;
            bytes = bytes
                .saturating_add(options.n_chains as u64 * chunks * chunk_bytes)
                .saturating_add(4096 + 32 * chunks * options.n_chains as u64);
        }
    }
    bytes
}

fn write_column(
    dataset: &Dataset,
    spec: &VarSpec,
    chains: &Range<usize>,
    draws: &Range<usize>,
    column: &Column<'_>,
) -> Result<(), OutputError> {
    let mut shape = vec![chains.len(), draws.len()];
    shape.extend(&spec.dims);
    let mut slices: Vec<SliceOrIndex> = vec![chains.clone().into(), draws.clone().into()];
    slices.extend(spec.dims.iter().map(|&len| SliceOrIndex::from(0..len)));
    let selection = Selection::from(Hyperslab::from(slices));
    let shape_error = |e: ndarray::ShapeError| OutputError::InvalidWrite(e.to_string());
    match column {
        Column::F64(values) => {
            let view = ArrayViewD::from_shape(shape, values).map_err(shape_error)?;
            dataset.write_slice(view, selection)?;
        }
        Column::I64(values) => {
            let view = ArrayViewD::from_shape(shape, values).map_err(shape_error)?;
            dataset.write_slice(view, selection)?;
        }
        Column::Bool(values) => {
            let bytes: Vec<i8> = values.iter().map(|&b| i8::from(b)).collect();
            let view = ArrayViewD::from_shape(shape, &bytes[..]).map_err(shape_error)?;
            dataset.write_slice(view, selection)?;
        }
    }
    Ok(())
}

/// A dimension scale `name` holding 0..len.
fn create_index_scale(group: &Group, name: &str, len: usize) -> Result<Dataset, OutputError> {
    let values: Vec<i64> = (0..len as i64).collect();
    let scale = group
        .new_dataset_builder()
        .with_data(&values[..])
        .create(name)?;
    set_scale(&scale, name)?;
    Ok(scale)
}

fn write_root_attributes(file: &File, meta: &RunMetadata) -> Result<(), OutputError> {
    write_string_attribute(file, "inference_library", "bat")?;
    write_string_attribute(file, "bat_version", env!("CARGO_PKG_VERSION"))?;
    write_string_attribute(file, "created_at", &now_rfc3339())?;
    write_string_attribute(file, "model_name", &meta.model_name)?;
    write_string_attribute(file, "model_source", &meta.model_source)?;
    write_string_attribute(file, "data_path", meta.data_path.as_deref().unwrap_or(""))?;
    file.new_attr::<u64>()
        .create("seed")?
        .write_scalar(&meta.seed)?;
    write_string_attribute(file, "settings", &meta.settings_json)?;
    Ok(())
}

/// The per-group attributes ArviZ itself writes.
fn write_group_attributes(group: &Group) -> Result<(), OutputError> {
    write_string_attribute(group, "created_at", &now_rfc3339())?;
    write_string_attribute(group, "inference_library", "bat")?;
    write_string_attribute(
        group,
        "inference_library_version",
        env!("CARGO_PKG_VERSION"),
    )?;
    Ok(())
}

fn write_string_attribute(
    location: &hdf5::Location,
    name: &str,
    value: &str,
) -> Result<(), OutputError> {
    let value: VarLenUnicode = value.parse().map_err(|_| {
        OutputError::InvalidWrite(format!("attribute `{name}` contains a NUL character"))
    })?;
    location
        .new_attr::<VarLenUnicode>()
        .create(name)?
        .write_scalar(&value)?;
    Ok(())
}

/// Records on a closed draws file the chains found stuck after the run
/// (0-based indices, as ArviZ's `chain` coordinates; empty when none), as
/// the root attribute `stuck_chains` and on each group (ArviZ shows a
/// group's attributes, not the root's). Replaces an earlier record.
pub fn record_stuck_chains(path: &Path, chains: &[usize]) -> Result<(), OutputError> {
    let file = File::open_rw(path).map_err(|source| OutputError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let values: Vec<i64> = chains.iter().map(|&c| c as i64).collect();
    let mut locations: Vec<Group> = vec![file.as_group()?];
    for name in file.member_names()? {
        if let Ok(group) = file.group(&name) {
            locations.push(group);
        }
    }
    for location in &locations {
        if location.attr("stuck_chains").is_ok() {
            location.delete_attr("stuck_chains")?;
        }
        location
            .new_attr::<i64>()
            .shape(values.len())
            .create("stuck_chains")?
            .write_raw(&values)?;
    }
    file.flush()?;
    Ok(())
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_hold_a_chains_draws_up_to_the_target() {
        let scalar = VarSpec::real("a", &[]);
        assert_eq!(draw_block(&scalar, 1000), 1000);
        assert_eq!(draw_block(&scalar, 5000), MAX_DRAW_BLOCK);
        assert_eq!(draw_block(&scalar, 10), 10);
        assert_eq!(draw_block(&scalar, 0), 1);
        let big = VarSpec::real("b", &[1000]);
        assert_eq!(draw_block(&big, 1000), CHUNK_BYTES / 8000);
        let huge = VarSpec::real("c", &[1_000_000]);
        assert_eq!(draw_block(&huge, 1000), 1);
    }

    /// The estimate of a run's file covers the file the run writes (blocks
    /// of 100 draws per chain, as the collector writes them), by at most a
    /// quarter more and the allowance for metadata.
    #[test]
    fn the_size_estimate_covers_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let specs = [
            VarSpec::real("mu", &[]),
            VarSpec::real("tau", &[]),
            VarSpec::real("theta", &[8]),
            VarSpec::int("k", &[3, 2]),
        ];
        for (chains, draws, warmup) in [(8, 3000, None), (3, 250, Some(120)), (64, 100, None)] {
            let options = WriterOptions {
                n_chains: chains,
                n_draws_planned: draws,
                n_warmup_planned: warmup,
            };
            let path = dir.path().join(format!("{chains}.h5"));
            let meta = RunMetadata::default();
            let mut writer = DrawWriter::create_with(&path, &meta, &specs, &options).unwrap();
            let mut groups = vec![
                (GroupKind::Posterior, draws),
                (GroupKind::SampleStats, draws),
            ];
            if let Some(warmup) = warmup {
                groups.push((GroupKind::WarmupPosterior, warmup));
                groups.push((GroupKind::WarmupSampleStats, warmup));
            }
            for (group, n) in groups {
                let group_specs: Vec<VarSpec> = writer
                    .variables(group)
                    .unwrap()
                    .into_iter()
                    .cloned()
                    .collect();
                for start in (0..n).step_by(100) {
                    let end = (start + 100).min(n);
                    for chain in 0..chains {
                        let len = |s: &VarSpec| (end - start) * s.elements_per_draw();
                        let floats: Vec<Vec<f64>> =
                            group_specs.iter().map(|s| vec![0.5; len(s)]).collect();
                        let ints: Vec<Vec<i64>> =
                            group_specs.iter().map(|s| vec![1; len(s)]).collect();
                        let bools: Vec<Vec<bool>> =
                            group_specs.iter().map(|s| vec![true; len(s)]).collect();
                        let columns: Vec<Column<'_>> = group_specs
                            .iter()
                            .enumerate()
                            .map(|(i, s)| match s.dtype {
                                Dtype::F64 => Column::F64(&floats[i]),
                                Dtype::I64 => Column::I64(&ints[i]),
                                Dtype::Bool => Column::Bool(&bools[i]),
                            })
                            .collect();
                        writer
                            .write_block(group, chain..chain + 1, start..end, &columns)
                            .unwrap();
                    }
                }
            }
            writer
                .write_adaptation(&vec![0.1; chains], &vec![1.0; chains * 4], false)
                .unwrap();
            writer.finish().unwrap();
            let actual = std::fs::metadata(&path).unwrap().len();
            let estimate = estimate_file_bytes(&specs, &options);
            assert!(
                actual <= estimate && estimate <= actual + actual / 4 + (256 << 10),
                "{chains} chains × {draws}: estimated {estimate}, wrote {actual}"
            );
        }
    }

    #[test]
    fn rejects_clashing_names() {
        let clash = [VarSpec::real("x", &[3]), VarSpec::real("x_dim_0", &[])];
        assert!(check_names(&clash).is_err());
        assert!(check_names(&[VarSpec::real("draw", &[])]).is_err());
        assert!(check_names(&[VarSpec::real("a/b", &[])]).is_err());
        assert!(check_names(&[VarSpec::real("x", &[3]), VarSpec::real("y", &[])]).is_ok());
    }
}
