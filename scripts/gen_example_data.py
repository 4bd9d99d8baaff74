#!/usr/bin/env python3
"""Write deterministic data files for examples/ (standard library only).

- examples/logistic_regression.data.json: N=10,000, D=100 (about 9 MB, not
  committed: scripts/setup.d/20-example-data.sh generates it).
- examples/hierarchical_radon.data.json: a small radon-like data set.

The same seed always gives byte-identical files.
"""
import json
import math
import pathlib
import random
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def logistic_regression(rng, n=10_000, d=100):
    alpha = 0.3
    beta = [rng.gauss(0.0, 0.5) for _ in range(d)]
    x = [[round(rng.gauss(0.0, 1.0) / math.sqrt(d), 4) for _ in range(d)] for _ in range(n)]
    y = []
    for row in x:
        eta = alpha + sum(b * v for b, v in zip(beta, row))
        y.append(1 if rng.random() < 1.0 / (1.0 + math.exp(-eta)) else 0)
    return {"N": n, "D": d, "X": x, "y": y}


def hierarchical_radon(rng, n=200, j=12):
    mu_beta = (1.5, -0.7)
    tau = (0.4, 0.2)
    county_effects = [
        (mu_beta[0] + tau[0] * rng.gauss(0, 1), mu_beta[1] + tau[1] * rng.gauss(0, 1))
        for _ in range(j)
    ]
    county, floor, log_radon = [], [], []
    for i in range(n):
        c = i % j + 1  # every county has houses
        f = 1 if rng.random() < 0.2 else 0
        a, b = county_effects[c - 1]
        county.append(c)
        floor.append(f)
        log_radon.append(round(a + b * f + rng.gauss(0, 0.7), 4))
    return {"N": n, "J": j, "county": county, "floor_measure": floor, "log_radon": log_radon}


def write(name, data):
    path = EXAMPLES / name
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path.relative_to(EXAMPLES.parent)} ({path.stat().st_size} bytes)")


def main(argv):
    which = argv[1:] or ["logistic_regression", "hierarchical_radon"]
    if "logistic_regression" in which:
        write("logistic_regression.data.json", logistic_regression(random.Random(20_261_122)))
    if "hierarchical_radon" in which:
        write("hierarchical_radon.data.json", hierarchical_radon(random.Random(1981)))


if __name__ == "__main__":
    main(sys.argv)
