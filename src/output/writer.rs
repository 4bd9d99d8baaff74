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
}

struct GroupWriter {
    kind: GroupKind,
    group: Group,
    draw_scale: Dataset,
    variables: Vec<(VarSpec, Dataset)>,
    /// Current length of the draw axis.
    n_draws: usize,
}

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
        file.flush()?;
        Ok(Self {
            path,
            file,
            n_chains: options.n_chains,
            groups,
            deferred: false,
            unflushed: false,
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
        writer.grow_draws(self.n_chains, draws.end)?;
        for ((spec, dataset), column) in writer.variables.iter().zip(values) {
            write_column(dataset, spec, &chains, &draws, column)?;
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

    /// Stores each chain's adapted step size and diagonal inverse metric in
    /// `sample_stats` as `adapted_step_size` (chain) and `inv_metric`
    /// (chain, inv_metric_dim_0); `inv_metric` is chain-major.
    pub fn write_adaptation(
        &mut self,
        step_sizes: &[f64],
        inv_metric: &[f64],
    ) -> Result<(), OutputError> {
        let n = self.n_chains;
        if step_sizes.len() != n || !inv_metric.len().is_multiple_of(n) {
            return Err(OutputError::InvalidWrite(format!(
                "adaptation needs {n} step sizes and {n} equal-length metrics"
            )));
        }
        let dim = inv_metric.len() / n;
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
        let metric = group
            .new_dataset::<f64>()
            .shape((n, dim))
            .create("inv_metric")?;
        metric.write_raw(inv_metric)?;
        attach_scale(&metric, &chain_scale, 0)?;
        attach_scale(&metric, &dim_scale, 1)?;
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
        self.file.flush()?;
        Ok(())
    }

    /// Flushes everything written so far to disk (nothing to do when no
    /// block was written since the last flush).
    pub fn flush(&mut self) -> Result<(), OutputError> {
        if self.unflushed {
            self.file.flush()?;
            self.unflushed = false;
        }
        Ok(())
    }

    /// Flushes and closes the file.
    pub fn finish(self) -> Result<(), OutputError> {
        self.file.flush()?;
        self.file.close()?;
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
        let mut variables = Vec::with_capacity(specs.len());
        for spec in specs {
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
        })
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

    #[test]
    fn rejects_clashing_names() {
        let clash = [VarSpec::real("x", &[3]), VarSpec::real("x_dim_0", &[])];
        assert!(check_names(&clash).is_err());
        assert!(check_names(&[VarSpec::real("draw", &[])]).is_err());
        assert!(check_names(&[VarSpec::real("a/b", &[])]).is_err());
        assert!(check_names(&[VarSpec::real("x", &[3]), VarSpec::real("y", &[])]).is_ok());
    }
}
