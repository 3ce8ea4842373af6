#!/usr/bin/env python3
"""rdmalab's m4 dialect against the FCT files m4's authors published for the same inputs.

Runs `tests/data/m4/NAME/config.txt` (netiken/parsimon-eval, `expts/fig_8/eval_test_demo/N`,
cut at a start time: tests/data/m4/demo2/README.md) with `rdmalab hpcc` in a scratch copy of
its folder, the dialect detected from the keys, joins rdmalab's FCT file with the published one
by flow id, and prints per size bucket the median FCT of each and their ratio, the median
slowdowns (FCT over the fork's standalone FCT), and how many flows match to the nanosecond.
Draws both slowdown distributions to docs/img/m4-NAME-slowdown.{png,pdf}.

    .venv/bin/python bench/m4_published.py                  # the five cuts (all of eval_test_demo)
    .venv/bin/python bench/m4_published.py demo4 --no-plot  # one scenario, the table only
    .venv/bin/python bench/m4_published.py --mmu both --no-plot  # the fork's buffer, and without it

`--mmu both` is the cause script of the switch buffer: it runs each cut twice, with the m4
dialect's switch buffer (the fork's ingress pool, `fabric::MmuRule::M4`) and with the
reference's buffer rules in its place (`RDMALAB_M4_MMU=reference`, everything else the
dialect's), and prints both tables and the per-bucket ratios side by side.

`--full` runs the longer copies of the same scenarios in bench/data/m4/NAME (the flow file and
the published FCT file gzip-compressed; bench/data/m4/README.md says how far each reaches, and
the whole published files take their place under the same names): each in a scratch folder
with the published config and topology of tests/data/m4/NAME, through the `rdmalab hpcc` command
(the dialect detected), recording its wall time and peak memory. It draws the three slowdown
distributions side by side (docs/img/m4-full-slowdown.{png,pdf}).

    .venv/bin/python bench/m4_published.py --full                 # the three kept there (demo 0, 2, 4)
    .venv/bin/python bench/m4_published.py --full --qlen both     # with and without the queue monitor
    .venv/bin/python bench/m4_published.py --full --threads 2     # the parallel engine, compared byte for byte

`--standin` times a scenario of the whole one's size where the whole published flow file is
not at hand: 20,000 flows built from a longer copy's published flows (their pairs, sizes and
gaps between starts, repeated in order from the first start), on the published config and
topology, without the queue monitor (and with `--qlen both` also as published). Its FCTs are
compared with nothing: it is a timing of the same fabric, load and flow count, not of the
published flows.

    .venv/bin/python bench/m4_published.py --standin --qlen both demo0

`--qlen both` runs each config as published and again with QLEN_MON_END set to QLEN_MON_START
(no queue monitor, everything else the same) and checks that the FCT files are the same bytes.
`--threads N` runs the parallel engine too, on 1 and on N threads (its FCT files must be the same
bytes; its event order is its own, so they differ from the sequential engine's, the default, which
follows the fork's order): both times and the parallel engine's per-bucket ratios.

`--whole` runs the whole scenarios kept in tests/data/m4/whole_* (their READMEs say where
each comes from): two that the fork's author committed with the fork's own tree
(liecn/UNISON-for-ns-3, `mix/config_test.txt` and the files it names, with the FCT file the
fork wrote for them) and one of parsimon-eval's `eval_train_demo` scenarios, each in a scratch
folder, the config as committed (its paths made local), through the `rdmalab hpcc` command. The same table, time and
memory, and one figure for both (docs/img/m4-whole-slowdown.{png,pdf}). With `--threads N` it
also runs the parallel engine on 1 and N threads: the same model with its own order of
simultaneous events, which shows how far that order alone moves each bucket's median.

    .venv/bin/python bench/m4_published.py --whole
    .venv/bin/python bench/m4_published.py --whole --threads 1 --no-plot   # the event order's part

Nothing is fetched: the published files are in the repository.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "m4"
DEMO = DATA / "demo2"
#: The longer copies (`--full`): flows and published FCT lines, gzip-compressed.
BENCH_DATA = REPO / "bench" / "data" / "m4"
#: Flows in each published scenario (its flows.txt's first line).
PUBLISHED_FLOWS = 20_000
#: The published scenarios kept (tests/data/m4/NAME) and their congestion control.
SCENARIOS = {"demo0": "DCQCN", "demo1": "DCQCN", "demo2": "TIMELY", "demo3": "DCTCP", "demo4": "DCTCP"}
BUCKETS = [(0, 1_000), (1_000, 10_000), (10_000, 100_000), (100_000, 10**12)]
#: Whole scenarios from the fork's own tree (tests/data/m4/NAME/README.md): CC and what they are.
#: The config file of each (the rest of the folder is the files it names).
WHOLE = {"whole_fattree": ("TIMELY", "liecn/UNISON-for-ns-3@c05d5b3 mix/, 1,000 flows, 1,120 nodes"),
         "whole_tree46": ("TIMELY", "liecn/UNISON-for-ns-3@5a386cb mix/, 2,000 flows, 46 nodes"),
         "whole_train3": ("DCTCP", "netiken/parsimon-eval@c1bc1a5 eval_train_demo/3, 2,000 flows, 46 nodes"),
         "whole_train17": ("DCQCN", "netiken/parsimon-eval@47bba3b eval_train_demo/17, 2,000 flows, 43 nodes")}
WHOLE_CONFIG = {"whole_train3": "config_topology_flows.txt", "whole_train17": "config_topology_flows.txt"}


def read_text(path: Path) -> str:
    """A text file, decompressed when its name ends in .gz."""
    return gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()


def read_fct(path: Path) -> dict[int, tuple[int, int, int]]:
    """id -> (size, fct_ns, standalone_ns) of an m4 FCT file (gzip-compressed when it ends in .gz)."""
    return parse_fct(read_text(path))


def parse_fct(text: str) -> dict[int, tuple[int, int, int]]:
    """id -> (size, fct_ns, standalone_ns) of an m4 FCT file's text."""
    out = {}
    for line in text.split("\n"):
        t = line.split()
        if t:
            out[int(t[0])] = (int(t[5]), int(t[7]), int(t[8]))
    return out


def run_demo(folder: Path = DEMO, mmu: str = "m4") -> tuple[dict[int, tuple[int, int, int]], float]:
    """Runs the demo's config in a scratch copy of its folder; rdmalab's FCT lines and the wall time.

    `mmu`: "m4" (the dialect's switch buffer) or "reference" (the reference's rules instead).
    """
    # Lazy on purpose: the extension only when a run is asked for (`--help` needs none).
    from rdmalab.runner import run_hpcc
    if mmu not in ("m4", "reference"):
        raise ValueError(f"mmu must be 'm4' or 'reference', not {mmu!r}")
    saved = os.environ.pop("RDMALAB_M4_MMU", None)
    if mmu == "reference":
        os.environ["RDMALAB_M4_MMU"] = "reference"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "demo"
        shutil.copytree(folder, work)
        old = Path.cwd()
        try:
            os.chdir(work)
            t0 = time.perf_counter()
            _, fct, _ = run_hpcc("config.txt", progress=False)
            wall = time.perf_counter() - t0
            return read_fct(work / fct), wall
        finally:
            os.chdir(old)
            os.environ.pop("RDMALAB_M4_MMU", None)
            if saved is not None:
                os.environ["RDMALAB_M4_MMU"] = saved


def compare(ours: dict, fork: dict) -> list[dict]:
    """Per size bucket: flows, the fork's and rdmalab's median FCT and their ratio, median slowdowns."""
    rows = []
    for lo, hi in BUCKETS:
        ids = [i for i, (size, _, _) in fork.items() if lo <= size < hi]
        if not ids:
            continue
        missing = [i for i in ids if i not in ours]
        if missing:
            raise SystemExit(f"rdmalab wrote no line for flows {missing[:5]} of the published file")
        fork_med = statistics.median(fork[i][1] for i in ids)
        ours_med = statistics.median(ours[i][1] for i in ids)
        rows.append({
            "bucket": f"[{lo:,}, {hi:,}) B" if hi < 10**12 else f">= {lo:,} B",
            "flows": len(ids),
            "fork_median_ns": fork_med,
            "rdmalab_median_ns": ours_med,
            "ratio": ours_med / fork_med,
            "fork_slowdown": statistics.median(fork[i][1] / fork[i][2] for i in ids),
            "rdmalab_slowdown": statistics.median(ours[i][1] / ours[i][2] for i in ids),
            "exact": sum(ours[i][1] == fork[i][1] for i in ids),
            "standalone_equal": sum(ours[i][2] == fork[i][2] for i in ids),
        })
    return rows


def plot(ours: dict, fork: dict, out: Path, title: str) -> list[Path]:
    from rdmalab import plots  # lazy: matplotlib only when drawing
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    for name, data, style in (("m4's ns-3 (published)", fork, "-"), ("rdmalab --dialect m4", ours, "--")):
        s = sorted(data[i][1] / data[i][2] for i in fork)
        ax.plot(s, [(k + 1) / len(s) for k in range(len(s))], style, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown (FCT / the fork's standalone FCT)")
    ax.set_ylabel("fraction of flows")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return plots.save_figure(fig, out)


def config_value(config: Path, key: str) -> str | None:
    """The value of `key` in an HPCC config (its first word after the key), or None."""
    for line in config.read_text().split("\n"):
        t = line.split()
        if len(t) >= 2 and t[0] == key:
            return t[1]
    return None


def prepare_full(name: str, work: Path, qlen: bool = True) -> Path:
    """A scratch folder for `--full`: the published config and topology (tests/data/m4/NAME) and
    the flow file of bench/data/m4/NAME, decompressed. Returns the config to run: the published
    one, or with `qlen` False a copy whose QLEN_MON_END is its QLEN_MON_START (no queue monitor)."""
    work.mkdir(parents=True, exist_ok=True)
    for f in ("config.txt", "topology.txt"):
        shutil.copy(DATA / name / f, work / f)
    (work / "flows.txt").write_text(read_text(BENCH_DATA / name / "flows.txt.gz"))
    config = work / "config.txt"
    if qlen:
        return config
    start = config_value(config, "QLEN_MON_START")
    lines = [f"QLEN_MON_END {start}" if ln.split()[:1] == ["QLEN_MON_END"] else ln
             for ln in config.read_text().split("\n")]
    out = work / "config_noqlen.txt"
    out.write_text("\n".join(lines))
    return out


def run_cli(config: Path, threads: int | None = None) -> dict:
    """`rdmalab hpcc CONFIG --quiet` in the config's folder, as a child process; its FCT file's
    bytes, the wall time, the child's CPU time and peak resident memory (MiB), and its output."""
    exe = Path(sys.executable).with_name("rdmalab")
    cmd = [str(exe) if exe.exists() else "rdmalab", "hpcc", config.name, "--quiet"]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    log = config.with_suffix(f".t{threads or 0}.log")
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=config.parent, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} in {config.parent} exited {proc.returncode}:\n{log.read_text()}")
    # The bytes now: the next run in the same folder writes the same file.
    fct = config.parent / config_value(config, "FCT_OUTPUT_FILE")
    return {"fct_bytes": fct.read_bytes(), "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mib": usage.ru_maxrss / 1024, "output": log.read_text()}


def full(names: list[str], qlen: str, threads: int | None, draw: bool) -> bool:
    """`--full`: each scenario of bench/data/m4, its table, time and memory; the figure."""
    ok, panels = True, []
    for name in names:
        fork = read_fct(BENCH_DATA / name / "fct_published.txt.gz")
        with tempfile.TemporaryDirectory() as tmp:
            config = prepare_full(name, Path(tmp) / name)
            n_flows = int((config.parent / "flows.txt").read_text().split("\n", 1)[0])
            runs = {"published config": run_cli(config)}
            if qlen == "both":
                runs["no queue monitor"] = run_cli(prepare_full(name, Path(tmp) / name, qlen=False))
            runs.update(parallel_runs(config, threads))
            base = runs["published config"]
            ours = parse_fct(base["fct_bytes"].decode())
        rows = compare(ours, fork)
        whole = "the whole scenario" if n_flows == PUBLISHED_FLOWS else f"{n_flows:,} of its {PUBLISHED_FLOWS:,} flows"
        print_table(f"{name} ({SCENARIOS[name]}), {whole}", rows, base["wall_s"], len(fork))
        # Two more views of each bucket: the median of the flows' own ratios, and the ratio of
        # the bucket's summed FCTs (a median of few flows can land between two clusters).
        print("  per bucket, median of the flows' ratios / ratio of summed FCTs: " + ", ".join(
            f"{r:.3f} / {t:.3f}" for r, t in bucket_views(ours, fork)))
        for label, r in runs.items():
            # The monitor must change no FCT; the parallel engine must give the same bytes on
            # every thread count (its event order is its own, not the sequential engine's).
            ref = runs["--threads 1"] if label.startswith("--threads") else base
            same = r["fct_bytes"] == ref["fct_bytes"]
            said = "" if r is base else (f"; FCT file {'the same bytes as' if same else 'DIFFERS from'} "
                                         f"{'--threads 1' if ref is not base else 'the published config'}'s")
            if label.startswith("--threads"):
                par = compare(parse_fct(r["fct_bytes"].decode()), fork)
                said += ("; per-bucket ratios " + " ".join(f"{x['ratio']:.3f}" for x in par)
                         + f", {sum(x['exact'] for x in par)} exact")
            print(f"  {label:>18}: {r['cpu_s']:7.2f} s CPU, {r['wall_s']:7.2f} s wall (loaded), "
                  f"peak memory {r['peak_mib']:6.1f} MiB{said}")
            ok &= same
        ok &= all(abs(r["ratio"] - 1) <= 0.10 for r in rows)
        panels.append((name, whole, ours, fork))
    if draw and panels:
        for p in plot_panels(panels, REPO / "docs" / "img" / "m4-full-slowdown"):
            print(f"wrote {p.relative_to(REPO)}")
    return ok


def parallel_runs(config: Path, threads: int | None) -> dict:
    """The runs on the parallel engine that `--threads N` asks for: one thread, and N when not 1."""
    if threads is None:
        return {}
    runs = {"--threads 1": run_cli(config, 1)}
    if threads != 1:
        runs[f"--threads {threads}"] = run_cli(config, threads)
    return runs


def prepare_whole(name: str, work: Path) -> Path:
    """A scratch folder for `--whole`: tests/data/m4/NAME's files, the compressed ones
    decompressed under their published names, the published FCT file left out. Returns the config."""
    work.mkdir(parents=True, exist_ok=True)
    for f in (DATA / name).iterdir():
        if f.name in ("README.md", "fct_published.txt.gz"):
            continue
        if f.suffix == ".gz":
            (work / f.stem).write_text(read_text(f))
        else:
            shutil.copy(f, work / f.name)
    return work / WHOLE_CONFIG.get(name, "config_test.txt")


def whole(names: list[str], threads: int | None, draw: bool) -> bool:
    """`--whole`: each whole scenario of the fork's tree, its table, time and memory; the figure."""
    ok, panels = True, []
    for name in names:
        fork = read_fct(DATA / name / "fct_published.txt.gz")
        with tempfile.TemporaryDirectory() as tmp:
            config = prepare_whole(name, Path(tmp) / name)
            runs = {"published config": run_cli(config)}
            runs.update(parallel_runs(config, threads))
        base = runs["published config"]
        ours = parse_fct(base["fct_bytes"].decode())
        rows = compare(ours, fork)
        cc, what = WHOLE[name]
        print_table(f"{name} ({cc}), the whole scenario: {what}", rows, base["wall_s"], len(fork))
        print("  per bucket, median of the flows' ratios / ratio of summed FCTs: " + ", ".join(
            f"{r:.3f} / {t:.3f}" for r, t in bucket_views(ours, fork)))
        for label, r in runs.items():
            said = ""
            if label.startswith("--threads"):
                # The parallel engine: the same model, its own order of simultaneous events.
                same = r["fct_bytes"] == runs["--threads 1"]["fct_bytes"]
                ok &= same
                par = compare(parse_fct(r["fct_bytes"].decode()), fork)
                said = ("; per-bucket ratios " + " ".join(f"{x['ratio']:.3f}" for x in par)
                        + f", {sum(x['exact'] for x in par)} exact"
                        + ("" if r is runs["--threads 1"] else
                           f"; FCT file {'the same bytes as' if same else 'DIFFERS from'} --threads 1's"))
            print(f"  {label:>18}: {r['cpu_s']:7.2f} s CPU, {r['wall_s']:7.2f} s wall (loaded), "
                  f"peak memory {r['peak_mib']:6.1f} MiB{said}")
        missed = [r["bucket"] for r in rows if abs(r["ratio"] - 1) > 0.10]
        if missed:
            print(f"  outside 10 %: {', '.join(missed)}")
        ok &= not missed
        repo, flows, nodes = what.split(", ")
        panels.append((name, f"{name} ({cc}): {nodes}, {flows}\n{repo}", ours, fork))
    if draw and panels:
        titles = [what for _, what, _, _ in panels]
        for p in plot_panels(panels, REPO / "docs" / "img" / "m4-whole-slowdown", titles):
            print(f"wrote {p.relative_to(REPO)}")
    return ok


def bucket_views(ours: dict, fork: dict) -> list[tuple[float, float]]:
    """Per size bucket: the median of rdmalab's FCT over the fork's, flow by flow, and the
    bucket's summed FCT over the fork's."""
    out = []
    for lo, hi in BUCKETS:
        ids = [i for i, (size, _, _) in fork.items() if lo <= size < hi]
        if ids:
            out.append((statistics.median(ours[i][1] / fork[i][1] for i in ids),
                        sum(ours[i][1] for i in ids) / sum(fork[i][1] for i in ids)))
    return out


def standin_flows(name: str, count: int = PUBLISHED_FLOWS) -> str:
    """A flow file of `count` flows from the published ones kept in bench/data/m4/NAME: flow i
    takes the pair and size of kept flow i mod k, and starts after flow i-1 by the kept gap
    (i-1) mod (k-1); starts printed as the published file does, in seconds to the ns."""
    from decimal import Decimal  # lazy: only the stand-in parses decimal seconds
    rows = [ln.split() for ln in read_text(BENCH_DATA / name / "flows.txt.gz").split("\n")[1:] if ln.strip()]
    starts = [int(Decimal(r[6]) * 10**9) for r in rows]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    out, t = [str(count)], starts[0]
    for i in range(count):
        r = rows[i % len(rows)]
        if i:
            t += gaps[(i - 1) % len(gaps)]
        out.append(f"{i} {r[1]} {r[2]} {r[3]} {r[4]} {r[5]} {t // 10**9}.{t % 10**9:09d}")
    return "\n".join(out) + "\n"


def standin(names: list[str], monitor: bool) -> bool:
    """`--standin`: each scenario's 20,000-flow stand-in without the queue monitor, and with
    `monitor` also as published (with it); False when the monitor changed an FCT."""
    ok = True
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            config = prepare_full(name, Path(tmp) / name)
            flows = standin_flows(name)
            (config.parent / "flows.txt").write_text(flows)
            last = flows.rstrip("\n").rsplit("\n", 1)[1].split()[6]
            print(f"\n{name} ({SCENARIOS[name]}): 20,000 flows from its {BENCH_DATA.relative_to(REPO)} copy, "
                  f"starts 1 s to {last} s")
            runs = [("no queue monitor", prepare_full(name, Path(tmp) / name, qlen=False))]
            first = None
            for label, cfg in runs + ([("published config", config)] if monitor else []):
                (config.parent / "flows.txt").write_text(flows)  # prepare_full wrote the kept ones
                r = run_cli(cfg)
                done = sum(1 for ln in r["fct_bytes"].decode().split("\n") if ln.strip())
                same = "" if first is None else (
                    "; FCT file the same bytes" if r["fct_bytes"] == first else "; FCT file DIFFERS")
                ok &= first is None or r["fct_bytes"] == first
                first = r["fct_bytes"] if first is None else first
                print(f"  {label:>18}: {r['cpu_s']:8.2f} s CPU, {r['wall_s']:8.2f} s wall (loaded), "
                      f"peak memory {r['peak_mib']:6.1f} MiB; {done:,} flows completed{same}")
    return ok


def plot_panels(panels: list, out: Path, titles: list[str] | None = None) -> list[Path]:
    """The slowdown distributions of `--full` (or `--whole`, with `titles`), one panel per scenario."""
    from rdmalab import plots  # lazy: matplotlib only when drawing
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, NullFormatter
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for k, (ax, (name, whole, ours, fork)) in enumerate(zip(axes[0], panels)):
        for label, data, style in (("m4's ns-3 (published)", fork, "-"), ("rdmalab --dialect m4", ours, "--")):
            s = sorted(data[i][1] / data[i][2] for i in fork)
            ax.plot(s, [(k + 1) / len(s) for k in range(len(s))], style, label=label)
        ax.set_xscale("log")
        top = max(max(d[i][1] / d[i][2] for i in fork) for d in (ours, fork))
        ax.set_xticks([t for t in (1, 1.5, 2, 3, 4, 6, 10, 20, 40) if t <= max(top, 6)])
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("FCT slowdown (FCT / standalone FCT)")
        ax.set_title(titles[k] if titles else
                     f"eval_test_demo/{name[4:]} ({SCENARIOS[name]}): {len(fork)} flows finished\nin {whole}",
                     fontsize=8)
    axes[0][0].set_ylabel("fraction of flows")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return plots.save_figure(fig, out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help=f"the scenarios, of {', '.join(SCENARIOS)} (default: all)")
    ap.add_argument("--no-plot", action="store_true", help="print the tables only")
    ap.add_argument("--mmu", choices=["m4", "reference", "both"], default="m4",
                    help="the switch buffer: the fork's (m4, the dialect's), the reference's, or both "
                         "side by side (the cause script of the buffer's part)")
    ap.add_argument("--full", action="store_true",
                    help="the longer copies in bench/data/m4 (or the whole published files there), through the "
                         "rdmalab hpcc command, with wall time and peak memory")
    ap.add_argument("--standin", action="store_true",
                    help="time a 20,000-flow scenario built from a longer copy's published flows "
                         "(no FCT comparison), without the queue monitor (--qlen both: also with it)")
    ap.add_argument("--qlen", choices=["published", "both"], default="published",
                    help="with --full: the config as published, or also without its queue monitor; "
                         "with --standin: also with the monitor")
    ap.add_argument("--whole", action="store_true",
                    help="the whole scenarios of the fork's own tree in tests/data/m4/whole_*, through the "
                         "rdmalab hpcc command")
    ap.add_argument("--threads", type=int, default=None,
                    help="with --full or --whole: also the parallel engine on 1 and N threads, its FCT files "
                         "compared byte for byte")
    args = ap.parse_args(argv)
    if args.whole:
        unknown = [n for n in args.names if n not in WHOLE]
        if unknown:
            ap.error(f"unknown whole scenarios {unknown}; known: {', '.join(WHOLE)}")
        return 0 if whole(args.names or list(WHOLE), args.threads, not args.no_plot) else 1
    unknown = [n for n in args.names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
    if args.standin:
        kept = [n for n in SCENARIOS if (BENCH_DATA / n).is_dir()]
        return 0 if standin([n for n in (args.names or kept) if n in kept], args.qlen == "both") else 1
    if args.full:
        if args.mmu != "m4":
            ap.error("--full runs the dialect's switch buffer only (--mmu is for the cuts)")
        kept = [n for n in SCENARIOS if (BENCH_DATA / n).is_dir()]
        missing = [n for n in args.names if n not in kept]
        if missing:
            ap.error(f"no longer copy of {missing} in {BENCH_DATA.relative_to(REPO)}; there are: {', '.join(kept)}")
        return 0 if full(args.names or kept, args.qlen, args.threads, not args.no_plot) else 1
    ok = True
    for name in args.names or list(SCENARIOS):
        fork = read_fct(DATA / name / "fct_published_cut.txt")
        if args.mmu == "both":
            ratios = {}
            for mmu in ("reference", "m4"):
                ours, wall = run_demo(DATA / name, mmu)
                rows = compare(ours, fork)
                print_table(f"{name} ({SCENARIOS[name]}), {mmu} switch buffer", rows, wall, len(fork))
                ratios[mmu] = rows
            print(f"\n{name}: median FCT over the fork's, per bucket")
            print(f"{'bucket':>22} {'reference buffer':>16} {'m4 buffer':>10}")
            for a, b in zip(ratios["reference"], ratios["m4"]):
                print(f"{a['bucket']:>22} {a['ratio']:>16.3f} {b['ratio']:>10.3f}")
            ok &= all(abs(r["ratio"] - 1) <= 0.10 for r in ratios["m4"])
            continue
        ours, wall = run_demo(DATA / name, args.mmu)
        rows = compare(ours, fork)
        print_table(f"{name} ({SCENARIOS[name]})", rows, wall, len(fork))
        ok &= all(abs(r["ratio"] - 1) <= 0.10 for r in rows)
        if not args.no_plot:
            title = f"eval_test_demo/{name[4:]}, first {len(fork)} flows to finish ({SCENARIOS[name]})"
            for p in plot(ours, fork, REPO / "docs" / "img" / f"m4-{name}-slowdown", title):
                print(f"wrote {p.relative_to(REPO)}")
    return 0 if ok else 1


def print_table(title: str, rows: list[dict], wall: float, flows: int) -> None:
    print(f"\n{title}: rdmalab ran it in {wall:.2f} s; {flows} published flows\n")
    print(f"{'bucket':>22} {'flows':>5} {'fork med ns':>12} {'rdmalab':>12} {'ratio':>6} "
          f"{'slowdown fork':>13} {'rdmalab':>8} {'exact':>6} {'standalone =':>12}")
    for r in rows:
        print(f"{r['bucket']:>22} {r['flows']:>5} {r['fork_median_ns']:>12,.0f} {r['rdmalab_median_ns']:>12,.0f} "
              f"{r['ratio']:>6.3f} {r['fork_slowdown']:>13.2f} {r['rdmalab_slowdown']:>8.2f} {r['exact']:>6} "
              f"{r['standalone_equal']:>12}")


if __name__ == "__main__":
    sys.exit(main())
