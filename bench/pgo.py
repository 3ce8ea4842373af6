#!/usr/bin/env python3
"""A profile-guided build of the engine: instrument, train, rebuild.

The default build (`make setup`, `cargo build --release`) is compiled without knowing which
branches a run takes. This script builds the engine once with counters in every branch, runs
a training set, and builds it again with those counts (LLVM's profile-guided optimisation):
hot paths laid out straight, cold ones moved away, inlining where the run spends its time.
Results do not change (the same code, arranged differently); speed does, mostly on runs whose
working set fits in the caches.

The training set is not the benchmark: it is the reference's S2 (65-host star, DCQCN and
HPCC) and four native scenarios of `bench/` (a k = 8 fat tree under PAUSE, a k = 16 tree under
WebSearch, the data-partition multipath experiment, Virtuoso's ten paths), so that S1 and the
k = 16 trees of the performance page measure the build on runs it was not trained on. A
1,024-host fabric is among them: trained on small fabrics only, the build ran the k = 16 tree
under PAUSE some 10 % slower than the default build (8 alternated rounds).

    python3 bench/pgo.py                  # hpcc_run and scenario_run into target/pgo/optimized/release/examples
    python3 bench/pgo.py --python .venv   # the Python package, in place (`make fast`)

Each is trained on itself: the package compiles the engine again, as a dependency of its
own, and its functions there carry other symbol names (their hash covers how the crate was
built), which a profile taken with the runners does not match. The package is trained
through its command line (`rdmalab hpcc`, `rdmalab run`), the path users time.

Needs LLVM's `llvm-profdata` of the same major version as rustc's LLVM (`rustup component add
llvm-tools`). Takes two release builds and about a minute of training: some 10 minutes on
2 cores either way.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from run import REFERENCE, SCENARIOS, prepare  # noqa: E402

#: The training runs: reference configs (through `hpcc_run`) and native TOMLs of `bench/`.
TRAIN_REFERENCE = ["S2-dcqcn", "S2-hpcc"]
TRAIN_NATIVE = ["scenarios/fat_tree_pfc_quick.toml", "scenarios/fat_tree_1k_websearch.toml", "mp_topo1.toml",
                "virtuoso_10paths.toml"]
EXAMPLES = ["hpcc_run", "scenario_run"]


def llvm_major(text: str) -> str | None:
    """The major version in a tool's `LLVM version: X.Y.Z` line."""
    m = re.search(r"LLVM version:?\s*(\d+)", text)
    return m.group(1) if m else None


def find_profdata() -> Path:
    """rustup's `llvm-profdata` (llvm-tools) or one on PATH, of rustc's LLVM major version:
    a raw profile is only readable by the LLVM that wrote it."""
    rustc = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    want = llvm_major(rustc)
    host = re.search(r"host:\s*(\S+)", rustc).group(1)
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    candidates = [Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"]
    on_path = shutil.which("llvm-profdata")
    if on_path:
        candidates.append(Path(on_path))
    seen = []
    for tool in candidates:
        if not tool.exists():
            continue
        out = subprocess.run([str(tool), "merge", "--version"], capture_output=True, text=True)
        have = llvm_major(out.stdout + out.stderr)
        if have == want:
            return tool
        seen.append(f"{tool} (LLVM {have})")
    raise SystemExit(
        f"bench/pgo.py: no llvm-profdata of rustc's LLVM {want} "
        f"(found: {', '.join(seen) or 'none'}); install it with `rustup component add llvm-tools`")


def cargo_build(target_dir: Path, rustflags: str, profiles: Path | None = None) -> Path:
    """The release examples built with `rustflags` into `target_dir`; their folder. Build
    scripts are compiled with the same flags: an instrumented one writes its profile to
    `profiles`, away from the training's."""
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir), RUSTFLAGS=rustflags)
    if profiles is not None:
        env["LLVM_PROFILE_FILE"] = str(profiles / "%m_%p.profraw")
    cmd = ["cargo", "build", "--release", "-q", "-p", "rdmalab"] + [a for e in EXAMPLES for a in ("--example", e)]
    subprocess.run(cmd, cwd=REPO, env=env, check=True)
    return target_dir / "release" / "examples"


def maturin_build(venv: Path, rustflags: str, profiles: Path | None = None) -> None:
    """The Python package built with `rustflags` and installed into `venv` (as `make setup`
    installs it, in place)."""
    env = dict(os.environ, RUSTFLAGS=rustflags, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    if profiles is not None:
        env["LLVM_PROFILE_FILE"] = str(profiles / "%m_%p.profraw")
    subprocess.run([str(venv / "bin" / "maturin"), "develop", "--release", "--quiet"], cwd=REPO, env=env, check=True,
                   stdout=subprocess.DEVNULL)


def training_runs(work: Path, examples: Path | None, venv: Path | None) -> list[tuple[str, list[str]]]:
    """(name, command) of each training run: through the runners in `examples`, or through
    the command line of the package in `venv`."""
    runs = []
    if REFERENCE.is_dir():
        for name in TRAIN_REFERENCE:
            config = prepare(work, *SCENARIOS[name]).name
            cmd = [str(examples / "hpcc_run"), config] if examples else [str(venv / "bin" / "rdmalab"), "hpcc", config, "--quiet"]
            runs.append((name, cmd))
    else:
        print(f"  (no reference files at {REFERENCE}: training on the native scenarios only)")
    for toml in TRAIN_NATIVE:
        path = str(REPO / "bench" / toml)
        cmd = ([str(examples / "scenario_run"), path] if examples else
               [str(venv / "bin" / "rdmalab"), "run", path, "--out", str(work / "out"), "--force", "--quiet",
                "--no-figures", "--threads", "1"])
        runs.append((toml, cmd))
    return runs


def train(raw: Path, examples: Path | None = None, venv: Path | None = None) -> None:
    """Runs the training set with the instrumented build; each process writes a raw profile."""
    env = dict(os.environ, LLVM_PROFILE_FILE=str(raw / "%m_%p.profraw"))
    with tempfile.TemporaryDirectory(prefix="rdmalab-pgo-") as tmp:
        runs = training_runs(Path(tmp), examples, venv)
        for i, (name, cmd) in enumerate(runs, 1):
            start = time.monotonic()
            done = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                raise SystemExit(f"bench/pgo.py: training run {name} failed (exit {done.returncode}):\n{done.stderr}")
            print(f"  [{i}/{len(runs)}] {name}: {time.monotonic() - start:.1f} s", flush=True)


def merge(profdata: Path, raw: Path, out: Path, stem: str) -> Path:
    """The raw profiles merged into `out/STEM-HASH.profdata`, named by its content: cargo
    rebuilds when its flags change, not when a file they name does."""
    merged = out / f"{stem}.merging"
    subprocess.run([str(profdata), "merge", "-o", str(merged)] + sorted(str(p) for p in raw.glob("*.profraw")), check=True)
    digest = hashlib.sha256(merged.read_bytes()).hexdigest()[:12]
    for old in out.glob(f"{stem}-*.profdata"):
        old.unlink()
    return merged.rename(out / f"{stem}-{digest}.profdata")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "target" / "pgo", help="working folder (default target/pgo)")
    ap.add_argument("--python", type=Path, metavar="VENV",
                    help="build the Python package into this venv instead, trained through its command line")
    args = ap.parse_args()
    profdata = find_profdata()
    out = args.out.resolve()
    raw = out / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    generate = f"-Cprofile-generate={raw}"
    venv = args.python.resolve() if args.python else None
    print("1/3 instrumented build", flush=True)
    if venv:
        maturin_build(venv, generate, out / "build-scripts")
    else:
        instrumented = cargo_build(out / "instrumented", generate, out / "build-scripts")
    print("2/3 training", flush=True)
    if venv:
        train(raw, venv=venv)
    else:
        train(raw, examples=instrumented)
    profile = merge(profdata, raw, out, "package" if venv else "runners")
    print("3/3 optimised build", flush=True)
    use = f"-Cprofile-use={profile}"
    if venv:
        maturin_build(venv, use)
        print(f"Python package: installed into {venv}")
    else:
        print(f"examples: {cargo_build(out / 'optimized', use)}")


if __name__ == "__main__":
    main()
