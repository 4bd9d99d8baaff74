#!/usr/bin/env python3
"""Open a bat draws file the way users do and print what ArviZ computes from it.

Usage: arviz_check.py FILE [--values]

Opens FILE with `arviz.from_netcdf` and with `xarray.open_dataset(group=...)` through
both the h5netcdf and netCDF4 engines, checks the engines agree, and prints JSON:
per-quantity ArviZ diagnostics (rhat rank, ess bulk/tail, mcse mean) and numpy
moments/quantiles under Stan-style names (`theta[1,2]`, 1-based, row-major), plus
dims, dtypes and attributes. With --values, also every posterior value.
"""
import json
import math
import sys
import warnings

import arviz as az
import numpy as np
import xarray as xr


def clean(value):
    """JSON-safe: NaN/inf become None, numpy scalars become Python scalars."""
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return clean(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


def stan_name(var, index):
    if not index:
        return var
    return f"{var}[{','.join(str(i + 1) for i in index)}]"


def quantity_stats(posterior):
    rhat = az.rhat(posterior, method="rank")
    ess_bulk = az.ess(posterior, method="bulk")
    ess_tail = az.ess(posterior, method="tail")
    mcse_mean = az.mcse(posterior, method="mean")
    out = {}
    for var in posterior.data_vars:
        values = posterior[var].values  # (chain, draw, ...)
        element_shape = values.shape[2:]
        for index in np.ndindex(*element_shape):
            draws = values[(slice(None), slice(None)) + index]
            flat = draws.ravel()
            out[stan_name(var, index)] = {
                "r_hat": rhat[var].values[index],
                "ess_bulk": ess_bulk[var].values[index],
                "ess_tail": ess_tail[var].values[index],
                "mcse": mcse_mean[var].values[index],
                "mean": flat.mean(),
                "sd": flat.std(ddof=1),
                "q5": np.quantile(flat, 0.05),
                "q50": np.quantile(flat, 0.5),
                "q95": np.quantile(flat, 0.95),
            }
    return out


def main():
    path = sys.argv[1]
    with_values = "--values" in sys.argv[2:]
    warnings.simplefilter("ignore")
    idata = az.from_netcdf(path)
    groups = list(idata.groups())
    report = {"groups": groups, "arviz_version": az.__version__}
    for group in ("posterior", "sample_stats"):
        by_h5netcdf = xr.open_dataset(path, group=group, engine="h5netcdf")
        by_netcdf4 = xr.open_dataset(path, group=group, engine="netcdf4")
        xr.testing.assert_identical(by_h5netcdf.load(), by_netcdf4.load())
        xr.testing.assert_equal(getattr(idata, group), by_h5netcdf)
        report[group] = {
            "dims": {v: list(by_h5netcdf[v].dims) for v in by_h5netcdf.data_vars},
            "dtypes": {v: str(by_h5netcdf[v].dtype) for v in by_h5netcdf.data_vars},
            "sizes": dict(by_h5netcdf.sizes),
            "coords": {c: by_h5netcdf[c].values.tolist() for c in by_h5netcdf.coords
                       if c in ("chain", "draw")},
        }
        if with_values and group == "posterior":
            report[group]["values"] = {
                v: by_h5netcdf[v].values.ravel().tolist() for v in by_h5netcdf.data_vars
            }
    report["stats"] = quantity_stats(idata.posterior)
    root = xr.open_dataset(path, engine="h5netcdf")
    report["attrs"] = {k: str(v) for k, v in root.attrs.items()}
    print(json.dumps(clean(report)))


if __name__ == "__main__":
    main()
