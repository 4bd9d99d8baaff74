// Stan's NUTS with windowed adaptation, as a program in bat's own language.
//
// One call of `sample_chain_rng` runs one chain from initialization to its
// last draw. It follows Stan's base_nuts / adapt_diag_e_nuts /
// stepsize_adaptation / windowed_adaptation / welford_var_estimator
// line by line (multinomial sampling, biased progressive sampling at the
// top, generalized U-turn criterion with the two extra sub-tree checks,
// divergence when H - H0 > 1000, max depth, dual averaging, windowed
// diagonal metric adaptation, initial step-size heuristic), so that the
// batched executors can later run it for every chain at once and
// synchronize chains at gradient granularity. With hmc_steps > 0 the chain
// runs jittered HMC instead of NUTS (`--algorithm chees`: pooled warmup
// adapts its trajectory length on the host from what emit_trajectory
// reports).
//
// A dense inverse metric M^-1 = L L' (pooled warmup's `--metric dense`)
// is given as its Cholesky factor L. The chain then moves in whitened
// coordinates x = L^-1 q with a unit metric, the model's log density and
// gradient taken at q = L x (the gradient in x is L' times the gradient in
// q): leapfrog, energy, momentum and the U-turn criterion in x are
// exactly those of Stan's dense_e in q (p_x = L' p ~ N(0, I) is
// p = L^-T z ~ N(0, M); x's velocity p_x is L^-1 M^-1 p; p_x' p_x is
// p' M^-1 p), so the kernel is Stan's, computed with other roundings. A
// diagonal metric's factor has no rows and every step computes what it
// did before the dense metric existed.
//
// The program talks to the host only through the external functions
// declared below without a body. Random numbers come from the chain's own
// counter-based stream (`uniform_rng`, `std_normal_rng`).
//
// Stan's functions pass arguments by value, so `build_tree` returns the
// state it changes as a tuple; the caller merges the sub-tree's weights,
// momentum sums and counters into its own (equivalent to Stan's in/out
// references, which always start from fresh accumulators).
//
// Written for batched execution (program-counter autobatching runs every
// chain as a lane, block by block): the hot path has few basic blocks and
// few calls (the leaf step and the U-turn checks are written inline, and
// choices are `?:` expressions where the draws allow), and `build_tree`
// keeps each sub-tree's result in one tuple declared with its value, so a
// recursive call saves only what is live across it. These choices do not
// change any chain's draws.

functions {
  // lp and gradient at unconstrained theta; a rejection, a domain error or
  // a non-finite lp gives lp = -inf (so the step counts as divergent).
  tuple(real, vector) model_log_density_gradient(vector theta);

  // Records one iteration (warmup or sampling) of the chain.
  void emit_draw(int iteration, vector theta, real lp, real accept_stat,
                 real step_size, int tree_depth, int n_leapfrog,
                 int divergent, real energy);

  // The adapted step size and inverse metric, once at the end of warmup.
  void emit_adaptation(real step_size, vector inv_metric);

  // A jittered-HMC iteration's trajectory, before its Metropolis step and
  // before its emit_draw: where it started, where it ended and the velocity
  // M^-1 p there, and its length in time, leapfrog steps × step size (what
  // ChEES adaptation of the trajectory length needs). With a dense metric
  // the points and velocity are the whitened coordinates'.
  void emit_trajectory(vector q_start, vector q_end, vector velocity_end,
                       real time);

  // -------------------------------------------------------------- dynamics

  // H(q, p) = -lp(q) + p' M^-1 p / 2 (diagonal M^-1); NaN counts as +inf.
  real hamiltonian(real lp, vector p, vector inv_metric) {
    real h = -lp + 0.5 * dot_product(p, inv_metric .* p);
    if (is_nan(h)) {
      return positive_infinity();
    }
    return h;
  }

  // p ~ N(0, M): p_i = z_i / sqrt(M^-1_ii), drawn in element order.
  vector sample_momentum_rng(vector inv_metric) {
    int n = rows(inv_metric);
    return to_vector(normal_rng(rep_vector(0, n), 1)) ./ sqrt(inv_metric);
  }

  // One leapfrog step of size eps: returns (q, p, lp, grad lp), q and its
  // gradient whitened by a dense metric's factor. (The leaf of
  // build_tree_rng repeats these statements inline.)
  tuple(vector, vector, real, vector) leapfrog(vector q, vector p, vector g,
                                               real eps, vector inv_metric,
                                               matrix metric_factor) {
    int n = rows(q);
    vector[n] p_half = p + (0.5 * eps) * g;
    vector[n] q_new = q + eps * (inv_metric .* p_half);
    tuple(real, vector[n]) lp_grad = model_log_density_gradient(
        rows(metric_factor) > 0 ? metric_factor * q_new : q_new);
    vector[n] g_new = rows(metric_factor) > 0 ? metric_factor' * lp_grad.2
                                              : lp_grad.2;
    vector[n] p_new = p_half + (0.5 * eps) * g_new;
    return (q_new, p_new, lp_grad.1, g_new);
  }

  // --------------------------------------------------------------- the tree

  // Builds a sub-tree of 2^depth leapfrog steps from (q0, p0) in the
  // direction of the sign of eps. Returns, in order:
  //  1 valid (no U-turn, no divergence), 2 divergent,
  //  3-6 the last point reached (q, p, lp, g),
  //  7-10 the multinomial proposal of the sub-tree (q, p, lp, g),
  //  11 p at its first step, 12 rho (sum of the momenta),
  //  13 log sum of the weights exp(H0 - H), 14 leapfrog steps taken,
  //  15 sum of the Metropolis acceptance probabilities.
  // Stan's tree also carries p_sharp = M^-1 p at both ends and p at the last
  // step; here p at the last step is 4, and p_sharp is recomputed as
  // inv_metric .* p where a U-turn check needs it (the same product of the
  // same numbers, so the same bits): a narrower tuple is less to copy at
  // every return, save and restore.
  tuple(int, int, vector, vector, real, vector, vector, vector, real, vector,
        vector, vector, real, int, real)
  build_tree_rng(int depth, vector q0, vector p0, real lp0, vector g0,
                 real H0, real eps, vector inv_metric, matrix metric_factor,
                 real max_delta_h) {
    int n = rows(q0);
    if (depth == 0) {
      // One leapfrog step (`leapfrog`'s statements, inline: no call, no
      // copies of its arguments and result), its energy
      // H = -lp + p' M^-1 p / 2 (NaN counts as +inf), divergence and
      // Metropolis acceptance probability.
      vector[n] p_half = p0 + (0.5 * eps) * g0;
      vector[n] q = q0 + eps * (inv_metric .* p_half);
      tuple(real, vector[n]) lp_grad = model_log_density_gradient(
          rows(metric_factor) > 0 ? metric_factor * q : q);
      vector[n] g = rows(metric_factor) > 0 ? metric_factor' * lp_grad.2
                                            : lp_grad.2;
      vector[n] p = p_half + (0.5 * eps) * g;
      vector[n] p_sharp = inv_metric .* p;
      real h_raw = -lp_grad.1 + 0.5 * dot_product(p, p_sharp);
      real h = is_nan(h_raw) ? positive_infinity() : h_raw;
      int divergent = (h - H0) > max_delta_h;
      real metro_prob = H0 - h > 0 ? 1.0 : exp(H0 - h);
      return (!divergent, divergent, q, p, lp_grad.1, g, q, p,
              lp_grad.1, g, p, p, H0 - h, 1, metro_prob);
    }
    // The initial sub-tree.
    tuple(int, int, vector[n], vector[n], real, vector[n], vector[n],
          vector[n], real, vector[n], vector[n], vector[n], real, int, real) init
        = build_tree_rng(depth - 1, q0, p0, lp0, g0, H0, eps, inv_metric,
                         metric_factor, max_delta_h);
    if (!init.1) {
      return init;
    }
    // The final sub-tree, continuing from where the initial one ended.
    tuple(int, int, vector[n], vector[n], real, vector[n], vector[n],
          vector[n], real, vector[n], vector[n], vector[n], real, int, real) final
        = build_tree_rng(depth - 1, init.3, init.4, init.5, init.6, H0, eps,
                         inv_metric, metric_factor, max_delta_h);
    int n_leapfrog = init.14 + final.14;
    real metro_prob = init.15 + final.15;
    if (!final.1) {
      return (0, final.2, final.3, final.4, final.5, final.6, init.7, init.8,
              init.9, init.10, init.11, init.12, init.13, n_leapfrog,
              metro_prob);
    }
    // Multinomial sample from the final sub-tree (a uniform is drawn only
    // when its weight is below the merged one).
    real log_sum_weight = log_sum_exp(init.13, final.13);
    int take_final = final.13 > log_sum_weight
                     ? 1
                     : uniform_rng(0, 1) < exp(final.13 - log_sum_weight);
    vector[n] rho = init.12 + final.12;
    // Generalized no-U-turn criterion across the merged sub-tree, then
    // between the two sub-trees (p_sharp at the first and last steps of
    // the initial and final sub-trees).
    vector[n] p_sharp_init_first = inv_metric .* init.11;
    vector[n] p_sharp_init_last = inv_metric .* init.4;
    vector[n] p_sharp_final_first = inv_metric .* final.11;
    vector[n] p_sharp_final_last = inv_metric .* final.4;
    int persist = dot_product(p_sharp_final_last, rho) > 0
                  && dot_product(p_sharp_init_first, rho) > 0;
    vector[n] rho_left = init.12 + final.11;
    persist = persist && dot_product(p_sharp_final_first, rho_left) > 0
              && dot_product(p_sharp_init_first, rho_left) > 0;
    vector[n] rho_right = final.12 + init.4;
    persist = persist && dot_product(p_sharp_final_last, rho_right) > 0
              && dot_product(p_sharp_init_last, rho_right) > 0;
    return (persist, 0, final.3, final.4, final.5, final.6,
            take_final ? final.7 : init.7, take_final ? final.8 : init.8,
            take_final ? final.9 : init.9, take_final ? final.10 : init.10,
            init.11, rho, log_sum_weight, n_leapfrog, metro_prob);
  }

  // One NUTS transition from (q0, lp0, g0). Returns the new point
  // (q, lp, g) and the iteration's statistics: accept_stat, tree_depth,
  // n_leapfrog, divergent, energy.
  tuple(vector, real, vector, real, int, int, int, real)
  transition_rng(vector q0, real lp0, vector g0, real eps, vector inv_metric,
                 matrix metric_factor, int max_depth) {
    int n = rows(q0);
    real max_delta_h = 1000;
    vector[n] p0 = sample_momentum_rng(inv_metric);
    real H0 = hamiltonian(lp0, p0, inv_metric);

    // The two ends of the trajectory.
    vector[n] q_fwd = q0;
    vector[n] p_fwd = p0;
    real lp_fwd = lp0;
    vector[n] g_fwd = g0;
    vector[n] q_bck = q0;
    vector[n] p_bck = p0;
    real lp_bck = lp0;
    vector[n] g_bck = g0;
    // Momenta at the inner ends of the forward and backward sub-trees (at
    // the outer ends they are p_fwd and p_bck); p_sharp = M^-1 p is
    // computed where the U-turn checks need it.
    vector[n] p_fwd_bck = p0;
    vector[n] p_bck_fwd = p0;
    vector[n] rho = p0;

    vector[n] q_sample = q0;
    vector[n] p_sample = p0;
    real lp_sample = lp0;
    vector[n] g_sample = g0;

    real log_sum_weight = 0;
    int n_leapfrog = 0;
    real sum_metro_prob = 0;
    int depth = 0;
    int divergent = 0;

    while (depth < max_depth) {
      vector[n] rho_fwd = rep_vector(0, n);
      vector[n] rho_bck = rep_vector(0, n);
      int valid;
      vector[n] q_prop;
      vector[n] p_prop;
      real lp_prop;
      vector[n] g_prop;
      real log_sum_weight_subtree;
      int n_subtree;
      real metro_subtree;
      if (uniform_rng(0, 1) > 0.5) {
        rho_bck = rho;
        p_bck_fwd = p_fwd_bck;
        (valid, divergent, q_fwd, p_fwd, lp_fwd, g_fwd, q_prop, p_prop, lp_prop,
         g_prop, p_fwd_bck, rho_fwd, log_sum_weight_subtree, n_subtree,
         metro_subtree)
            = build_tree_rng(depth, q_fwd, p_fwd, lp_fwd, g_fwd, H0, eps,
                             inv_metric, metric_factor, max_delta_h);
      } else {
        rho_fwd = rho;
        p_fwd_bck = p_bck_fwd;
        (valid, divergent, q_bck, p_bck, lp_bck, g_bck, q_prop, p_prop, lp_prop,
         g_prop, p_bck_fwd, rho_bck, log_sum_weight_subtree, n_subtree,
         metro_subtree)
            = build_tree_rng(depth, q_bck, p_bck, lp_bck, g_bck, H0, -eps,
                             inv_metric, metric_factor, max_delta_h);
      }
      n_leapfrog += n_subtree;
      sum_metro_prob += metro_subtree;
      if (!valid) {
        break;
      }
      depth += 1;
      // Biased progressive sampling: prefer the new sub-tree.
      if (log_sum_weight_subtree > log_sum_weight) {
        q_sample = q_prop;
        p_sample = p_prop;
        lp_sample = lp_prop;
        g_sample = g_prop;
      } else {
        real accept_prob = exp(log_sum_weight_subtree - log_sum_weight);
        if (uniform_rng(0, 1) < accept_prob) {
          q_sample = q_prop;
          p_sample = p_prop;
          lp_sample = lp_prop;
          g_sample = g_prop;
        }
      }
      log_sum_weight = log_sum_exp(log_sum_weight, log_sum_weight_subtree);
      rho = rho_bck + rho_fwd;
      // Across the whole trajectory, then between its two sub-trees.
      vector[n] p_sharp_fwd_fwd = inv_metric .* p_fwd;
      vector[n] p_sharp_fwd_bck = inv_metric .* p_fwd_bck;
      vector[n] p_sharp_bck_fwd = inv_metric .* p_bck_fwd;
      vector[n] p_sharp_bck_bck = inv_metric .* p_bck;
      int persist = dot_product(p_sharp_fwd_fwd, rho) > 0
                    && dot_product(p_sharp_bck_bck, rho) > 0;
      vector[n] rho_left = rho_bck + p_fwd_bck;
      persist = persist && dot_product(p_sharp_fwd_bck, rho_left) > 0
                && dot_product(p_sharp_bck_bck, rho_left) > 0;
      vector[n] rho_right = rho_fwd + p_bck_fwd;
      persist = persist && dot_product(p_sharp_fwd_fwd, rho_right) > 0
                && dot_product(p_sharp_bck_fwd, rho_right) > 0;
      if (!persist) {
        break;
      }
    }
    real accept_stat = sum_metro_prob / n_leapfrog;
    real energy = hamiltonian(lp_sample, p_sample, inv_metric);
    return (q_sample, lp_sample, g_sample, accept_stat, depth, n_leapfrog,
            divergent, energy);
  }

  // ------------------------------------------------------ jittered HMC

  // The jitter of iteration i (counted from 0 over warmup and sampling, the
  // same for every chain, so lanes run trajectories of one length): the
  // base-2 Halton (van der Corput) point of i + 1, in (0, 1).
  real halton_jitter(int i) {
    real x = 0;
    real f = 0.5;
    int k = i + 1;
    while (k > 0) {
      x += f * (k % 2);
      k = k %/% 2;
      f *= 0.5;
    }
    return x;
  }

  // One transition of HMC with n_steps leapfrog steps of size eps from
  // (q0, lp0, g0) and a Metropolis accept (a trajectory stops early once
  // divergent, H - H0 > 1000, and is then rejected). Returns the new point
  // (q, lp, g), accept_stat (the acceptance probability), n_leapfrog,
  // divergent, energy, and the trajectory's end q_end with its velocity
  // M^-1 p_end.
  tuple(vector, real, vector, real, int, int, real, vector, vector)
  hmc_transition_rng(vector q0, real lp0, vector g0, real eps,
                     vector inv_metric, matrix metric_factor, int n_steps) {
    int n = rows(q0);
    real max_delta_h = 1000;
    vector[n] p = sample_momentum_rng(inv_metric);
    real H0 = hamiltonian(lp0, p, inv_metric);
    vector[n] q = q0;
    real lp = lp0;
    vector[n] g = g0;
    real h = H0;
    int divergent = 0;
    int steps = 0;
    while (steps < n_steps && !divergent) {
      vector[n] p_half = p + (0.5 * eps) * g;
      q = q + eps * (inv_metric .* p_half);
      tuple(real, vector[n]) lp_grad = model_log_density_gradient(
          rows(metric_factor) > 0 ? metric_factor * q : q);
      lp = lp_grad.1;
      g = rows(metric_factor) > 0 ? metric_factor' * lp_grad.2 : lp_grad.2;
      p = p_half + (0.5 * eps) * g;
      h = hamiltonian(lp, p, inv_metric);
      divergent = (h - H0) > max_delta_h;
      steps += 1;
    }
    real accept_prob = divergent ? 0.0 : (H0 - h > 0 ? 1.0 : exp(H0 - h));
    vector[n] velocity = inv_metric .* p;
    if (uniform_rng(0, 1) < accept_prob) {
      return (q, lp, g, accept_prob, steps, divergent, h, q, velocity);
    }
    return (q0, lp0, g0, accept_prob, steps, divergent, H0, q, velocity);
  }

  // ------------------------------------------------------------ adaptation

  // Stan's initial step-size heuristic: double or halve eps until the
  // acceptance of one leapfrog step crosses 0.8.
  real init_stepsize_rng(vector q, real lp, vector g, real eps0,
                         vector inv_metric, matrix metric_factor) {
    real eps = eps0;
    if (eps == 0 || eps > 1e7) {
      return eps;
    }
    int n = rows(q);
    vector[n] p = sample_momentum_rng(inv_metric);
    real H0 = hamiltonian(lp, p, inv_metric);
    tuple(vector[n], vector[n], real, vector[n]) z
        = leapfrog(q, p, g, eps, inv_metric, metric_factor);
    real delta_h = H0 - hamiltonian(z.3, z.2, inv_metric);
    int direction = delta_h > log(0.8) ? 1 : -1;
    while (1) {
      p = sample_momentum_rng(inv_metric);
      H0 = hamiltonian(lp, p, inv_metric);
      z = leapfrog(q, p, g, eps, inv_metric, metric_factor);
      delta_h = H0 - hamiltonian(z.3, z.2, inv_metric);
      if (direction == 1 && !(delta_h > log(0.8))) {
        break;
      } else if (direction == -1 && !(delta_h < log(0.8))) {
        break;
      } else {
        eps = direction == 1 ? 2 * eps : 0.5 * eps;
      }
      if (eps > 1e7) {
        fatal_error("Posterior is improper. Please check your model.");
      }
      if (eps == 0) {
        fatal_error("No acceptable small step size could be found. ",
                    "Perhaps the posterior is not continuous?");
      }
    }
    return eps;
  }

  // Dual averaging of log step size towards acceptance `delta`
  // (gamma 0.05, kappa 0.75, t0 10). Takes the state (counter, s_bar,
  // x_bar) before the update and returns (step size, counter, s_bar, x_bar).
  tuple(real, int, real, real) dual_averaging_update(real accept_stat,
                                                      real delta, real mu,
                                                      int counter, real s_bar,
                                                      real x_bar) {
    real gamma = 0.05;
    real kappa = 0.75;
    real t0 = 10;
    int t = counter + 1;
    real adapt_stat = accept_stat > 1 ? 1 : accept_stat;
    real eta = 1.0 / (t + t0);
    real s_bar_new = (1 - eta) * s_bar + eta * (delta - adapt_stat);
    real x = mu - s_bar_new * sqrt(t) / gamma;
    real x_eta = pow(t, -kappa);
    real x_bar_new = (1 - x_eta) * x_bar + x_eta * x;
    return (exp(x), t, s_bar_new, x_bar_new);
  }

  // Stan's windowed adaptation: (init_buffer, term_buffer, base_window)
  // for num_warmup iterations. Too short a warmup for the requested stages
  // gets 15% / 75% / 10% of it.
  tuple(int, int, int) window_params(int num_warmup, int init_buffer,
                                     int term_buffer, int base_window) {
    if (init_buffer + base_window + term_buffer > num_warmup) {
      int init = to_int(floor(0.15 * num_warmup));
      int term = to_int(floor(0.1 * num_warmup));
      return (init, term, num_warmup - (init + term));
    }
    return (init_buffer, term_buffer, base_window);
  }

  // After the window ending at `counter`: (next window end, window size).
  tuple(int, int) next_window(int counter, int next_end, int window_size,
                              int num_warmup, int term_buffer) {
    int last = num_warmup - term_buffer - 1;
    if (next_end == last) {
      return (next_end, window_size);
    }
    int size = 2 * window_size;
    int end = counter + size;
    if (end != last) {
      // Stretch this window to the end if the following one would not fit.
      if (end + 2 * size >= num_warmup - term_buffer) {
        end = last;
      }
    }
    return (end, size);
  }

  // Welford's running mean and sum of squared deviations: (n, mean, m2).
  tuple(int, vector, vector) welford_add(int n, vector mean, vector m2,
                                         vector q) {
    int k = n + 1;
    vector[rows(q)] delta = q - mean;
    vector[rows(q)] mean_new = mean + delta / k;
    vector[rows(q)] m2_new = m2 + (q - mean_new) .* delta;
    return (k, mean_new, m2_new);
  }

  // The new inverse metric: the window's sample variance shrunk towards
  // 1e-3 as Stan does, (n / (n + 5)) var + 1e-3 (5 / (n + 5)).
  vector regularized_variance(int n, vector m2, vector previous) {
    vector[rows(m2)] variance = previous;
    if (n > 1) {
      variance = m2 / (n - 1.0);
    }
    return (n / (n + 5.0)) * variance + 1e-3 * (5.0 / (n + 5.0));
  }

  // ----------------------------------------------------------------- chain

  // Finds a starting point with finite lp and gradient: `init` itself when
  // `radius` is 0, else uniform(-radius, radius) coordinates, up to
  // `max_tries` attempts. Returns (q, lp, g).
  tuple(vector, real, vector) initialize_rng(vector init, real radius,
                                             int max_tries) {
    int n = rows(init);
    for (attempt in 1:max_tries) {
      vector[n] q = init;
      if (radius > 0) {
        // NaN coordinates are drawn (all of them for a random init; those
        // an init file leaves out, as Stan's random_var_context).
        for (i in 1:n) {
          if (is_nan(init[i])) {
            q[i] = uniform_rng(-radius, radius);
          }
        }
      }
      tuple(real, vector[n]) lp_grad = model_log_density_gradient(q);
      int ok = !is_inf(lp_grad.1) && !is_nan(lp_grad.1);
      for (i in 1:n) {
        ok = ok && !is_inf(lp_grad.2[i]) && !is_nan(lp_grad.2[i]);
      }
      if (ok) {
        return (q, lp_grad.1, lp_grad.2);
      }
    }
    fatal_error("Initialization failed after ", max_tries, " attempts.");
    return (init, negative_infinity(), init);
  }

  // One chain: initialization, num_warmup adaptive iterations, num_samples
  // sampling iterations; every iteration is reported with emit_draw.
  // The kernel starts from `step_size` and `metric` (the inverse metric):
  // Stan's start is step size 0 (found by the heuristic) and a unit metric;
  // a run of pooled warmup gives the kernel it adapted over all chains
  // (with num_warmup 0 the chain then keeps it). A dense inverse metric
  // comes as its Cholesky factor `metric_factor` (none: no rows) with a
  // unit `metric`; its chains move in whitened coordinates (see the top)
  // and report their points, lp and gradient as the model's. The windowed
  // adaptation here adapts a diagonal metric; bat runs a dense one only
  // with pooled warmup, whose runs have no warmup iterations.
  // hmc_steps 0 runs NUTS; hmc_steps > 0 runs jittered HMC instead (ChEES),
  // iteration i taking ceil(u * hmc_steps) leapfrog steps with u the
  // jitter of jitter_start + i - 1, and with report_trajectories calls
  // emit_trajectory for every iteration.
  void sample_chain_rng(vector init, real init_radius, int max_init_tries,
                        int num_warmup, int num_samples, int max_depth,
                        real delta, real step_size, vector metric,
                        matrix metric_factor, real hmc_steps,
                        int jitter_start, int report_trajectories) {
    int n = rows(init);
    vector[n] q;
    real lp;
    vector[n] g;
    (q, lp, g) = initialize_rng(init, init_radius, max_init_tries);
    // Branches on rows(metric_factor) are decided where the sizes are fixed
    // (generated code: the other side has none).
    if (rows(metric_factor) > 0) {
      q = mdivide_left_tri_low(metric_factor, q);
      g = metric_factor' * g;
    }

    vector[n] inv_metric = metric;
    if (n == 0) {
      // No parameters (a simulation from generated quantities): Stan's
      // fixed_param sampler — every iteration keeps the point, so a draw
      // only runs transformed parameters and generated quantities.
      for (iteration in 1:(num_warmup + num_samples)) {
        emit_draw(iteration, q, lp, 0.0, 0.0, 0, 0, 0, -lp);
        if (iteration == num_warmup) {
          emit_adaptation(0.0, inv_metric);
        }
      }
      if (num_warmup == 0) {
        emit_adaptation(0.0, inv_metric);
      }
      return;
    }
    real eps = step_size;
    if (step_size == 0) {
      eps = init_stepsize_rng(q, lp, g, 1, inv_metric, metric_factor);
    }

    // Dual averaging state.
    real mu = log(10 * eps);
    int da_counter = 0;
    real s_bar = 0;
    real x_bar = 0;

    // Windowed metric adaptation (none for fewer than 20 warmup iterations).
    int adapt_metric = num_warmup >= 20;
    int init_buffer;
    int term_buffer;
    int base_window;
    (init_buffer, term_buffer, base_window) = window_params(num_warmup, 75, 50, 25);
    int window_counter = 0;
    int window_size = base_window;
    int window_end = init_buffer + window_size - 1;
    int w_n = 0;
    vector[n] w_mean = rep_vector(0, n);
    vector[n] w_m2 = rep_vector(0, n);

    for (iteration in 1:(num_warmup + num_samples)) {
      real accept_stat;
      int depth;
      int n_leapfrog;
      int divergent;
      real energy;
      if (hmc_steps > 0) {
        real jitter = halton_jitter(jitter_start + iteration - 1);
        // ceil(jitter * hmc_steps), at least 1 (to_int takes only data).
        int n_steps = 1;
        while (n_steps < jitter * hmc_steps) {
          n_steps += 1;
        }
        vector[n] q_start = q;
        vector[n] q_end;
        vector[n] velocity_end;
        (q, lp, g, accept_stat, n_leapfrog, divergent, energy, q_end,
         velocity_end)
            = hmc_transition_rng(q, lp, g, eps, inv_metric, metric_factor,
                                 n_steps);
        depth = 0;
        if (report_trajectories) {
          emit_trajectory(q_start, q_end, velocity_end, n_leapfrog * eps);
        }
      } else {
        (q, lp, g, accept_stat, depth, n_leapfrog, divergent, energy)
            = transition_rng(q, lp, g, eps, inv_metric, metric_factor,
                             max_depth);
      }
      if (iteration <= num_warmup) {
        (eps, da_counter, s_bar, x_bar)
            = dual_averaging_update(accept_stat, delta, mu, da_counter, s_bar, x_bar);
        if (adapt_metric) {
          if (window_counter >= init_buffer
              && window_counter < num_warmup - term_buffer) {
            (w_n, w_mean, w_m2) = welford_add(w_n, w_mean, w_m2, q);
          }
          if (window_counter == window_end && window_counter != num_warmup) {
            (window_end, window_size)
                = next_window(window_counter, window_end, window_size,
                              num_warmup, term_buffer);
            inv_metric = regularized_variance(w_n, w_m2, inv_metric);
            w_n = 0;
            w_mean = rep_vector(0, n);
            w_m2 = rep_vector(0, n);
            eps = init_stepsize_rng(q, lp, g, eps, inv_metric, metric_factor);
            mu = log(10 * eps);
            da_counter = 0;
            s_bar = 0;
            x_bar = 0;
          }
          window_counter += 1;
        }
      }
      // As Stan, a warmup draw reports the step size after this
      // iteration's adaptation.
      emit_draw(iteration, rows(metric_factor) > 0 ? metric_factor * q : q, lp,
                accept_stat, eps, depth, n_leapfrog, divergent, energy);
      if (iteration == num_warmup) {
        eps = exp(x_bar);
        emit_adaptation(eps, inv_metric);
      }
    }
    if (num_warmup == 0) {
      emit_adaptation(eps, inv_metric);
    }
  }
}
