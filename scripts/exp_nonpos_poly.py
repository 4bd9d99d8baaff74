#!/usr/bin/env python3
"""Coefficients E1..E9 of `exp_nonpos` (math/src/scalar/branchless.rs).

eʳ − 1 − r ≈ r²·E(r), E(r) = ½ + E1·r + … + E9·r⁹ on |r| ≤ ln 2 / 2 (a little
more, for the rounding of r): minimax of the absolute error r²·(q(r) − E(r)),
q(r) = (eʳ − 1 − r)/r², by Remez exchange with the leading coefficient pinned
to ½ (exact in binary; rounding a free leading coefficient to a double would
cost 0.06·2⁻⁵³ by itself). Needs mpmath. Prints the error bound and the
coefficients as Rust `f64::from_bits` constants.
"""

import struct

import mpmath as mp

mp.mp.dps = 80
HALF_WIDTH = mp.mpf("0.3466")  # ln 2 / 2 = 0.34657…
DEGREE = 9  # of E


def g(x):
    return mp.expm1(x) - x


def q_tail(x):
    """(q(x) − ½)/x: what E1 + E2·x + … approximates."""
    return (g(x) - x * x / 2) / x**3


def weight(x):
    """The error of eʳ is |x|³ times that of q_tail."""
    return abs(x) ** 3


def remez(n):
    """Minimax polynomial of degree n for q_tail under weight on ±HALF_WIDTH."""
    a = HALF_WIDTH
    m = n + 1
    ref = [a * mp.cos(mp.pi * (m - i) / m) for i in range(m + 1)]
    ref = [x if abs(x) > mp.mpf("1e-3") else mp.mpf("1e-2") for x in ref]
    grid = [-a + 2 * a * i / 2000 for i in range(2001) if i != 1000]
    for _ in range(40):
        mat = mp.matrix(m + 1, m + 1)
        rhs = mp.matrix(m + 1, 1)
        for i, x in enumerate(ref):
            for j in range(m):
                mat[i, j] = weight(x) * x**j
            mat[i, m] = (-1) ** i
            rhs[i] = weight(x) * q_tail(x)
        sol = mp.lu_solve(mat, rhs)
        c = [sol[j] for j in range(m)]
        level = abs(sol[m])

        def err(x):
            return weight(x) * (q_tail(x) - sum(c[j] * x**j for j in range(m)))

        es = [err(x) for x in grid]
        # Local extrema of |err| (or sign changes), one per same-sign run.
        cand = []
        for i, e in enumerate(es):
            left = es[i - 1] if i > 0 else None
            right = es[i + 1] if i + 1 < len(es) else None
            if e != 0 and all(
                o is None or abs(e) >= abs(o) or mp.sign(o) != mp.sign(e)
                for o in (left, right)
            ):
                cand.append((grid[i], e))
        runs = []
        for x, e in cand:
            if runs and mp.sign(runs[-1][1]) == mp.sign(e):
                if abs(e) > abs(runs[-1][1]):
                    runs[-1] = (x, e)
            else:
                runs.append((x, e))
        new = []
        for x, _ in runs:
            lo, hi = max(-a, x - 2 * a / 2000), min(a, x + 2 * a / 2000)
            for _ in range(50):
                m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
                if abs(err(m1)) > abs(err(m2)):
                    hi = m2
                else:
                    lo = m1
            new.append((lo + hi) / 2)
        while len(new) > m + 1:
            new.pop(0 if abs(err(new[0])) < abs(err(new[-1])) else -1)
        worst = max(abs(err(x)) for x in new)
        ref = new
        if abs(worst - level) / worst < mp.mpf("1e-8"):
            break
    return c


def main():
    coeffs = [float(c) for c in remez(DEGREE - 1)]
    unit = mp.mpf(2) ** -53
    worst = mp.mpf(0)
    for i in range(20001):
        r = -HALF_WIDTH + 2 * HALF_WIDTH * i / 20000
        e = mp.mpf(0)
        for c in reversed(coeffs):
            e = e * r + mp.mpf(c)
        e = mp.mpf(1) / 2 + r * e
        worst = max(worst, abs(g(r) - r * r * e))
    print(f"// |eʳ − 1 − r − r²·E(r)| ≤ {mp.nstr(worst / unit, 3)}·2⁻⁵³")
    for i, c in enumerate(coeffs, 1):
        h = f"{struct.unpack('<Q', struct.pack('<d', c))[0]:016x}"
        print(f"const E{i}: f64 = f64::from_bits(0x{h[0:4]}_{h[4:8]}_{h[8:12]}_{h[12:16]});")


if __name__ == "__main__":
    main()
