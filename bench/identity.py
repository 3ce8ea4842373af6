#!/usr/bin/env python3
"""Output identity of two engine builds: runs the reference's S1 and S2 configs under several
CC modes, and one small scenario per optional mechanism (ConWeave, IOFD, InfiniBand credits
and CC, IRN, link failures, per-port buffers, DASR), with two `hpcc_run` binaries, and
compares every file they write (FCT, PFC) and the counters they print, byte for byte.

A refactor of the engine (hooks as free functions over views and actions) must
leave all of them unchanged; this is the check its notes cite.

    cargo build --release --example hpcc_run            # the new binary, target/release/examples
    .venv/bin/python bench/identity.py --old OLD/hpcc_run --new target/release/examples/hpcc_run
    .venv/bin/python bench/identity.py --old A --new B --only mech      # the mechanism scenarios
    .venv/bin/python bench/identity.py --old A --new B --threads 2      # the parallel engine too
    .venv/bin/python bench/identity.py --repro OLD_VENV NEW_VENV        # every `repro run --quick`
    .venv/bin/python bench/identity.py --repro OLD_VENV NEW_VENV blitz-iofd lb-conweave

With `--repro`, each experiment's quick variant runs under both installs (`VENV/bin/rdmalab`)
and every table its store holds is compared (the runs table without its wall times), with
the comparison it prints beside the paper.

ConWeave's scenarios name the direct flow table (`conweave_table_kind = "direct"`, the only
table of earlier builds), so that they remain an identity check across that change; against
such an older binary, which refuses the key, pass `--old-lacks conweave_table_kind`: the old
binary then runs each scenario without the lines setting that key. `conweave_exact` runs the
default (exact) table, which an older binary does not have: it may differ from one by design
(where two of its flows would have collided in the direct table; its eight flows do not).

With `--events-may-differ` the event count is left out of the printed counters and shown
beside each input instead (old -> new): a change that only skips events that do nothing
(parked DCQCN timers) must leave every other byte as it was.

Exit status 1 when any output differs (the differing inputs are named).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import REFERENCE  # noqa: E402  (the reference's files: `run.reference_dir`)

# The reference's CC modes: 1 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP, 0 none.
CC_MODES = (0, 1, 3, 7, 8)
# What of `hpcc_run`'s output measures the machine, not the run: wall times and rates.
TIMING = [re.compile(p, re.M) for p in (r"^setup .*$", r"\(\d+\.\d+ M/s\)", r"; CPU s per thread.*$",
                                   r'"(run_s|setup_s)": [0-9.]+')]


def mechanism_scenarios() -> dict[str, str]:
    """One small scenario per optional mechanism, as TOML, built with the Python API."""
    from rdmalab import Scenario

    def cross(sc: Scenario, n: int, size: int) -> Scenario:
        for i in range(n):
            sc = sc.flow(i, n + i, size).flow(n + i, i, size)
        return sc

    ls = Scenario.leaf_spine(2, 4, spines=2)
    direct = {"conweave_table_kind": "direct"}
    out = {
        "conweave": cross(ls, 4, 1_000_000).with_fabric(
            cc="dcqcn", path_selection="conweave",
            lb={"conweave_reply_extra": "1ns", "lb_window": "20us", **direct}),
        "conweave_exact": cross(ls, 4, 1_000_000).with_fabric(
            cc="dcqcn", path_selection="conweave", lb={"conweave_reply_extra": "1ns", "lb_window": "20us"}),
        "conweave_admit_on_release": cross(ls, 4, 1_000_000).with_fabric(
            cc="dcqcn", path_selection="conweave",
            lb={"conweave_reply_extra": "1ns", "conweave_admit_on_release": True, **direct}),
        "conga": cross(ls, 4, 500_000).with_fabric(cc="dcqcn", path_selection="conga"),
        "iofd": cross(ls, 4, 500_000).with_fabric(cc="dcqcn", iofd={"max_deflections": 2}),
        "blitz_iofd": cross(ls, 4, 500_000).with_fabric(
            cc="blitz", cc_params={"dasr_utilization": 0.95}, iofd={"max_deflections": 1}),
        "infiniband_ibcc": cross(ls, 4, 500_000).with_fabric(link_layer="infiniband", cc="ib"),
        "infiniband_none": Scenario.star(5, rate="FDR4x").flow(1, 0, 300_000).flow(2, 0, 300_000)
        .flow(3, 0, 300_000).with_fabric(link_layer="infiniband", cc="none"),
        "irn": Scenario.star(3).flow(0, 2, 1_000_000).flow(1, 2, 1_000_000).with_seed(3).with_fabric(
            cc="dcqcn", lossless=False, error_rate=0.001, loss_recovery="irn", cnp_on_ooo=True,
            irn={"rto_low": "100us", "rto_high": "320us", "low_packets": 3, "bdp": 100000}),
        "per_port_buffers": cross(ls, 4, 500_000).with_fabric(cc="dcqcn", buffer_model="per_port"),
        # The data-partition paper's refill as a chunk leaves: the NIC's next data is posted from inside a send.
        "partition_refill_sent": Scenario.star(2).multipath([{"src": 0, "dst": 1, "size": 1 << 20}], qps=1,
                                                            chunk_size=4096, refill_on="sent"),
    }
    texts = {name: sc.to_toml() for name, sc in out.items()}
    examples = Path(__file__).resolve().parents[1] / "examples"
    texts["link_failure"] = (examples / "link_failure.toml").read_text()
    texts["incast"] = (examples / "incast.toml").read_text()
    return texts


def reference_configs(work: Path) -> dict[str, Path]:
    """S1 and S2 under each CC mode, written into `work` with their outputs there."""
    for name in ("topology.txt", "fat.txt", "trace.txt", "S1_flow.txt", "S2_flow.txt"):
        (work / name).symlink_to(REFERENCE / name)
    out = {}
    for s in ("S1", "S2"):
        base = (REFERENCE / f"{s}_dcqcn_config.txt").read_text()
        for mode in CC_MODES:
            text = re.sub(r"(?m)^CC_MODE \d+$", f"CC_MODE {mode}", base)
            text = re.sub(r"(?m)^(FCT_OUTPUT_FILE|PFC_OUTPUT_FILE|TRACE_OUTPUT_FILE|QLEN_MON_FILE) .*$",
                          lambda m, s=s, mode=mode: f"{m.group(1)} {s}_{mode}_{m.group(1).split('_')[0].lower()}.txt",
                          text)
            path = work / f"{s}_cc{mode}_config.txt"
            path.write_text(text)
            out[f"{s}_cc{mode}"] = path
    return out


#: The event count as `hpcc_run` prints it (a summary line and the JSON line).
EVENTS = re.compile(r'(^events |"events": )(\d+)', re.M)
#: What the parallel engine prints of its events (per partition, the critical path, the bound
#: they give) and its window count: each window starts at the earliest pending event, so an
#: event skipped can save one (a host port's skipped TxDone).
PARTITION_EVENTS = re.compile(r"(?<=events per partition )\[[\d, ]*\]|(?<=critical path )\d+(?= events)"
                              r"|\d+(?= windows)|(?<=speed-up bound )[\d.]+(?=x)")


def without_keys(text: str, keys: list[str]) -> str:
    """`text` (TOML) without the lines that set any of `keys`."""
    if not keys:
        return text
    pattern = re.compile(rf"^\s*({'|'.join(map(re.escape, keys))})\s*=.*\n?", re.M)
    return pattern.sub("", text)


def run_one(binary: Path, inp: Path, cwd: Path, threads: int | None, events_apart: bool = False) -> dict[str, str]:
    """Runs `binary` on `inp` in `cwd`; the digest of every file written there and the output
    (with `events_apart`, the event count apart, under `events`, and not in the output's)."""
    before = {p.name for p in cwd.iterdir()}
    cmd = [str(binary), str(inp)] + ([] if threads is None else ["--threads", str(threads)])
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-500:]}
    lines = p.stdout
    for pattern in TIMING:
        lines = pattern.sub("", lines)
    events = None
    if events_apart:
        events = ",".join(m.group(2) for m in EVENTS.finditer(lines))
        lines = EVENTS.sub(r"\1N", lines)
        lines = PARTITION_EVENTS.sub("N", lines)
    got = {"stdout": hashlib.sha256(lines.encode()).hexdigest()}
    if events is not None:
        got["events"] = events
    for f in sorted(cwd.iterdir()):
        if f.name not in before and f.is_file():
            got[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
            f.unlink()
    return got


def without_wall_columns(text: str) -> str:
    """`text` with the last cell of every row of a table whose header ends in `wall s` masked."""
    out, masking = [], False
    for line in text.splitlines():
        if line.startswith("|") and line.rstrip().endswith("| wall s |"):
            masking = True
        elif not line.startswith("|"):
            masking = False
        elif masking and not line.startswith("|---"):
            line = re.sub(r"\| [^|]* \|$", "| <wall> |", line.rstrip())
        out.append(line)
    return "\n".join(out)


def repro_outputs(venv: Path, name: str, out: Path) -> dict[str, object]:
    """Runs `rdmalab repro run NAME --quick` with `venv`'s install into `out`: its printed
    comparison (the lines after the table's rule) and every stored table, by file."""
    import polars as pl

    p = subprocess.run([str(venv / "bin" / "rdmalab"), "repro", "run", name, "--quick", "--quiet", "--out", str(out)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-500:]}
    lines = p.stdout.splitlines()
    # The comparison beside the paper follows the last rule (the first heads the runs' list,
    # whose rows carry wall times).
    rules = [i for i, l in enumerate(lines) if re.match(r"^-{20,}$", l)]
    text = "\n".join(lines[rules[-1]:] if len(rules) > 1 else lines[rules[0]:] if rules else [])
    # A report without a table of its own (the variants') prints only the runs' list: its
    # wall-time column and the total wall time measure the machine.
    text = re.sub(r"\(wall [\d.]+ s\)", "(wall)", re.sub(r" +\d+\.\d+(?=  \S+=)", " <wall>", text))
    got: dict[str, object] = {"comparison": without_wall_columns(text)}
    for f in sorted(out.rglob("*.parquet")):
        df = pl.read_parquet(f)
        if f.parent.name == "runs":
            df = df.drop([c for c in ("wall_s", "finished_at", "host") if c in df.columns])
        got[str(f.relative_to(out))] = df
    return got


def same_outputs(old: dict[str, object], new: dict[str, object]) -> list[str]:
    """The keys whose values differ (frames compared by content)."""
    import polars as pl

    def equal(a: object, b: object) -> bool:
        if isinstance(a, pl.DataFrame) and isinstance(b, pl.DataFrame):
            return a.columns == b.columns and a.equals(b, null_equal=True)
        if isinstance(a, pl.DataFrame) or isinstance(b, pl.DataFrame):
            return False  # a table only one install writes
        return a == b

    return [k for k in sorted(set(old) | set(new)) if not equal(old.get(k), new.get(k))]


def compare_repro(old_venv: Path, new_venv: Path, names: list[str]) -> int:
    """`--repro`: every named experiment (all registered ones by default) under both installs."""
    if not names:
        listing = subprocess.run([str(new_venv / "bin" / "rdmalab"), "repro", "list"], capture_output=True, text=True)
        names = [l.split()[0] for l in listing.stdout.splitlines() if l and not l[0].isspace()]
    differ = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            old = repro_outputs(old_venv, name, Path(tmp) / "old" / name)
            new = repro_outputs(new_venv, name, Path(tmp) / "new" / name)
            keys = same_outputs(old, new)
            bad = bool(keys) or "error" in old
            print(f"{'DIFFERS' if bad else 'same   '}  {name}  ({len(old)} outputs)", flush=True)
            # By table: how many files differ, and how many exist under one install only.
            for table in sorted({k.split("/")[0] for k in keys}):
                ks = [k for k in keys if k.split("/")[0] == table]
                only = sum((k in old) != (k in new) for k in ks)
                print(f"         {table}: {len(ks)} differ" + (f" ({only} written by one install only)" if only else ""))
            if bad:
                differ.append(name)
    print(f"{len(differ)} of {len(names)} experiments differ" + (f": {', '.join(differ)}" if differ else ""))
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repro", nargs=2, type=Path, metavar=("OLD_VENV", "NEW_VENV"),
                    help="compare `repro run --quick` outputs of two installs instead")
    ap.add_argument("names", nargs="*", help="with --repro: the experiments (default: all)")
    ap.add_argument("--old", type=Path, help="the baseline hpcc_run")
    ap.add_argument("--new", type=Path, help="the hpcc_run under test")
    ap.add_argument("--only", choices=("reference", "mech"), help="one group of inputs")
    ap.add_argument("--threads", type=int, help="also run each with the parallel engine (--threads N)")
    ap.add_argument("--old-lacks", nargs="+", default=[], metavar="KEY",
                    help="keys the old binary predates: its scenarios go without the lines setting them")
    ap.add_argument("--events-may-differ", action="store_true",
                    help="compare the output without its event count (shown old -> new)")
    args = ap.parse_args()
    if args.repro:
        return compare_repro(args.repro[0], args.repro[1], args.names)
    if args.old is None or args.new is None:
        ap.error("--old and --new are required (or --repro OLD_VENV NEW_VENV)")
    differ = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs: dict[str, Path] = {}
        texts: dict[str, str] = {}
        if args.only != "mech":
            inputs.update(reference_configs(work))
        if args.only != "reference":
            for name, text in mechanism_scenarios().items():
                path = work / f"{name}.toml"
                path.write_text(text)
                inputs[name] = path
                texts[name] = text
        runs = [None] if args.threads is None else [None, args.threads]
        for name, path in inputs.items():
            for threads in runs:
                label = name if threads is None else f"{name} --threads {threads}"
                if name in texts:
                    path.write_text(without_keys(texts[name], args.old_lacks))
                old = run_one(args.old.resolve(), path, work, threads, args.events_may_differ)
                if name in texts:
                    path.write_text(texts[name])
                new = run_one(args.new.resolve(), path, work, threads, args.events_may_differ)
                events = ""
                if args.events_may_differ:
                    events = f", events {old.pop('events', '?')} -> {new.pop('events', '?')}"
                same = old == new and "error" not in old
                print(f"{'same   ' if same else 'DIFFERS'}  {label}  ({len(old)} outputs{events})", flush=True)
                if not same:
                    differ.append(label)
                    for k in sorted(set(old) | set(new)):
                        if old.get(k) != new.get(k):
                            print(f"         {k}: {str(old.get(k))[:60]} != {str(new.get(k))[:60]}")
    print(f"{len(differ)} of {len(inputs) * len(runs)} inputs differ" + (f": {', '.join(differ)}" if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
