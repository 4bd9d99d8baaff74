#!/usr/bin/env python3
"""Sample a Stan program with Stan itself (PyStan 3 / httpstan) and print JSON.

Usage: stan_sample.py MODEL.stan DATA.json CHAINS WARMUP SAMPLES SEED

The opponent of `cargo bench --bench stan`. Prints one JSON object:
`compile_s` (building the model: about a minute the first time, then from
httpstan's cache), `sampling_s` (the wall time of `posterior.sample`, all
chains at once, as PyStan runs them: one process per chain), `gradients`
(leapfrog steps of all chains, warmup included: n_leapfrog__ counts only
kept draws, so this is kept draws' steps) and `draws`: every parameter,
transformed parameter and generated quantity under Stan's names
(`theta[1,2]`), chain by chain, as lists of floats.
"""
import contextlib
import json
import sys
import time

import httpstan.cache
import numpy as np
import stan


def stan_name(flat):
    """PyStan's `theta.1.2` as Stan writes it: `theta[1,2]`."""
    head, *indices = flat.split(".")
    return f"{head}[{','.join(indices)}]" if indices else head


def main():
    model, data, chains, warmup, samples, seed = sys.argv[1:7]
    with open(model) as f:
        code = f.read()
    with open(data) as f:
        values = json.load(f)
    # PyStan and stanc print progress and messages; stdout is for the JSON.
    with contextlib.redirect_stdout(sys.stderr):
        started = time.perf_counter()
        posterior = stan.build(code, data=values, random_seed=int(seed))
        # httpstan keeps every fit and answers the same request from that
        # cache at once: drop this model's fits so that Stan samples.
        fits = httpstan.cache.model_directory(posterior.model_name) / "fits"
        for cached in fits.glob("*"):
            cached.unlink()
        compiled = time.perf_counter()
        fit = posterior.sample(
            num_chains=int(chains), num_warmup=int(warmup), num_samples=int(samples)
        )
        sampled = time.perf_counter()
    # fit._draws: (names, draws, chains); its rows are the sampler's
    # statistics, then the constrained names in Stan's order.
    names = list(fit.sample_and_sampler_param_names) + list(fit.constrained_param_names)
    draws = np.asarray(fit._draws)
    leapfrogs = draws[names.index("n_leapfrog__")]
    out = {
        "compile_s": compiled - started,
        "sampling_s": sampled - compiled,
        "gradients": float(np.sum(leapfrogs)),
        "draws": {
            stan_name(name): draws[i].T.tolist()
            for i, name in enumerate(names)
            if not name.endswith("__")
        },
    }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
