//! Device code for a whole program run from one entry function for every
//! lane — the sampler program (`nuts.stan`: its PC IR with user-function
//! calls on the device's program-counter and variable stacks, random
//! draws from each lane's Philox stream) — as opposed to a gradient
//! program ([`super::program`]).
//!
//! The blocks are generated as for gradient programs; the program's
//! external calls become [`External`] launches that the host loop answers
//! (the model's gradient program on the device, records copied back in
//! chunks), so the program and the gradient program stay two modules and
//! the gradient's lane state is the gradient device's own (merging the
//! gradient program's blocks into the sampler's would give every sampler
//! block the gradient's AD stacks and data, and a model refused by the
//! gradient generator could not share the code path).
//!
//! # Kernel ABIs (besides the lane kernels of [`super::program`])
//! - [`START_KERNEL`]: `(double* state, const double* args, const int*
//!   chains, int n_lanes, unsigned long long seed, int entry)`: resets
//!   every lane (status, stacks, reserved slots), writes the entry's
//!   arguments from `args[k * n_lanes + lane]`, starts lane `lane`'s random
//!   stream as the CPU's stream 0 of chain `chains[lane]`, and sets its
//!   program counter to the entry block.
//! - [`SCHEDULE_KERNEL`]: as for gradient programs.
//! - [`External`] launches: the pack kernel takes `(double* out, int
//!   width, int cap)` after the lane kernel's parameters, the answer
//!   kernel `(const double* g)`.

use language::batch::pc;
use language::value::Value;

use super::layout::{Layout, PC_SLOT, Place, SITE_SLOT, STATUS_SLOT, TARGET_SLOT};
use super::program::{
    EXTERNAL_SLOTS, External, LAST_GRADIENT_SITE, Launch, SCHEDULE_KERNEL, START_KERNEL,
    entry_layout, function_named, generate_blocks, schedule_kernel,
};
use super::shape::Shape;
use super::typing::Unsupported;
use super::{NotGenerated, Site, prelude};

/// The device code of a program run from one entry function.
#[derive(Clone, Debug)]
pub struct EntryProgram {
    /// One CUDA C translation unit: prelude, host-loop helpers, kernels.
    pub source: String,
    pub prefix: String,
    /// Per PC block (global ids): its launches.
    pub blocks: Vec<Vec<Launch>>,
    /// The entry's first block.
    pub entry: usize,
    pub layout: Layout,
    /// Failure sites, by id.
    pub sites: Vec<Site>,
    /// Ops with no device code (the program cannot run if any).
    pub not_generated: Vec<NotGenerated>,
    /// The entry's parameters: (first slot, shape), in order.
    pub params: Vec<(usize, Shape)>,
    /// Every external call, by id.
    pub externals: Vec<External>,
}

impl EntryProgram {
    pub fn helper(&self, helper: &str) -> String {
        format!("{}_{helper}", self.prefix)
    }

    /// Every kernel name in the source.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names = vec![self.helper(START_KERNEL), self.helper(SCHEDULE_KERNEL)];
        for launches in &self.blocks {
            names.extend(
                launches
                    .iter()
                    .flat_map(|l| l.kernels())
                    .map(str::to_string),
            );
        }
        names
    }

    /// Values of the entry's arguments per lane.
    pub fn args_width(&self) -> usize {
        self.params.iter().map(|(_, s)| s.len()).sum()
    }

    /// The widest record of the external calls without a result (1 + the
    /// packed arguments; at least 1).
    pub fn record_width(&self) -> usize {
        1 + self
            .externals
            .iter()
            .filter(|e| e.answer.is_none())
            .map(External::width)
            .max()
            .unwrap_or(0)
    }
}

/// Generate the device code of `p` run from `entry` with arguments of
/// `params`' shapes (`globals`: the program's data, by variable).
pub fn generate(
    p: &pc::Program,
    globals: &[Option<Value>],
    entry: &str,
    params: &[Shape],
    prefix: &str,
) -> Result<EntryProgram, Unsupported> {
    let layout = entry_layout(p, globals, entry, params, EXTERNAL_SLOTS)?;
    let f = p.function(function_named(p, entry).expect("entry_layout found it"));
    let param_places = f
        .params
        .iter()
        .zip(params)
        .map(|(var, shape)| match layout.place(*var) {
            Some(Place::State { base, .. }) => Ok((base, shape.clone())),
            _ => Err(format!("parameter `{}` has no place", p.var_name(*var))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let blocks = generate_blocks(p, &layout, prefix, entry);
    let mut externals: Vec<External> = blocks
        .blocks
        .iter()
        .flatten()
        .filter_map(|l| match l {
            Launch::External(e) => Some(e.clone()),
            _ => None,
        })
        .collect();
    externals.sort_by_key(|e| e.id);
    let helpers = helper_kernels(&layout, prefix, &param_places);
    let source = format!("{}{helpers}{}", prelude(), blocks.kernels);
    Ok(EntryProgram {
        source,
        prefix: prefix.to_string(),
        blocks: blocks.blocks,
        entry: blocks.entry,
        layout,
        sites: blocks.sites,
        not_generated: blocks.not_generated,
        params: param_places,
        externals,
    })
}

fn helper_kernels(layout: &Layout, prefix: &str, params: &[(usize, Shape)]) -> String {
    let mut resets = String::new();
    for stack in layout.all_stacks() {
        resets.push_str(&format!("    S({}) = 0.0;\n", stack.depth));
    }
    for k in 0..EXTERNAL_SLOTS {
        let value = if k == LAST_GRADIENT_SITE { -3.0 } else { 0.0 };
        resets.push_str(&format!("    S({}) = {value:?};\n", layout.reserved + k));
    }
    let mut offset = 0;
    for (base, shape) in params {
        let n = shape.len();
        resets.push_str(&format!(
            "    for (int k = 0; k < {n}; ++k) S({base} + k) = args[(long long)({offset} + k) * n_lanes + lane];\n"
        ));
        offset += n;
    }
    if let Some(rng) = layout.rng {
        resets.push_str(&format!(
            "    {{ BatRng r = bat_rng_new(seed, (unsigned int)chains[lane], 0ULL); bat_rng_store(&r, state, {rng}, lane, n_lanes); }}\n"
        ));
    }
    format!(
        "
// ---- host loop helpers
extern \"C\" __global__ void {prefix}_{START_KERNEL}(double* __restrict__ state, const double* __restrict__ args,
    const int* __restrict__ chains, int n_lanes, unsigned long long seed, int entry) {{
    const int lane = blockIdx.x * blockDim.x + threadIdx.x;
    if (lane >= n_lanes) return;
    (void)args; (void)chains; (void)seed;
    S({STATUS_SLOT}) = 0.0;
    S({TARGET_SLOT}) = 0.0;
    S({SITE_SLOT}) = 0.0;
    S({PC_SLOT}) = (double)entry;
{resets}}}
{}",
        schedule_kernel(prefix)
    )
}
