"""`rdmalab drum ...` subcommands: `solve` (convergence table and figure, ADMM against the
dual-decomposition baseline) and `bench` (time per iteration and peak memory at the
paper's scales, each scale in a fresh process so that peak memory is its own). Their
parser is `rdmalab.cli_drum`, which loads this module only when one of them runs."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from rdmalab.drum import paper_instance



def _table(rows: list[tuple], header: tuple) -> str:
    cells = [header] + [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([fmt(cells[0]), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in cells[1:]])


def _shown(n: int) -> list[int]:
    idx = set(range(min(n, 20))) | set(range(19, n, 10)) | {n - 1}
    return sorted(i for i in idx if 0 <= i < n)


def cmd_solve(args: argparse.Namespace) -> int:
    # Lazy on purpose: the figures load matplotlib, which `bench` and `--help` do not need.
    from .figures import convergence_figure, gap, iterations_to

    inst = paper_instance(args.hosts, args.apps, args.k, args.alpha, args.beta, args.seed)
    t0 = time.perf_counter()
    admm = inst.solve(rho=args.rho, tol=args.tol, max_iter=args.max_iter, adaptive_rho=args.adaptive_rho)
    t_admm = time.perf_counter() - t0
    p_star = admm.objective
    print(f"DRUM (P), n={args.hosts} hosts, m={args.apps} apps, k={args.k}, alpha={args.alpha}, beta={args.beta}, seed={args.seed}")
    if args.method in ("admm", "both"):
        h = admm.history
        rows = [(i + 1, f"{h['objective'][i]:.10g}", f"{gap(h['objective'][i:i+1], p_star)[0]:.2e}", f"{h['r_norm'][i]:.2e}", f"{h['s_norm'][i]:.2e}", f"{h['rho'][i]:.3g}") for i in _shown(admm.iterations)]
        print(f"\nADMM: {admm.iterations} iterations, converged={admm.converged}, {1e3 * t_admm / max(1, admm.iterations):.3f} ms/iteration")
        print(_table(rows, ("iter", "objective", "gap", "r", "s", "rho")))
        for lvl in (0.995, 0.999):
            print(f"iterations to {100 * lvl:.1f} % of optimum: {iterations_to(h['objective'], p_star, lvl)}")
    dd = None
    if args.method in ("dd", "both"):
        dd = inst.solve(method="dd", dd_iterations=args.dd_iterations)
        h = dd.history
        rows = [(i + 1, f"{h['dual'][i]:.8g}", f"{h['raw'][i]:.8g}", f"{h['recovered'][i]:.8g}", f"{h['residual'][i]:.2e}") for i in _shown(dd.iterations)]
        print(f"\nDual decomposition (t_k = 1e-3/sqrt(k)), {dd.iterations} iterations; optimum p* = {p_star:.10g}")
        print(_table(rows, ("iter", "dual bound", "raw", "recovered", "residual")))
        best = dd.objective
        print(f"best recovered objective: {best:.8g} (gap {gap([best], p_star)[0]:.2e}); "
              f"iterations to 99.5 %: {iterations_to(h['recovered'], p_star, 0.995)}")
    if not args.no_figure and args.method in ("admm", "both"):
        name = f"drum_convergence_{args.hosts}x{args.apps}"
        title = f"DRUM, n={args.hosts}, m={args.apps}, k={args.k}, α={args.alpha}, β={args.beta}, ρ={args.rho}"
        for p in convergence_figure(admm, dd, p_star, title, args.out / name):
            print(f"wrote {p}")
    return 0


def cmd_bench_one(args: argparse.Namespace) -> int:
    import resource  # lazy on purpose: Unix only, and only `bench` measures memory

    t0 = time.perf_counter()
    inst = paper_instance(args.n, args.m, args.k, args.alpha, args.beta, args.seed)
    t_gen = time.perf_counter() - t0
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    res = inst.solve(max_iter=args.iterations, tol=1e-300)
    t = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    peak = ru1.ru_maxrss / 1024.0
    per_iter = res.history["seconds"]
    out = {
        "n": args.n, "m": args.m, "k": args.k, "alpha": args.alpha, "beta": args.beta,
        "iterations": res.iterations, "seconds_per_iteration": t / res.iterations, "generate_seconds": t_gen,
        "median_iteration_seconds": float(np.median(per_iter)), "min_iteration_seconds": float(per_iter.min()),
        "cpu_seconds_per_iteration": cpu / res.iterations,
        "peak_rss_mb": peak, "objective": res.objective, "r_norm": float(res.history["r_norm"][-1]),
        "sweeps_per_host_iteration": float(res.history["sweeps"].mean() / args.n),
        "fallback_rows": int(res.history["fallbacks"].sum()),
    }
    print(json.dumps(out))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    # Lazy on purpose: tqdm.auto loads asyncio (some 0.1 s); of the commands only `drum bench` draws a bar.
    from tqdm.auto import tqdm

    scales = [tuple(int(v) for v in s.lower().split("x")) for s in args.scales.split(",") if s]
    results = []
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    for n, m in tqdm(scales, desc="drum bench", unit="scale"):
        cmd = [sys.executable, "-m", "rdmalab.cli", "drum", "bench-one", str(n), str(m), str(args.k), str(args.alpha),
               str(args.beta), str(args.iterations), str(args.seed)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    rows = [(f"({r['n']}, {r['m']})", r["iterations"], f"{1e3 * r['seconds_per_iteration']:.2f}",
             f"{1e3 * r['median_iteration_seconds']:.2f}", f"{1e3 * r['min_iteration_seconds']:.2f}",
             f"{1e3 * r['cpu_seconds_per_iteration']:.2f}", f"{r['peak_rss_mb']:.0f}",
             f"{r['sweeps_per_host_iteration']:.2f}", r["fallback_rows"]) for r in results]
    print(_table(rows, ("(n, m)", "iters", "mean ms/iter", "median", "min", "CPU ms/iter", "peak RSS MB", "sweeps/host/iter", "fallbacks")))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")
    return 0
