//! HDF5 dimension scales (the H5DS high-level API, which hdf5-metno does not wrap).
//!
//! netCDF-4 readers (netCDF-C, h5netcdf) discover dimensions through dimension scales:
//! a scale carries `CLASS = "DIMENSION_SCALE"` and `NAME`, and every variable axis is
//! attached to its scale (`DIMENSION_LIST` on the variable, `REFERENCE_LIST` on the
//! scale). The library `hdf5_hl` writes those attributes exactly as netCDF expects.

use hdf5::Dataset;
use hdf5_sys::h5::herr_t;
use hdf5_sys::h5i::hid_t;
use std::ffi::{CString, c_char, c_int, c_uint, c_void};

type IterateScales =
    extern "C" fn(dataset: hid_t, dim: c_uint, scale: hid_t, visitor_data: *mut c_void) -> herr_t;

unsafe extern "C" {
    fn H5DSset_scale(dsid: hid_t, dimname: *const c_char) -> herr_t;
    fn H5DSattach_scale(did: hid_t, dsid: hid_t, idx: c_uint) -> herr_t;
    fn H5DSis_scale(did: hid_t) -> i32;
    fn H5DSget_scale_name(did: hid_t, name: *mut c_char, size: usize) -> isize;
    fn H5DSiterate_scales(
        did: hid_t,
        dim: c_uint,
        idx: *mut c_int,
        visitor: IterateScales,
        visitor_data: *mut c_void,
    ) -> herr_t;
}

fn check(status: herr_t, what: &str) -> hdf5::Result<()> {
    if status < 0 {
        Err(hdf5::Error::from(format!("{what} failed")))
    } else {
        Ok(())
    }
}

/// Marks `scale` as the dimension scale named `name`.
pub fn set_scale(scale: &Dataset, name: &str) -> hdf5::Result<()> {
    let name = CString::new(name).map_err(|_| hdf5::Error::from("NUL in dimension name"))?;
    // SAFETY: both ids are live (borrowed datasets) and `name` is NUL-terminated.
    let status = hdf5::sync::sync(|| unsafe { H5DSset_scale(scale.id(), name.as_ptr()) });
    check(status, "H5DSset_scale")
}

/// Attaches `scale` to axis `axis` of `dataset`.
pub fn attach_scale(dataset: &Dataset, scale: &Dataset, axis: usize) -> hdf5::Result<()> {
    // SAFETY: both ids are live for the duration of the call.
    let status =
        hdf5::sync::sync(|| unsafe { H5DSattach_scale(dataset.id(), scale.id(), axis as c_uint) });
    check(status, "H5DSattach_scale")
}

/// Whether `dataset` is a dimension scale.
pub fn is_scale(dataset: &Dataset) -> bool {
    // SAFETY: the id is live; the call only reads attributes.
    hdf5::sync::sync(|| unsafe { H5DSis_scale(dataset.id()) }) > 0
}

/// Names of the dimension scales attached to each axis of `dataset` (first scale of
/// each axis; `None` for an axis without one).
pub fn attached_dimension_names(dataset: &Dataset) -> Vec<Option<String>> {
    extern "C" fn first_scale_name(
        _dataset: hid_t,
        _dim: c_uint,
        scale: hid_t,
        visitor_data: *mut c_void,
    ) -> herr_t {
        // SAFETY: `visitor_data` points at the caller's `Option<String>`; the scale id
        // is valid during the callback (the library closes it afterwards).
        unsafe { *(visitor_data as *mut Option<String>) = scale_name(scale) };
        1 // stop after the first scale
    }
    (0..dataset.ndim())
        .map(|axis| {
            let mut name: Option<String> = None;
            let mut index: c_int = 0;
            // SAFETY: `name` and `index` outlive the call; the callback only writes `name`.
            let status = hdf5::sync::sync(|| unsafe {
                H5DSiterate_scales(
                    dataset.id(),
                    axis as c_uint,
                    &mut index,
                    first_scale_name,
                    &mut name as *mut Option<String> as *mut c_void,
                )
            });
            if status < 0 { None } else { name }
        })
        .collect()
}

/// Must be called with the HDF5 lock held (from inside an H5DS callback).
fn scale_name(scale: hid_t) -> Option<String> {
    let mut buffer = vec![0u8; 256];
    // SAFETY: the buffer is writable for its full length.
    let length =
        unsafe { H5DSget_scale_name(scale, buffer.as_mut_ptr() as *mut c_char, buffer.len()) };
    if length <= 0 {
        return None;
    }
    let length = (length as usize).min(buffer.len() - 1);
    buffer.truncate(length);
    String::from_utf8(buffer).ok()
}
