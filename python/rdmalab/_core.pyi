"""Types of `rdmalab._core`, the compiled engine (crates/rdmalab-py/src). Keep in step with the
`#[pyfunction]`s and `#[pyclass]`es there: a stub is not checked against the binary."""

from typing import TYPE_CHECKING, Any, Literal, Optional

# For the annotations only: the binary loads numpy when it first returns an array, not when
# it is loaded (`rdmalab hpcc` runs without it).
if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_F64 = NDArray[np.float64]
_Bool = NDArray[np.bool_]
_I64 = NDArray[np.int64]

# -- the simulator (sim.rs) -------------------------------------------------------------------

def parse_time_ps(s: str) -> int:
    """A time in ns-3 spelling (`"2ms"`, `"500ns"`) in picoseconds, parsed as scenarios are."""

def check_scenario_fields(text: str) -> None:
    """Checks a JSON scenario's fields as `Simulation.from_json` does before it builds anything
    (names, types, variants), without building it; `ValueError` naming the field."""

def table_schemas() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every mechanism table's schema (`sim::mech::TABLE_SCHEMAS`): `(name, [(column, kind)])`,
    kinds `u16`, `u32`, `u64`, `f64` or `ps`, in the order Python shows the columns."""

def scenario_schema() -> str:
    """The scenario file's JSON Schema (draft 7), derived from the parser's structs."""

def build_commit() -> str:
    """The short commit the engine was built from ("unknown" when built outside a git checkout)."""

# -- Chakra traces written from a scenario (chakra.rs) -------------------------------------------

def chakra_export(text: str, path: str, prefix: str, json: bool = False) -> dict[str, Any]:
    """Writes a scenario's `[[collective]]` list or SimAI workload as `<prefix>.<rank>.et`
    (TOML text and its path, or with `json` the JSON text and its base folder); returns
    `files`, `hosts`, `traffic` (the `[[traffic]]` entry, TOML) and `notes`."""

class Simulation:
    """A simulation in progress. `threads` (when given) overrides the scenario's own; 0 asks
    for the command line's default. A count the engine refuses is named by `threads_option`
    (the command line's `--threads`) when given, else as the argument `threads=`."""

    @staticmethod
    def from_toml_file(path: str, threads: Optional[int] = None,
                       threads_option: Optional[str] = None) -> Simulation:
        """From a TOML scenario file."""
    @staticmethod
    def from_toml(text: str, path: str, threads: Optional[int] = None,
                  threads_option: Optional[str] = None) -> Simulation:
        """From TOML text; `path` names it in errors and resolves relative paths."""
    @staticmethod
    def from_json(text: str, base: str, threads: Optional[int] = None,
                  threads_option: Optional[str] = None) -> Simulation:
        """From a JSON scenario (what `rdmalab.Scenario` produces); `base` resolves paths."""
    @staticmethod
    def from_hpcc_config(path: str, threads: Optional[int] = None, dialect: Optional[str] = None,
                         topology: Optional[str] = None, workload: Optional[str] = None,
                         threads_option: Optional[str] = None) -> Simulation:
        """From an ns-3 HPCC simulator config file (paths relative to the current directory), in
        `dialect` ("reference", "m4", "simai", "conweave"), or in the one its keys show when
        None; the simai dialect also takes SimAI's `topology` and `workload` files."""
    @staticmethod
    def detect_hpcc_dialect(path: str) -> tuple[str, Optional[tuple[str, int]]]:
        """The dialect an HPCC config's keys show, with the deciding key and its line."""
    def hpcc_not_written(self) -> list[tuple[str, str]]:
        """The files an HPCC config names that the run does not write (the ConWeave artifact's
        monitors and logs), as (key, path)."""
    def hpcc_dialect(self) -> Optional[str]:
        """The dialect of the HPCC config this simulation came from (None for a scenario)."""
    def engine(self) -> str:
        """Which engine runs the simulation: sequential or the parallel cut."""
    def cc_settings(self) -> Optional[str]:
        """The congestion control's named settings (InfiniBand CC: preset, table, every value), or None."""
    def parallel_stats(self) -> Optional[dict[str, Any]]:
        """A parallel run's partitions, window length, windows, events per partition, critical
        path in events, packets each partition sent across the cut, and per thread CPU seconds
        and seconds waited at barriers (None when sequential)."""
    def output_paths(self) -> tuple[Optional[str], Optional[str]]:
        """Output paths named by an HPCC config: (FCT_OUTPUT_FILE, PFC_OUTPUT_FILE)."""
    def monitor_paths(self) -> tuple[Optional[str], Optional[str]]:
        """An HPCC config's optional outputs: (TRACE_OUTPUT_FILE, QLEN_MON_FILE)."""
    def write_qlen_monitor(self, path: str) -> None:
        """Writes the queue-length monitor's blocks (the reference's QLEN_MON_FILE format)."""
    def run(
        self, max_events: Optional[int] = None, until_ps: Optional[int] = None
    ) -> Literal["finished", "stop_time", "paused", "stalled", "pfc_deadlock"]:
        """Runs at most `max_events` events, not past `until_ps`; returns why it stopped."""
    def warnings(self) -> list[str]:
        """Settings that are valid but probably unintended, each saying what the run will do."""
    def progress(self) -> tuple[int, int]:
        """(flows completed, flows total)."""
    def now_ps(self) -> int:
        """Current simulated time in ps."""
    def results(self, check: bool = True, release: bool = False, keep: bool = False) -> dict[str, Any]:
        """Results as a dict of numpy arrays and counters; with `check`, a RuntimeError when
        bytes were not conserved or a lossless run dropped packets, or with `keep` the results
        with `failure` (the message and the first drop's node, port, class and time_ps); with
        `release`, the engine is freed once they are taken (`release`)."""
    def outcome(self, check: bool = True) -> dict[str, Any]:
        """The run's outcome without its tables, as plain Python values: `counters`,
        `stall_cause`, `deadlock` hops, `slowdown_rows`, `needs_tables`, and `failure` under
        `check` when the run failed its check."""
    def release(self) -> None:
        """Frees the engine once the results are taken; `write_fct`/`write_pfc` then write those results."""
    def write_fct(self, path: str) -> None:
        """Writes the completed flows in the reference's FCT format."""
    def write_pfc(self, path: str) -> None:
        """Writes the PFC frames received in the reference's PFC format."""
    def trace_requested(self) -> bool:
        """True when the scenario has a `[trace]` table."""
    def start_trace(self, path: str) -> int:
        """Starts the per-packet trace into the CSV spool file `path`; returns its estimated size."""
    def finish_trace(self) -> tuple[int, bool]:
        """Flushes the trace: (records written, truncated at the cap)."""
    def topology_size(self) -> tuple[int, int, int]:
        """Number of hosts, switches and links."""

# -- DRUM (drum.rs) ----------------------------------------------------------------------------

class DrumProblem:
    """One DRUM instance (seed 000, problem (P)): the (n, m) array `a`, the per-host limits `q`
    and `c` (length n: sum_j x <= Q, sum_j a x <= C), the objective's alpha and beta, and the
    active mask or the k of the optimal top-k rule. Holds the NumPy arrays without copying."""

    def __init__(
        self,
        a: _F64,
        q: _F64,
        c: _F64,
        alpha: float,
        beta: float,
        active: Optional[_Bool] = None,
        k: Optional[int] = None,
    ) -> None: ...

def drum_solve_admm(
    problem: DrumProblem,
    rho: float = 0.3,
    eps_abs: float = 1e-9,
    eps_rel: float = 1e-9,
    max_iter: int = 10000,
    adaptive_rho: bool = False,
    capacity: str = "linear",
    warm: Optional[dict[str, Any]] = None,
) -> dict[str, Any]:
    """The ADMM solver: state (x, z, w, lam, mu), objective, convergence and `h_*` histories."""

def drum_solve_dual(
    problem: DrumProblem,
    step0: float = 1e-3,
    iterations: int = 100,
) -> dict[str, Any]:
    """The dual-decomposition baseline: `h_*` histories, x_best and y."""

def drum_kkt(
    problem: DrumProblem,
    x: _F64,
    lam: Optional[_F64] = None,
    mu: Optional[_F64] = None,
) -> dict[str, Any]:
    """KKT certificate of `x` (multipliers given or inferred)."""

def drum_check_capacity(capacity: str) -> None:
    """Accepts `"linear"` budgets; refuses the paper's log-sum form with the reason."""

def drum_paper_instance(n: int, m: int, seed: int) -> tuple[_F64, _F64, _F64]:
    """A paper-style instance `(a, Q, C)`."""

def drum_top_k_mask(a: _F64, k: int) -> _Bool:
    """The optimal top-k mask (k smallest `a_ij` per host)."""

def drum_pair_links(scenario_json: str, base: str, pairs: _I64, ecmp: str) -> dict[str, Any]:
    """The links each (src, dst) host pair crosses: CSR rows `ptr`, `port`, `share`, and the
    topology's ports (`links`)."""

def drum_topology_routes(
    scenario_json: str,
    base: str,
    dst: _I64,
    bytes_per_wqe: _F64,
    *,
    time_unit: float,
    ecmp: str,
    host_links: bool,
) -> dict[str, Any]:
    """Link capacities (`link_cap`) and route rows (`route`) of a topology's routing."""

class DrumCoordinator:
    """The coordinator of the network-wide model, driven from Python (local or Ray agents)."""

    def __init__(
        self,
        problem: DrumProblem,
        recv: Optional[_F64] = None,
        link_cap: Optional[_F64] = None,
        route: Optional[_F64] = None,
        rho: float = 0.3,
        eps_abs: float = 1e-9,
        eps_rel: float = 1e-9,
        max_iter: int = 10000,
    ) -> None: ...
    def agents(self, groups: int) -> list[bytes]:
        """The host agents in `groups` groups, as bytes (`DrumAgent.from_bytes`)."""
    def prices(self) -> tuple[_F64, _F64]:
        """The current prices the agents step with: (u_prev, u)."""
    def done(self) -> bool:
        """True when the iteration has converged or reached `max_iter`."""
    def update(self, reports: list[tuple[_F64, _F64]]) -> dict[str, Any]:
        """One coordinator step from the agents' `(load, stats)`: the iteration's record."""
    def finish(self, x: _F64) -> dict[str, Any]:
        """The result from the agents' rates: x, x_hat, objective, prices, convergence."""

class DrumAgent:
    """A host agent of the network-wide model (lives in the driver or in a Ray actor)."""

    @staticmethod
    def from_bytes(b: bytes) -> DrumAgent:
        """Rebuilds an agent from `DrumCoordinator.agents` bytes."""
    def to_bytes(self) -> bytes:
        """The agent (data and iterate) as bytes."""
    def step(self, u_prev: _F64, u: _F64) -> tuple[_F64, _F64]:
        """One local iteration; returns `(load, stats)`."""
    def x(self) -> _F64:
        """The agent's rates (its hosts' rows, flattened)."""
    def hosts(self) -> tuple[int, int]:
        """`(first host, number of hosts)`."""
