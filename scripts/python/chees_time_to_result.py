#!/usr/bin/env python3
"""BlackJAX ChEES-HMC until a target ESS: the peer column of `cargo bench
--bench time_to_result` (run in the venv of scripts/install-peers.sh).

    chees_time_to_result.py PROBLEM DATA_JSON [--chains 1024] [--warmup 200]
        [--target-ess 10000] [--max-rhat 1.01] [--max-draws 1000] [--seed 1]

PROBLEM is one of eight_schools_noncentered, correlated_gaussian_100,
logistic_regression: the log densities below are the examples/*.bat models
written in JAX (the same unconstrained parameters: `tau` on the log scale
with its Jacobian; the same data file), in float64 on the CPU.

What it does, timed piece by piece:
1. `blackjax.chees_adaptation` (Adam on the trajectory length, learning rate
   0.05; the opt-in ensemble diagonal metric, as bat adapts a diagonal
   metric) for `--warmup` steps from per-chain uniform(-2, 2) initial values
   on the unconstrained scale (Stan's and bat's default initialization);
2. jittered dynamic HMC with the adapted step size, metric and trajectory
   length, in chunks, checked at bat's `--target-ess` checkpoints (100 draws
   per chain, then every 50 or a tenth more) until every checked quantity
   has ArviZ's ESS_bulk >= target and rank-normalized split R-hat < max,
   checked as bat checks: quantity by quantity, first the one that failed
   last time, stopping at the first that fails.
   The checked quantities: every parameter on the constrained scale plus
   the deterministic transformed parameters and generated quantities of the
   .bat model (eight schools' `theta`, the logistic regression's
   `log_lik`); eight schools' `y_rep` (random draws) is not computed.

The XLA compilation of the warmup and of the sampling chunk is done ahead
of time (`jit(...).lower(...).compile()`) and reported apart. Prints one
JSON object on stdout: seconds for import, compile, warmup, sampling,
checks, total (from the interpreter's start), draws per chain at the stop,
min ESS_bulk and max R-hat, and whether the target was reached.
"""
import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platform_name", "cpu")

import arviz as az  # noqa: E402
import blackjax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from blackjax.mcmc import dynamic_hmc  # noqa: E402

T_IMPORTED = time.perf_counter()


def normal_lpdf(x, mu, sigma):
    return jnp.sum(-0.5 * jnp.square((x - mu) / sigma) - jnp.log(sigma))


def eight_schools(data):
    """examples/eight_schools_noncentered.bat: z = (mu, log tau, theta_tilde)."""
    y = jnp.asarray(data["y"], dtype=jnp.float64)
    sigma = jnp.asarray(data["sigma"], dtype=jnp.float64)
    j = int(data["J"])

    def logdensity(z):
        mu, log_tau, tt = z[0], z[1], z[2:]
        tau = jnp.exp(log_tau)
        theta = mu + tau * tt
        lp = normal_lpdf(mu, 0.0, 5.0)
        lp += -jnp.log1p(jnp.square(tau / 5.0)) + log_tau  # cauchy(0, 5), Jacobian
        lp += -0.5 * jnp.sum(jnp.square(tt))
        lp += normal_lpdf(y, theta, sigma)
        return lp

    def quantities(z):
        mu, tau, tt = z[0], jnp.exp(z[1]), z[2:]
        return jnp.concatenate([mu[None], tau[None], tt, mu + tau * tt])

    names = ["mu", "tau"] + [f"theta_tilde[{i + 1}]" for i in range(j)]
    names += [f"theta[{i + 1}]" for i in range(j)]
    return 2 + j, logdensity, quantities, names


def correlated_gaussian(data):
    """examples/correlated_gaussian_100.bat: dense AR(1) precision."""
    d, rho = int(data["D"]), float(data["rho"])
    p = np.zeros((d, d))
    for i in range(d):
        p[i, i] = 1.0 if i in (0, d - 1) else 1.0 + rho * rho
        if i > 0:
            p[i, i - 1] = p[i - 1, i] = -rho
    p = jnp.asarray(p / (1.0 - rho * rho))
    mu = jnp.linspace(-1.0, 1.0, d)

    def logdensity(x):
        r = x - mu
        return -0.5 * jnp.dot(r, p @ r)

    return d, logdensity, lambda x: x, [f"x[{i + 1}]" for i in range(d)]


def logistic_regression(data):
    """examples/logistic_regression.bat: z = (alpha, beta); log_lik too."""
    x = jnp.asarray(np.asarray(data["X"], dtype=np.float64))
    y = jnp.asarray(np.asarray(data["y"], dtype=np.float64))
    d = int(data["D"])

    def loglik(z):
        eta = z[0] + x @ z[1:]
        return jnp.sum(y * eta - jax.nn.softplus(eta))

    def logdensity(z):
        return normal_lpdf(z[0], 0.0, 2.5) + normal_lpdf(z[1:], 0.0, 1.0) + loglik(z)

    def quantities(z):
        return jnp.concatenate([z, loglik(z)[None]])

    names = ["alpha"] + [f"beta[{i + 1}]" for i in range(d)] + ["log_lik"]
    return 1 + d, logdensity, quantities, names


PROBLEMS = {
    "eight_schools_noncentered": eight_schools,
    "correlated_gaussian_100": correlated_gaussian,
    "logistic_regression": logistic_regression,
}


def next_check(draws):
    """bat's --target-ess checkpoints: 100, then every 50 or a tenth more."""
    return draws + max(50, draws // 10)


class Check:
    """bat's target check with ArviZ's estimators: quantity by quantity
    (each a (chain, draw) array), starting with the one that failed last
    time, stopping at the first that fails; min ESS_bulk and max R-hat of
    the quantities it computed."""

    def __init__(self, target_ess, max_rhat):
        self.target_ess, self.max_rhat, self.worst = target_ess, max_rhat, 0

    def __call__(self, draws):
        count = draws.shape[2]
        min_ess, max_rhat = float("inf"), 0.0
        for k in range(count):
            i = (self.worst + k) % count
            x = draws[:, :, i]
            if np.all(x == x.flat[0]):
                continue  # a constant is known exactly (bat skips it too)
            ess = float(az.ess(x, method="bulk"))
            rhat = float(az.rhat(x))
            min_ess, max_rhat = min(min_ess, ess), max(max_rhat, rhat)
            if not (ess >= self.target_ess and rhat < self.max_rhat):
                self.worst = i
                return False, min_ess, max_rhat
        return True, min_ess, max_rhat


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", choices=sorted(PROBLEMS))
    parser.add_argument("data")
    parser.add_argument("--chains", type=int, default=1024)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--target-ess", type=float, default=10000.0)
    parser.add_argument("--max-rhat", type=float, default=1.01)
    parser.add_argument("--max-draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    args = parser.parse_args()

    with open(args.data) as f:
        data = json.load(f)
    dim, logdensity, quantities, names = PROBLEMS[args.problem](data)
    chains = args.chains

    key = jax.random.PRNGKey(args.seed)
    key_init, key_warmup, key_sample = jax.random.split(key, 3)
    positions = jax.random.uniform(key_init, (chains, dim), minval=-2.0, maxval=2.0)

    adaptation = blackjax.chees_adaptation(
        logdensity, chains, mass_matrix_estimation="diagonal"
    )
    optim = optax.adam(args.learning_rate)

    def warmup(key, positions):
        (states, parameters), _ = adaptation.run(
            key,
            positions,
            0.1,
            optim,
            args.warmup,
            max_sampling_steps=args.max_draws,
        )
        return (
            states,
            parameters["step_size"],
            parameters["inverse_mass_matrix"],
            parameters["integration_steps_params"][0],
        )

    # The sampling kernel ChEES hands back, rebuilt with array parameters so
    # one compiled chunk serves: the same Halton jitter of the trajectory
    # length (jitter amount 1), continuing the warmup's sequence.
    max_bits = np.ceil(np.log2(args.warmup + args.max_draws))

    def integration_steps_fn(i, num_leapfrog_steps):
        jitter = dynamic_hmc.halton_sequence(i, max_bits)
        return jnp.asarray(jnp.ceil(jitter * num_leapfrog_steps), dtype=int)

    kernel = dynamic_hmc.build_kernel(
        next_random_arg_fn=lambda i: i + 1,
        integration_steps_fn=integration_steps_fn,
    )
    chunk = 50

    def sample_chunk(key, states, step_size, inverse_mass_matrix, steps):
        def one(states, key):
            keys = jax.random.split(key, chains)
            states, info = jax.vmap(
                lambda k, s: kernel(
                    k,
                    s,
                    logdensity,
                    step_size,
                    inverse_mass_matrix,
                    integration_steps_params=(steps,),
                )
            )(keys, states)
            return states, (jax.vmap(quantities)(states.position), info.is_divergent)

        states, (q, divergent) = jax.lax.scan(one, states, jax.random.split(key, chunk))
        return states, jnp.swapaxes(q, 0, 1), jnp.sum(divergent)

    t0 = time.perf_counter()
    warmup_compiled = jax.jit(warmup).lower(key_warmup, positions).compile()
    t1 = time.perf_counter()
    states, step_size, imm, steps = warmup_compiled(key_warmup, positions)
    jax.block_until_ready(states)
    t2 = time.perf_counter()
    chunk_compiled = (
        jax.jit(sample_chunk).lower(key_sample, states, step_size, imm, steps).compile()
    )
    t3 = time.perf_counter()
    compile_s = (t1 - t0) + (t3 - t2)
    warmup_s = t2 - t1

    check = Check(args.target_ess, args.max_rhat)
    pieces, drawn, divergent = [], 0, 0
    check_at, sampling_s, checks_s = 100, 0.0, 0.0
    min_ess, max_rhat, reached = float("nan"), float("nan"), False
    warnings.filterwarnings("ignore", message="More chains")
    while drawn < args.max_draws:
        t = time.perf_counter()
        key_sample, key_chunk = jax.random.split(key_sample)
        states, q, div = chunk_compiled(key_chunk, states, step_size, imm, steps)
        pieces.append(np.asarray(q))
        divergent += int(div)
        drawn += chunk
        sampling_s += time.perf_counter() - t
        while drawn >= check_at or drawn >= args.max_draws:
            t = time.perf_counter()
            draws = np.concatenate(pieces, axis=1)[:, : min(check_at, drawn)]
            reached, min_ess, max_rhat = check(draws)
            checks_s += time.perf_counter() - t
            if reached:
                break
            if drawn >= args.max_draws:
                break
            check_at = next_check(check_at)
        if reached:
            drawn = draws.shape[1]
            break
    result = {
        "problem": args.problem,
        "chains": chains,
        "warmup_steps": args.warmup,
        "step_size": float(step_size),
        "leapfrog_steps": float(steps),
        "reached": reached,
        "draws_per_chain": drawn,
        "min_ess_bulk": min_ess,
        "max_rhat": max_rhat,
        "divergent": divergent,
        "import_s": T_IMPORTED - T_START,
        "compile_s": compile_s,
        "warmup_s": warmup_s,
        "sampling_s": sampling_s,
        "checks_s": checks_s,
        "total_s": time.perf_counter() - T_START,
        "blackjax": blackjax.__version__,
        "jax": jax.__version__,
    }
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
