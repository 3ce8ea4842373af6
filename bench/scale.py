#!/usr/bin/env python3
"""How the simulator's cost grows: with the hosts, and with the QPs per host.

Two axes, each scenario in its own process through the pure-Rust runner (`scenario_run`, as
`bench/run.py`), so that peak RSS is the engine's:

- **hosts**: k-ary fat trees (k = 16, 36, 74, 100, 160: 1,024 to 1,024,000 hosts, 100 Gb/s,
  1 us links) under a 10 KB permutation with DCQCN (every host sends to one and receives
  from one, all at once): setup s (topology, routes, NICs, QPs), run s, events/s, peak RSS;
- **QPs per host**: a 9-host star, 8 senders each moving 4 MB to host 8 over N QPs opened
  together (`parallel_qps`, 4 MB / N each), N = 10 to 10,000: the same bytes, more QPs;
- **idle QPs per host** (`--axis idle`): the same star, each sender holding N QPs (N = 8 to
  10,000) of which 8 carry its messages (8 Virtuoso connections, every message on its
  connection's first path) and the rest stay open and idle: the same work, more idle QPs.

Prints one row per case and writes `scale.csv` and `scale.png` (+ `.pdf`) into `--out`
(default `out/scale/`). Times are wall seconds of the engine's own setup and run, and the
process's CPU seconds (a loaded machine inflates the first two, not the third). k = 160 needs about 11 GB and some minutes; `--max-hosts` leaves
the larger cases out.

    .venv/bin/python bench/scale.py --max-hosts 250000
    .venv/bin/python bench/scale.py --axis qps
    .venv/bin/python bench/scale.py --axis hosts --ks 160 --max-hosts 2000000 --append
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # noqa: E402  (the sibling script: its build and its one-process runner)

FAT_TREE_KS = [16, 36, 74, 100, 160]
QPS_PER_HOST = [10, 100, 1000, 10000]
IDLE_QPS_PER_HOST = [8, 80, 1000, 10000]  # 8 of them busy
COLUMNS = ["axis", "case", "hosts", "qps_per_host", "flows", "setup_s", "run_s", "cpu_s", "events",
           "events_per_s", "events_per_cpu_s", "peak_rss_mb"]


def fat_tree_toml(k: int) -> str:
    return f"""[topology]
kind = "fat_tree"
k = {k}

[[traffic]]
kind = "permutation"
size = 10000

[fabric]
cc = "dcqcn"
"""


def qps_toml(n: int) -> str:
    size = 4_000_000 // n
    senders = "\n".join(
        f'[[traffic]]\nkind = "parallel_qps"\nsrc = {s}\ndst = 8\nqps = {n}\nsize = {size}\n' for s in range(8))
    return f"""[topology]
kind = "star"
hosts = 9

{senders}
[fabric]
cc = "dcqcn"
"""


def idle_toml(n: int, messages: int = 256) -> str:
    """The 9-host star again, each sender holding `n` QPs to host 8 of which 8 have work: 8
    Virtuoso connections of `n / 8` QPs each, every message small enough to go whole on its
    connection's first path (`small_message`), one every 2 us; the other QPs stay open and idle."""
    per_conn = n // 8
    blocks = []
    for s in range(8):
        for _ in range(8):
            msgs = ", ".join(f'{{ src = {s}, dst = 8, size = 4096, start = "{2 * i}us" }}' for i in range(messages))
            blocks.append(f'[[traffic]]\nkind = "multipath"\nsplit = "virtuoso"\npath_by = "sport"\nqps = {per_conn}\n'
                          f'weights = "equal"\nsmall_message = 1048576\nsmall_path = 0\nmessages = [{msgs}]\n')
    return '[topology]\nkind = "star"\nhosts = 9\n\n' + "\n".join(blocks) + '\n[fabric]\ncc = "dcqcn"\n'


def measure(axis: str, case: str, text: str, hosts: int, qps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case}.toml"
        path.write_text(text)
        r = bench.run_one(case, str(path))
    if "error" in r:
        raise SystemExit(f"{case}: {r['error']}")
    row = {"axis": axis, "case": case, "hosts": hosts, "qps_per_host": qps, "flows": r["flows"],
           "setup_s": r["setup_s"], "run_s": r["events"] / r["events_per_s"], "cpu_s": r["user_s"],
           "events": r["events"], "events_per_cpu_s": r["events"] / max(r["user_s"], 1e-9),
           "events_per_s": r["events_per_s"], "peak_rss_mb": r["peak_rss_mb"]}
    print(f"{case:>14}  hosts {hosts:>9,}  QPs/host {qps:>6,}  setup {row['setup_s']:7.2f} s  "
          f"run {row['run_s']:7.2f} s  CPU {row['cpu_s']:7.2f} s  {row['events_per_cpu_s'] / 1e6:5.2f} M events/CPU s  "
          f"peak {row['peak_rss_mb']:8.1f} MB", flush=True)
    return row


def figure(rows: list[dict], out: Path) -> None:
    import matplotlib  # only for the figure: the measurements need nothing but the runner

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    hosts = [r for r in rows if r["axis"] == "hosts"]
    if hosts:
        x = [r["hosts"] for r in hosts]
        ax = axes[0]
        ax.loglog(x, [r["setup_s"] for r in hosts], "o-", label="setup s (wall)")
        ax.loglog(x, [r["cpu_s"] for r in hosts], "s-", label="CPU s, whole run")
        ax.loglog(x, [r["peak_rss_mb"] / 1024 for r in hosts], "^-", label="peak RSS GB")
        ax.set_xlabel("hosts (fat tree, 10 KB permutation)")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
    ax = axes[1]
    for axis, style, label in (("qps", "o-", "all busy (4 MB a host, split evenly)"),
                               ("idle", "s--", "8 busy, the rest open and idle")):
        qps = [r for r in rows if r["axis"] == axis]
        if qps:
            ax.semilogx([r["qps_per_host"] for r in qps], [r["events_per_cpu_s"] / 1e6 for r in qps], style,
                        label=label)
    if ax.lines:
        ax.set_xlabel("QPs per sending host (9-host star, 8 senders)")
        ax.set_ylabel("M events per CPU second")
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(out / f"scale.{ext}", dpi=110, metadata={"CreationDate": None} if ext == "pdf" else None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--axis", choices=["hosts", "qps", "idle", "all", "both"], default="all",
                    help="hosts, QPs per host (all busy), QPs per host of which 8 busy, or all three "
                         "(`both`, its name before the third: the same)")
    ap.add_argument("--max-hosts", type=int, default=300_000, help="largest fat tree run (default 300,000)")
    ap.add_argument("--out", type=Path, default=bench.REPO / "out" / "scale")
    ap.add_argument("--ks", type=int, nargs="+", default=FAT_TREE_KS, help="fat tree sizes (default %(default)s)")
    ap.add_argument("--append", action="store_true", help="add the rows to --out's scale.csv, replacing equal cases")
    ap.add_argument("--no-build", action="store_true", help="use the examples already built")
    args = ap.parse_args(argv)
    if not args.no_build:
        bench.build()
    rows = []
    if args.axis in ("hosts", "all", "both"):
        for k in args.ks:
            hosts = k**3 // 4
            if hosts <= args.max_hosts:
                rows.append(measure("hosts", f"fat-tree-k{k}", fat_tree_toml(k), hosts, 1))
    if args.axis in ("qps", "all", "both"):
        for n in QPS_PER_HOST:
            rows.append(measure("qps", f"star-{n}qps", qps_toml(n), 9, n))
    if args.axis in ("idle", "all", "both"):
        for n in IDLE_QPS_PER_HOST:
            rows.append(measure("idle", f"star-{n}qps-8busy", idle_toml(n), 9, n))
    args.out.mkdir(parents=True, exist_ok=True)
    if args.append and (args.out / "scale.csv").exists():
        with open(args.out / "scale.csv", newline="") as f:
            kept = [r for r in csv.DictReader(f) if r["case"] not in {x["case"] for x in rows}]
        counts = {"hosts", "qps_per_host", "flows", "events"}  # read back as integers, as measured
        numeric = {c for c in COLUMNS if c not in ("axis", "case")}
        rows = [{c: (int(float(v)) if c in counts else float(v) if c in numeric else v) for c, v in r.items()}
                for r in kept] + rows
        rows.sort(key=lambda r: (r["axis"], float(r["hosts"]), float(r["qps_per_host"])))
    with open(args.out / "scale.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    figure(rows, args.out)
    print(f"wrote scale.csv, scale.png, scale.pdf in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
