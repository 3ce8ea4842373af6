"""Running a scenario: progress bar, Ctrl-C that keeps what was measured, results."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

from tqdm import tqdm

from rdmalab import _core
from rdmalab.results import Results
from rdmalab.scenario import Scenario

#: Events per slice between progress updates (about 0.1-0.3 s of work).
SLICE_EVENTS = 1_000_000


class RdmalabWarning(UserWarning):
    """A scenario setting that is valid but probably unintended; the message says what the
    run does with it (a duplicate link, a stop time before every flow, ...)."""


def warn_scenario(sim: "_core.Simulation") -> None:
    """Issues the engine's warnings about the scenario as `RdmalabWarning`s."""
    for text in sim.warnings():
        warnings.warn(text, RdmalabWarning, stacklevel=3)


def drive(sim: "_core.Simulation", progress: bool = True, check: bool = True) -> Results:
    """Runs `sim` to the end in slices, showing a progress bar after one second.

    Ctrl-C stops the run cleanly: the results hold every flow completed so far and
    `interrupted` is set.
    """
    t0 = time.perf_counter()
    done, total = sim.progress()
    bar = tqdm(total=total, unit="flow", delay=1.0, disable=not progress, leave=False)
    reason, interrupted = "paused", False
    try:
        while reason == "paused":
            reason = sim.run(max_events=SLICE_EVENTS)
            done_now, _ = sim.progress()
            bar.update(done_now - done)
            done = done_now
            bar.set_postfix_str(f"t={sim.now_ps() / 1e6:.1f}us", refresh=False)
    except KeyboardInterrupt:
        interrupted = True
        reason = "interrupted"
    finally:
        bar.close()
    wall = time.perf_counter() - t0
    if reason == "stalled":
        check = False
    raw = sim.results(check=check and not interrupted)
    results = Results.from_core(raw, reason, interrupted, wall)
    results.extra["core"] = sim
    return results


def run(scenario: Scenario | str | Path, progress: bool = True) -> Results:
    """Simulates a scenario (a `Scenario` or a TOML path) and returns its results."""
    if isinstance(scenario, (str, Path)):
        sim = _core.Simulation.from_toml_file(str(scenario))
    else:
        sim = _core.Simulation.from_json(scenario.to_json(), scenario.base_dir())
    warn_scenario(sim)
    return drive(sim, progress=progress)


def run_hpcc(config: str | Path, progress: bool = True) -> tuple[Results, str, str]:
    """Runs an ns-3 HPCC simulator config; writes its FCT and PFC files like `third` does.

    Returns the results and the two output paths.
    """
    sim = _core.Simulation.from_hpcc_config(str(config))
    warn_scenario(sim)
    fct_path, pfc_path = sim.output_paths()
    for key, path in (("FCT_OUTPUT_FILE", fct_path), ("PFC_OUTPUT_FILE", pfc_path)):
        if path and Path(path).exists():  # said before the run, so there is time to stop it
            warnings.warn(f"{config}: {key} {path} exists and will be overwritten at the end of the run, as the "
                          "reference simulator does (copy it first to keep it)", RdmalabWarning, stacklevel=2)
    results = drive(sim, progress=progress)
    results.write_fct(fct_path)
    results.write_pfc(pfc_path)
    return results, fct_path, pfc_path
