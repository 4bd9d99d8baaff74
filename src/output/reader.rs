//! Reading draws back from an InferenceData HDF5 file (ours or any netCDF-4 file
//! with `posterior` / `sample_stats` groups laid out (chain, draw, ...)).

use super::dimscale::{attached_dimension_names, is_scale};
use super::error::OutputError;
use hdf5::types::{TypeDescriptor, VarLenAscii, VarLenUnicode};
use hdf5::{Dataset, File, Group, IndexType, IterationOrder};
use std::collections::BTreeMap;
use std::io::Read;
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
        if self.dims.is_empty() {
            return self.name.clone();
        }
        let mut index = vec![0; self.dims.len()];
        let mut rest = element;
        for axis in (0..self.dims.len()).rev() {
            index[axis] = rest % self.dims[axis];
            rest /= self.dims[axis];
        }
        let index: Vec<String> = index.iter().map(|i| (i + 1).to_string()).collect();
        format!("{}[{}]", self.name, index.join(","))
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

/// Reads every variable of `posterior` and (when present) `sample_stats`.
pub fn read_draws(path: impl AsRef<Path>) -> Result<DrawFile, OutputError> {
    let path = path.as_ref().to_path_buf();
    let file = open_hdf5(&path)?;
    let posterior = file
        .group("posterior")
        .map_err(|_| OutputError::MissingGroup {
            path: path.clone(),
            group: "posterior".into(),
        })?;
    let posterior = read_group(&path, &posterior)?;
    let sample_stats = match file.group("sample_stats") {
        Ok(group) => Some(read_group(&path, &group)?),
        Err(_) => None,
    };
    Ok(DrawFile {
        attributes: read_attributes(&file),
        path,
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
    Ok(File::open(path)?)
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

fn read_group(path: &Path, group: &Group) -> Result<Vec<StoredVariable>, OutputError> {
    let names = group
        .member_names_by(IndexType::CreationOrder, IterationOrder::Increasing)
        .or_else(|_| group.member_names())?;
    let mut variables = Vec::new();
    for name in names {
        let Ok(dataset) = group.dataset(&name) else {
            continue; // a subgroup or other object
        };
        if let Some(variable) = read_variable(path, &name, &dataset)? {
            variables.push(variable);
        }
    }
    Ok(variables)
}

/// A (chain, draw, ...) variable; `None` for scales and per-chain datasets.
fn read_variable(
    path: &Path,
    name: &str,
    dataset: &Dataset,
) -> Result<Option<StoredVariable>, OutputError> {
    let shape = dataset.shape();
    if is_scale(dataset) || shape.len() < 2 {
        return Ok(None);
    }
    let axes = attached_dimension_names(dataset);
    let labelled = axes[0].is_some() || axes[1].is_some();
    if labelled && (axes[0].as_deref() != Some("chain") || axes[1].as_deref() != Some("draw")) {
        return Ok(None);
    }
    let values = dataset.read_raw::<f64>().map_err(|e| OutputError::Layout {
        path: path.to_path_buf(),
        message: format!("cannot read `{name}` as numbers: {e}"),
    })?;
    Ok(Some(StoredVariable {
        name: name.to_string(),
        dims: shape[2..].to_vec(),
        n_chains: shape[0],
        n_draws: shape[1],
        values,
    }))
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
