#!/usr/bin/env python3
"""Write an InferenceData file with ArviZ itself (`InferenceData.to_netcdf`), so the
Rust tests can check that `bat summary` reads files other tools produce.

Usage: make_arviz_file.py PATH [ENGINE]   (ENGINE: netcdf4 or h5netcdf)
"""
import sys
import warnings

import arviz as az
import numpy as np


def main():
    path = sys.argv[1]
    engine = sys.argv[2] if len(sys.argv) > 2 else "netcdf4"
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(7)
    chains, draws = 4, 300
    ar = np.zeros((chains, draws))
    for t in range(1, draws):
        ar[:, t] = 0.7 * ar[:, t - 1] + rng.standard_normal(chains)
    posterior = {
        "mu": ar + np.arange(chains)[:, None] * 0.2,
        "theta": rng.standard_cauchy((chains, draws, 3)),
        "L": rng.standard_normal((chains, draws, 2, 2)),
    }
    sample_stats = {
        "lp": -np.abs(rng.standard_normal((chains, draws))),
        "diverging": rng.random((chains, draws)) < 0.01,
        "tree_depth": rng.integers(1, 11, (chains, draws)),
    }
    idata = az.from_dict(posterior=posterior, sample_stats=sample_stats)
    idata.to_netcdf(path, engine=engine)


if __name__ == "__main__":
    main()
