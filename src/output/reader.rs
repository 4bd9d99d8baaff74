//! Reading draws back from an InferenceData HDF5 file (ours or any netCDF-4 file
//! with `posterior` / `sample_stats` groups laid out (chain, draw, ...)).

use super::dimscale::{attached_dimension_names, is_scale};
use super::error::OutputError;
use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Dataset, File, Group, Hyperslab, IndexType, IterationOrder, Selection, SliceOrIndex};
use std::collections::BTreeMap;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// HDF5's format signature; it sits at offset 0 or a power of two ≥ 512.
const HDF5_SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Draws of one variable, as f64, laid out `[chain][draw][element]`.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredVariable {
    pub name: String,
    /// Shape per draw (empty for scalars).
    pub dims: Vec<usize>,
    pub n_chains: usize,
    pub n_draws: usize,
    pub values: Vec<f64>,
}

impl StoredVariable {
    pub fn elements_per_draw(&self) -> usize {
        self.dims.iter().product()
    }

    /// Chain-major draws of element `element` (row-major flat index).
    pub fn element_draws(&self, element: usize) -> Vec<f64> {
        let stride = self.elements_per_draw();
        (0..self.n_chains * self.n_draws)
            .map(|i| self.values[i * stride + element])
            .collect()
    }

    /// Stan-style name of element `element`: `theta`, `theta[2]`, `sigma[1,3]`.
    pub fn element_name(&self, element: usize) -> String {
        stan_element_name(&self.name, &self.dims, element)
    }
}

/// Stan-style name (1-based indices) of the row-major flat `element` of a variable
/// shaped `dims` per draw.
pub fn stan_element_name(name: &str, dims: &[usize], element: usize) -> String {
    if dims.is_empty() {
        return name.to_string();
    }
    let mut index = vec![0; dims.len()];
    let mut rest = element;
    for axis in (0..dims.len()).rev() {
        index[axis] = rest % dims[axis];
        rest /= dims[axis];
    }
    let index: Vec<String> = index.iter().map(|i| (i + 1).to_string()).collect();
    format!("{name}[{}]", index.join(","))
}

/// Where a (chain, draw, ...) variable sits and its shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VariableInfo {
    pub group: String,
    pub name: String,
    /// Shape per draw (empty for scalars).
    pub dims: Vec<usize>,
    pub n_chains: usize,
    pub n_draws: usize,
}

impl VariableInfo {
    pub fn elements_per_draw(&self) -> usize {
        self.dims.iter().product()
    }
}

/// An open draws file, read a variable (or a slab of one) at a time so that large
/// runs need not fit in memory at once.
pub struct DrawReader {
    path: PathBuf,
    file: File,
    /// The file's length in bytes, bounding what a read may allocate.
    len: u64,
}

/// The most bytes of draws a file of `file_len` bytes is believed to hold
/// when read as f64: a damaged file can claim a dataset of petabytes, which
/// would abort the process on allocation. Compression (netCDF files written
/// by other tools) and fill values are allowed for generously.
fn readable_bytes(file_len: u64) -> u64 {
    file_len.saturating_mul(1024).saturating_add(64 << 20)
}

impl DrawReader {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OutputError> {
        let path = path.as_ref().to_path_buf();
        let file = open_hdf5(&path)?;
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        Ok(Self { path, file, len })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn has_group(&self, group: &str) -> bool {
        self.file.link_exists(group) && self.file.group(group).is_ok()
    }

    /// Root attributes that are strings or numbers, as text.
    pub fn attributes(&self) -> BTreeMap<String, String> {
        read_attributes(&self.file)
    }

    /// Per chain, the draws of `group` that are real (the group's
    /// `draws_per_chain` attribute, which bat writes), when recorded.
    pub fn draws_per_chain(&self, group: &str) -> Option<Vec<usize>> {
        let attr = self.group(group).ok()?.attr("draws_per_chain").ok()?;
        let counts = attr.read_raw::<i64>().ok()?;
        counts.iter().map(|&n| usize::try_from(n).ok()).collect()
    }

    /// The (chain, draw, ...) variables of `group` in creation order, skipping
    /// dimension scales and per-chain datasets.
    pub fn variables(&self, group: &str) -> Result<Vec<VariableInfo>, OutputError> {
        let handle = self.group(group)?;
        // In the library's native order, then sorted by creation order:
        // libhdf5 1.10 freed garbage (a crash) building the table it sorts
        // a damaged group's links in, which native order does not build.
        let mut links = handle.links(IndexType::Name, IterationOrder::Native)?;
        links.sort_by(|(a, x), (b, y)| {
            let order = |c: Option<i64>| c.unwrap_or(i64::MAX);
            (order(x.creation_order), a).cmp(&(order(y.creation_order), b))
        });
        let names = links.into_iter().map(|(name, _)| name);
        let mut variables = Vec::new();
        for name in names {
            let Ok(dataset) = handle.dataset(&name) else {
                continue; // a subgroup or other object
            };
            if is_draws_variable(&dataset) {
                let shape = dataset.shape();
                if shape
                    .iter()
                    .try_fold(1usize, |n, &d| n.checked_mul(d))
                    .is_none()
                {
                    return Err(OutputError::Layout {
                        path: self.path.clone(),
                        message: format!("`{name}` has an impossible shape {shape:?}"),
                    });
                }
                variables.push(VariableInfo {
                    group: group.to_string(),
                    name,
                    dims: shape[2..].to_vec(),
                    n_chains: shape[0],
                    n_draws: shape[1],
                });
            }
        }
        Ok(variables)
    }

    /// All draws of a variable.
    pub fn read(&self, info: &VariableInfo) -> Result<StoredVariable, OutputError> {
        self.check_size(info, info.elements_per_draw())?;
        let dataset = self.dataset(info)?;
        let values = dataset
            .read_raw::<f64>()
            .map_err(|e| self.unreadable(info, e))?;
        Ok(StoredVariable {
            name: info.name.clone(),
            dims: info.dims.clone(),
            n_chains: info.n_chains,
            n_draws: info.n_draws,
            values,
        })
    }

    /// The draws of rows `rows` of the variable's first element axis (the whole
    /// variable for scalars); the result's `dims[0]` is `rows.len()`.
    pub fn read_rows(
        &self,
        info: &VariableInfo,
        rows: Range<usize>,
    ) -> Result<StoredVariable, OutputError> {
        if info.dims.is_empty() {
            return self.read(info);
        }
        if rows.start > rows.end || rows.end > info.dims[0] {
            return Err(OutputError::InvalidWrite(format!(
                "rows {rows:?} of `{}` out of range",
                info.name
            )));
        }
        let row: usize = info.dims[1..].iter().product();
        self.check_size(info, rows.len() * row)?;
        let dataset = self.dataset(info)?;
        let mut slices: Vec<SliceOrIndex> = vec![(..).into(), (..).into(), rows.clone().into()];
        slices.extend(info.dims[1..].iter().map(|_| SliceOrIndex::from(..)));
        let selection = Selection::from(Hyperslab::from(slices));
        let array = dataset
            .read_slice::<f64, _, ndarray::IxDyn>(selection)
            .map_err(|e| self.unreadable(info, e))?;
        let mut dims = info.dims.clone();
        dims[0] = rows.len();
        Ok(StoredVariable {
            name: info.name.clone(),
            dims,
            n_chains: info.n_chains,
            n_draws: info.n_draws,
            values: array.into_iter().collect(),
        })
    }

    fn group(&self, group: &str) -> Result<Group, OutputError> {
        self.file
            .group(group)
            .map_err(|_| OutputError::MissingGroup {
                path: self.path.clone(),
                group: group.into(),
            })
    }

    fn dataset(&self, info: &VariableInfo) -> Result<Dataset, OutputError> {
        Ok(self.group(&info.group)?.dataset(&info.name)?)
    }

    /// Reading `per_draw` values of each draw of `info` fits what the file
    /// can hold ([`readable_bytes`]).
    fn check_size(&self, info: &VariableInfo, per_draw: usize) -> Result<(), OutputError> {
        let bytes = (info.n_chains as u64)
            .saturating_mul(info.n_draws as u64)
            .saturating_mul(per_draw as u64)
            .saturating_mul(8);
        if bytes > readable_bytes(self.len) {
            return Err(OutputError::Layout {
                path: self.path.clone(),
                message: format!(
                    "`{}` claims {} × {} draws of {:?}, more than a file of {} bytes can hold (damaged?)",
                    info.name, info.n_chains, info.n_draws, info.dims, self.len
                ),
            });
        }
        Ok(())
    }

    fn unreadable(&self, info: &VariableInfo, error: hdf5::Error) -> OutputError {
        OutputError::Layout {
            path: self.path.clone(),
            message: format!("cannot read `{}` as numbers: {error}", info.name),
        }
    }
}

/// The draws and metadata of a file.
#[derive(Clone, Debug)]
pub struct DrawFile {
    pub path: PathBuf,
    /// Root attributes that are strings or integers, as text.
    pub attributes: BTreeMap<String, String>,
    pub posterior: Vec<StoredVariable>,
    pub sample_stats: Option<Vec<StoredVariable>>,
}

impl DrawFile {
    /// The posterior variable `name`.
    pub fn posterior_variable(&self, name: &str) -> Option<&StoredVariable> {
        self.posterior.iter().find(|v| v.name == name)
    }
}

/// Reads every variable of `posterior` and (when present) `sample_stats`.
pub fn read_draws(path: impl AsRef<Path>) -> Result<DrawFile, OutputError> {
    let reader = DrawReader::open(path)?;
    let read_all = |group: &str| -> Result<Vec<StoredVariable>, OutputError> {
        reader
            .variables(group)?
            .iter()
            .map(|info| reader.read(info))
            .collect()
    };
    let posterior = read_all("posterior")?;
    let sample_stats = if reader.has_group("sample_stats") {
        Some(read_all("sample_stats")?)
    } else {
        None
    };
    Ok(DrawFile {
        attributes: reader.attributes(),
        path: reader.path.clone(),
        posterior,
        sample_stats,
    })
}

/// Opens `path`, telling a missing file and a non-HDF5 file apart from HDF5 errors.
pub fn open_hdf5(path: &Path) -> Result<File, OutputError> {
    let mut handle = std::fs::File::open(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            OutputError::FileMissing(path.to_path_buf())
        } else {
            OutputError::Io {
                path: path.to_path_buf(),
                source,
            }
        }
    })?;
    if !has_hdf5_signature(&mut handle) {
        return Err(OutputError::NotHdf5(path.to_path_buf()));
    }
    if let Err(message) = check_global_heaps(&mut handle) {
        return Err(OutputError::Layout {
            path: path.to_path_buf(),
            message: format!("the file is damaged: {message}"),
        });
    }
    File::open(path).map_err(|source| OutputError::Unreadable {
        path: path.to_path_buf(),
        source,
    })
}

/// Checks every global heap collection of the file (where HDF5 keeps
/// variable-length data: string attributes, dimension lists) before the
/// library reads it: libhdf5 1.10 trusts the sizes in a collection, and a
/// damaged one made it copy past its buffer (a crash) or walk the same
/// object forever (a hang). A collection is `GCOL`, version 1, three zero
/// bytes, its size (8 bytes; at least 4096), then objects: index (2),
/// reference count (2), reserved (4), size (8), data padded to 8 bytes;
/// index 0 is the free space at the end.
fn check_global_heaps(handle: &mut std::fs::File) -> Result<(), String> {
    use std::io::{Seek, SeekFrom};
    const BLOCK: usize = 8 << 20;
    let len = handle.metadata().map_err(|e| e.to_string())?.len();
    let mut offsets = Vec::new();
    let mut block = vec![0u8; BLOCK + 3];
    let mut start = 0u64;
    while start < len {
        handle
            .seek(SeekFrom::Start(start))
            .map_err(|e| e.to_string())?;
        let want = (len - start).min(block.len() as u64) as usize;
        handle
            .read_exact(&mut block[..want])
            .map_err(|e| e.to_string())?;
        let found = block[..want].windows(4).enumerate();
        offsets.extend(
            found
                .filter(|(_, w)| *w == b"GCOL")
                .map(|(i, _)| start + i as u64),
        );
        start += BLOCK as u64;
    }
    for offset in offsets {
        let mut head = [0u8; 16];
        handle
            .seek(SeekFrom::Start(offset))
            .map_err(|e| e.to_string())?;
        if handle.read_exact(&mut head).is_err() || head[4..8] != [1, 0, 0, 0] {
            continue; // not a collection (or one HDF5 rejects itself)
        }
        let size = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
        if size < 4096 || offset.saturating_add(size) > len {
            // HDF5 rejects a collection it cannot read whole; a small one
            // is damage.
            if size < 4096 {
                return Err(format!(
                    "a global heap at byte {offset} claims {size} bytes"
                ));
            }
            continue;
        }
        let mut heap = vec![0u8; size as usize];
        handle
            .seek(SeekFrom::Start(offset))
            .map_err(|e| e.to_string())?;
        handle.read_exact(&mut heap).map_err(|e| e.to_string())?;
        check_heap_objects(&heap)
            .map_err(|why| format!("the global heap at byte {offset}: {why}"))?;
    }
    Ok(())
}

/// The objects of one global heap collection (`heap`, header included)
/// lie inside it and each moves the walk forward.
fn check_heap_objects(heap: &[u8]) -> Result<(), String> {
    const OBJECT_HEADER: usize = 16;
    let mut at = 16;
    while at + OBJECT_HEADER <= heap.len() {
        let index = u16::from_le_bytes([heap[at], heap[at + 1]]);
        let size = u64::from_le_bytes(heap[at + 8..at + 16].try_into().expect("8 bytes"));
        let need = if index == 0 {
            size
        } else {
            (OBJECT_HEADER as u64).saturating_add(size.saturating_add(7) & !7)
        };
        if need == 0 || need > (heap.len() - at) as u64 {
            return Err(format!(
                "object {index} at offset {at} claims {size} bytes of the {} left",
                heap.len() - at
            ));
        }
        at += need as usize;
    }
    Ok(())
}

fn has_hdf5_signature(handle: &mut std::fs::File) -> bool {
    let mut head = Vec::new();
    if handle.take(1 << 16).read_to_end(&mut head).is_err() {
        return false;
    }
    let offsets = std::iter::once(0).chain((9..=16).map(|p| 1usize << p));
    offsets
        .take_while(|&offset| offset + 8 <= head.len())
        .any(|offset| head[offset..offset + 8] == HDF5_SIGNATURE)
}

/// A (chain, draw, ...) variable, as opposed to a dimension scale or a per-chain
/// dataset: at least two axes, and when scales are attached, `chain` then `draw`.
fn is_draws_variable(dataset: &Dataset) -> bool {
    if is_scale(dataset) || dataset.ndim() < 2 {
        return false;
    }
    let axes = attached_dimension_names(dataset);
    let labelled = axes[0].is_some() || axes[1].is_some();
    !labelled || (axes[0].as_deref() == Some("chain") && axes[1].as_deref() == Some("draw"))
}

fn read_attributes(file: &File) -> BTreeMap<String, String> {
    let mut attributes = BTreeMap::new();
    for name in file.attr_names().unwrap_or_default() {
        let Ok(attr) = file.attr(&name) else { continue };
        let descriptor = attr.dtype().and_then(|t| t.to_descriptor());
        let text = match descriptor {
            // Read unsigned as unsigned: HDF5 would clamp u64 seeds into i64.
            Ok(TypeDescriptor::Unsigned(_)) => attr.read_scalar::<u64>().map(|v| v.to_string()),
            Ok(TypeDescriptor::Integer(_)) => attr.read_scalar::<i64>().map(|v| v.to_string()),
            Ok(TypeDescriptor::Float(_)) => attr.read_scalar::<f64>().map(|v| v.to_string()),
            _ => attr
                .read_scalar::<VarLenUnicode>()
                .map(|v| v.as_str().to_string())
                .or_else(|_| {
                    attr.read_scalar::<VarLenAscii>()
                        .map(|v| v.as_str().to_string())
                }),
        };
        if let Ok(text) = text {
            attributes.insert(name, text);
        }
    }
    attributes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_names_are_one_based_row_major() {
        let v = StoredVariable {
            name: "sigma".into(),
            dims: vec![2, 3],
            n_chains: 1,
            n_draws: 1,
            values: vec![0.0; 6],
        };
        let names: Vec<String> = (0..6).map(|e| v.element_name(e)).collect();
        assert_eq!(
            names,
            [
                "sigma[1,1]",
                "sigma[1,2]",
                "sigma[1,3]",
                "sigma[2,1]",
                "sigma[2,2]",
                "sigma[2,3]"
            ]
        );
    }

    #[test]
    fn element_draws_pick_one_element() {
        // 2 chains × 2 draws × 2 elements.
        let v = StoredVariable {
            name: "x".into(),
            dims: vec![2],
            n_chains: 2,
            n_draws: 2,
            values: vec![1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0],
        };
        assert_eq!(v.element_draws(1), vec![10.0, 20.0, 30.0, 40.0]);
    }
}
