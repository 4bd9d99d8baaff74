//! What goes into a draws file: groups, variables and run metadata.

/// The InferenceData groups a draws file can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupKind {
    Posterior,
    SampleStats,
    WarmupPosterior,
    WarmupSampleStats,
}

impl GroupKind {
    pub const ALL: [GroupKind; 4] = [
        GroupKind::Posterior,
        GroupKind::SampleStats,
        GroupKind::WarmupPosterior,
        GroupKind::WarmupSampleStats,
    ];

    /// The group's name in the file (ArviZ's InferenceData schema).
    pub fn name(self) -> &'static str {
        match self {
            GroupKind::Posterior => "posterior",
            GroupKind::SampleStats => "sample_stats",
            GroupKind::WarmupPosterior => "warmup_posterior",
            GroupKind::WarmupSampleStats => "warmup_sample_stats",
        }
    }

    pub fn is_warmup(self) -> bool {
        matches!(
            self,
            GroupKind::WarmupPosterior | GroupKind::WarmupSampleStats
        )
    }

    pub fn is_sample_stats(self) -> bool {
        matches!(self, GroupKind::SampleStats | GroupKind::WarmupSampleStats)
    }
}

/// Element type of a stored variable. Booleans are stored as int8 with the attribute
/// `dtype = "bool"`, the convention xarray decodes back to bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F64,
    I64,
    Bool,
}

/// One variable: its name as in the model and its shape per draw (empty for scalars).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarSpec {
    pub name: String,
    pub dims: Vec<usize>,
    pub dtype: Dtype,
}

impl VarSpec {
    pub fn real(name: impl Into<String>, dims: &[usize]) -> Self {
        Self::new(name, dims, Dtype::F64)
    }

    pub fn int(name: impl Into<String>, dims: &[usize]) -> Self {
        Self::new(name, dims, Dtype::I64)
    }

    pub fn boolean(name: impl Into<String>, dims: &[usize]) -> Self {
        Self::new(name, dims, Dtype::Bool)
    }

    fn new(name: impl Into<String>, dims: &[usize], dtype: Dtype) -> Self {
        Self {
            name: name.into(),
            dims: dims.to_vec(),
            dtype,
        }
    }

    /// Scalars per draw (1 for a scalar variable).
    pub fn elements_per_draw(&self) -> usize {
        self.dims.iter().product()
    }

    /// ArviZ's default dimension name for axis `axis` of this variable.
    pub fn dim_name(&self, axis: usize) -> String {
        format!("{}_dim_{axis}", self.name)
    }
}

/// The per-transition sampler statistics of Stan's NUTS, in file order.
pub fn sample_stats_specs() -> Vec<VarSpec> {
    vec![
        VarSpec::real("lp", &[]),
        VarSpec::real("acceptance_rate", &[]),
        VarSpec::real("step_size", &[]),
        VarSpec::int("tree_depth", &[]),
        VarSpec::int("n_steps", &[]),
        VarSpec::boolean("diverging", &[]),
        VarSpec::real("energy", &[]),
    ]
}

/// Facts about the run stored as root attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunMetadata {
    pub model_name: String,
    /// The model's source text.
    pub model_source: String,
    pub data_path: Option<String>,
    pub seed: u64,
    /// Sampler settings as a JSON object (e.g. `{"max_depth":10,"adapt_delta":0.8}`).
    pub settings_json: String,
}

/// A block of values for one variable, laid out chain-major:
/// `[chain][draw][element]` over the block's chain and draw ranges.
#[derive(Clone, Copy, Debug)]
pub enum Column<'a> {
    F64(&'a [f64]),
    I64(&'a [i64]),
    Bool(&'a [bool]),
}

impl Column<'_> {
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dtype(&self) -> Dtype {
        match self {
            Column::F64(_) => Dtype::F64,
            Column::I64(_) => Dtype::I64,
            Column::Bool(_) => Dtype::Bool,
        }
    }
}

/// One block of Stan's NUTS statistics, each laid out `[chain][draw]`, in the order of
/// [`sample_stats_specs`].
#[derive(Clone, Copy, Debug)]
pub struct SampleStatsBlock<'a> {
    pub lp: &'a [f64],
    pub acceptance_rate: &'a [f64],
    pub step_size: &'a [f64],
    pub tree_depth: &'a [i64],
    pub n_steps: &'a [i64],
    pub diverging: &'a [bool],
    pub energy: &'a [f64],
}

impl<'a> SampleStatsBlock<'a> {
    pub fn columns(&self) -> [Column<'a>; 7] {
        [
            Column::F64(self.lp),
            Column::F64(self.acceptance_rate),
            Column::F64(self.step_size),
            Column::I64(self.tree_depth),
            Column::I64(self.n_steps),
            Column::Bool(self.diverging),
            Column::F64(self.energy),
        ]
    }
}
