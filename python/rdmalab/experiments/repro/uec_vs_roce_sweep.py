"""Writes `uec_vs_roce.toml` and its quick variant (`uec-vs-roce`, docs/uec-vs-roce.md).

Every run is one transport variant (a row of `VARIANTS`) on one workload (a row of
`WORKLOADS`). A variant sets the whole `[fabric]` table and the traffic's `transport`; a
workload sets the topology, the traffic or collectives, and the link events, so the sweep
lists its runs as one `[zip]` of whole tables. `labels` reads a run's (variant, workload)
back from its scenario by regenerating the rows and matching them exactly.

To add a variant (Swift, say), append a `Variant` to
`VARIANTS` and regenerate:

    python -m rdmalab.experiments.repro.uec_vs_roce_sweep

(`tests/python/test_uec_vs_roce.py` checks the shipped files are what this writes.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rdmalab import toml_writer

HERE = Path(__file__).resolve().parent

#: Every link's delay and every host link's rate (the Ethernet fabrics of the two papers'
#: comparisons run 100-800 Gb/s; 100 Gb/s is the rate the rest of rdmalab's reproductions use).
DELAY_US = 1.0
HOST_GBPS = 100.0
#: Payload per packet, the same on every variant: an InfiniBand MTU (256..4096), and the
#: RoCE default's size (1000) rounded to it.
MTU = 1024


@dataclass(frozen=True)
class Variant:
    """A transport on the fabric: its `[fabric]` table and the `transport` of its traffic."""

    name: str
    title: str
    transport: str
    fabric: dict[str, Any]
    #: True: its ECN marking is NSCC's (from the target queue on, `nscc_ecn`), not DCQCN's.
    nscc_marking: bool = False
    #: False: it cannot run collectives (its workloads with `[[collective]]` are left out).
    #: Every variant runs them now, RCCC's included.
    collectives: bool = True


def _uet(spray: str, trimming: bool) -> dict[str, Any]:
    fab: dict[str, Any] = {"cc": "nscc", "lossless": False, "path_selection": spray}
    if trimming:
        # Its threshold is the workload's (`trim_threshold_kb`), filled in by `scenario_tables`.
        fab["trimming"] = {}
        # htsim's driver's RTO: 15 us plus six drains of a full queue (the threshold).
        fab["uet"] = {"rto": "auto"}
    return fab


#: The rows of every table, in order. Add a variant here, name its CC in the experiment's
#: `needs_cc` (uec_vs_roce.py) and regenerate; nothing else needs to change.
VARIANTS: tuple[Variant, ...] = (
    Variant("roce", "RoCE: DCQCN, PFC, ECMP", "rc", {"cc": "dcqcn", "lossless": True, "path_selection": "ecmp"}),
    Variant("roce-irn-spray", "RoCE: DCQCN, IRN (lossy), per-packet spraying", "rc",
            {"cc": "dcqcn", "lossless": False, "loss_recovery": "irn", "path_selection": "spray"}),
    Variant("ib", "InfiniBand: credits, IB CC (annex A10)", "rc", {"cc": "ib", "link_layer": "infiniband"}),
    Variant("uet-ops-trim", "UET: NSCC, oblivious spraying, trimming", "uet", _uet("ev_cycle", True), True),
    Variant("uet-reps-trim", "UET: NSCC, REPS, trimming", "uet", _uet("reps", True), True),
    Variant("uet-ops", "UET: NSCC, oblivious spraying, no trimming", "uet", _uet("ev_cycle", False), True),
    Variant("uet-reps", "UET: NSCC, REPS, no trimming", "uet", _uet("reps", False), True),
    Variant("uet-rccc-ops-trim", "UET: NSCC + RCCC, oblivious spraying, trimming", "uet",
            {**_uet("ev_cycle", True), "cc": "nscc+rccc"}, True),
    Variant("uet-rccc-reps-trim", "UET: NSCC + RCCC, REPS, trimming", "uet",
            {**_uet("reps", True), "cc": "nscc+rccc"}, True),
)


@dataclass(frozen=True)
class Workload:
    """A workload on its fabric: the scenario tables a variant does not set."""

    name: str
    title: str
    topology: dict[str, Any]
    traffic: list[dict[str, Any]] = field(default_factory=list)
    collective: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    #: Fabric keys of the workload (sampling, reroute delay), merged into every variant's.
    fabric: dict[str, Any] = field(default_factory=dict)
    #: Transports it runs on.
    transports: tuple[str, ...] = ("rc", "uet")
    #: Links from host to host on the longest path (for NSCC's target queue in bytes).
    path_links: int = 4
    #: N of an N -> 1 incast, and the bytes of each of its senders.
    incast: tuple[int, int] | None = None
    #: The simulated time a run is cut at (`stop_time`): see `stop_time`.
    cap: str = ""

    def incast_bound_us(self) -> float:
        """An incast's bound: the microseconds its receiver's link needs for the payload alone."""
        if self.incast is None:
            raise ValueError(f"{self.name} is not an incast")
        senders, size = self.incast
        return senders * size * 8 / (HOST_GBPS * 1e3)


def _leaf_spine(leaves: int, hosts_per_leaf: int, spines: int) -> dict[str, Any]:
    return {"kind": "leaf_spine", "leaves": leaves, "hosts_per_leaf": hosts_per_leaf, "spines": spines,
            "host_rate": f"{HOST_GBPS:g}Gbps", "fabric_rate": f"{HOST_GBPS:g}Gbps", "delay": f"{DELAY_US:g}us"}


#: Sizes of the full and the quick experiment.
SIZES = {
    False: {"incast_n": (16, 128, 1024), "incast_size": 256 * 1024, "incast_leaves": 33, "hosts_per_leaf": 32,
            "leaves": 32, "spines": {1: 32, 4: 8, 8: 4}, "perm_size": 2_000_000, "fail_at": "50us",
            "reroute": "100us", "web_load": 0.4, "web_duration": "500us", "sample": "20us",
            "rail": {"servers": 128, "gpus_per_server": 8, "leaves_per_rail": 4, "spines": 32}, "ar_size": "1MiB",
            "cap": "20ms", "file": "uec_vs_roce.toml"},
    True: {"incast_n": (8, 16, 32), "incast_size": 64 * 1024, "incast_leaves": 5, "hosts_per_leaf": 8,
           "leaves": 4, "spines": {1: 8, 4: 2, 8: 1}, "perm_size": 256 * 1024, "fail_at": "10us",
           "reroute": "20us", "web_load": 0.4, "web_duration": "500us", "sample": "5us",
           "rail": {"servers": 8, "gpus_per_server": 2, "leaves_per_rail": 2, "spines": 4}, "ar_size": "256KiB",
           "cap": "10ms", "file": "uec_vs_roce_quick.toml"},
}
#: The spine (0-based) whose link to leaf 0 is degraded or failed: not spine 0.
SLOW_SPINE = 1
#: An incast is cut at this many times its receiver link's payload time; every other
#: workload at the size's `cap`. Chosen: far above what a transport that keeps the link busy
#: needs (the quick incasts under RoCE, InfiniBand and NSCC alone all end within 1.8 times),
#: and it bounds a run whose goodput collapses (UET with trimming at 1,024 senders: the
#: trimmed headers fill the link). A tail that waits for a retransmission timeout can pass it.
INCAST_CAP = 3


def stop_time(w: Workload) -> str:
    """When a run of `w` is cut: `INCAST_CAP` times an incast's link bound (whole us), or
    the workload's `cap`."""
    if w.incast is None:
        return w.cap
    n, size = w.incast
    return f"{-(-INCAST_CAP * n * size * 8 // int(HOST_GBPS * 1e3))}us"


def workloads(quick: bool) -> list[Workload]:
    """The workloads of the full (1,024 hosts) or the quick experiment, in table order."""
    s = SIZES[quick]
    hpl, sample = s["hosts_per_leaf"], {"link_sample_interval": s["sample"]}
    out = []
    incast_fabric = _leaf_spine(s["incast_leaves"], hpl, hpl)
    for n in s["incast_n"]:
        # Receiver host 0; senders from the next leaf on, so that every flow crosses a spine.
        out.append(Workload(
            f"incast-{n}", f"{n}->1 incast, {s['incast_size'] // 1024} KiB each", incast_fabric,
            traffic=[{"kind": "incast", "senders": list(range(hpl, hpl + n)), "receiver": 0,
                      "size": s["incast_size"]}], fabric=sample, incast=(n, s["incast_size"]), cap=s["cap"]))
    hosts = s["leaves"] * hpl
    for ratio, spines in s["spines"].items():
        out.append(Workload(
            f"perm-{ratio}to1", f"{hosts}-host permutation, {s['perm_size'] / 1e6:g} MB, {ratio}:1",
            _leaf_spine(s["leaves"], hpl, spines), traffic=[{"kind": "permutation", "size": s["perm_size"]}],
            fabric=sample, cap=s["cap"]))
    full = _leaf_spine(s["leaves"], hpl, s["spines"][1])
    leaf0, spine1 = hosts, hosts + s["leaves"] + SLOW_SPINE
    perm = [{"kind": "permutation", "size": s["perm_size"]}]
    out.append(Workload("perm-degraded", f"permutation, link leaf 0 - spine {SLOW_SPINE} at 25 Gb/s", full,
                        traffic=perm, links=[{"a": leaf0, "b": spine1, "rate": "25Gbps"}], fabric=sample,
                        cap=s["cap"]))
    out.append(Workload(
        "perm-failed", f"permutation, link leaf 0 - spine {SLOW_SPINE} down at {s['fail_at']}", full, traffic=perm,
        events=[{"kind": "link_down", "at": s["fail_at"], "a": leaf0, "b": spine1}],
        fabric={**sample, "reroute_delay": s["reroute"]}, cap=s["cap"]))
    r = s["rail"]
    g, servers = r["gpus_per_server"], r["servers"]
    rail = {"kind": "rail", **r, "host_rate": "400Gbps", "fabric_rate": "400Gbps", "delay": f"{DELAY_US:g}us"}
    out.append(Workload(
        "allreduce-rail", f"ring AllReduce of {s['ar_size']} per rank, one per rail, {servers * g} GPUs", rail,
        collective=[{"name": f"rail{k}", "kind": "allreduce", "algorithm": "ring", "size": s["ar_size"],
                     "ranks": [srv * g + k for srv in range(servers)]} for k in range(g)],
        fabric=sample, cap=s["cap"]))
    out.append(Workload(
        "websearch", f"web-search sizes, Poisson at {s['web_load']:g} of each NIC for {s['web_duration']}", full,
        traffic=[{"kind": "poisson", "cdf": "web_search", "load": s["web_load"], "duration": s["web_duration"]}],
        fabric=sample, cap=s["cap"]))
    return out


def nscc_marking(w: Workload) -> dict[str, Any]:
    """ECN for the NSCC variants: every packet marked from NSCC's target queue on (its
    target on a trimming fabric, 3/4 of the path's propagation RTT, in bytes of the host
    rate), as docs/cc-window.md advises; DCQCN's per-rate thresholds are far above it."""
    rate_gbps = float(w.topology.get("host_rate", f"{HOST_GBPS:g}Gbps").removesuffix("Gbps"))
    rtt_us = 2 * w.path_links * DELAY_US
    target = round(0.75 * rtt_us * 1e-6 * rate_gbps * 1e9 / 8)
    return {"ecn_kmin": target, "ecn_kmax": target, "ecn_pmax": 1.0}


def trim_threshold_kb(w: Workload) -> int:
    """Where a trimming switch trims: one bandwidth-delay product of the longest path (its
    propagation RTT at the host rate), in KB. Chosen: the UEC specification leaves the
    threshold to the switch; without one, only what the 32 MiB shared buffer would drop is
    trimmed, which none of these workloads but the largest incast reaches."""
    rate_gbps = float(w.topology.get("host_rate", f"{HOST_GBPS:g}Gbps").removesuffix("Gbps"))
    return round(2 * w.path_links * DELAY_US * 1e-6 * rate_gbps * 1e9 / 8 / 1000)


def scenario_tables(v: Variant, w: Workload) -> dict[str, Any]:
    """The tables of one run (all but the seed)."""
    fabric = {**v.fabric, "mtu": MTU, **(nscc_marking(w) if v.nscc_marking else {}), **w.fabric}
    if "trimming" in fabric:
        fabric["trimming"] = {**fabric["trimming"], "threshold_kb": trim_threshold_kb(w)}
    traffic = [{**t, "transport": v.transport} if v.transport != "rc" else dict(t) for t in w.traffic]
    collective = [{**c, "transport": v.transport} if v.transport != "rc" else dict(c) for c in w.collective]
    return {"topology": w.topology, "fabric": fabric, "traffic": traffic, "collective": collective,
            "events": w.events, "links": w.links, "stop_time": stop_time(w)}


def runs(quick: bool) -> list[tuple[Variant, Workload]]:
    """(variant, workload) of every run, workload by workload."""
    return [(v, w) for w in workloads(quick) for v in VARIANTS
            if v.transport in w.transports and (v.collectives or not w.collective)]


def sweep(quick: bool) -> dict[str, Any]:
    """The sweep document of one size."""
    keys = ("topology", "fabric", "traffic", "collective", "events", "links", "stop_time")
    zipped: dict[str, list[Any]] = {k: [] for k in keys}
    for v, w in runs(quick):
        t = scenario_tables(v, w)
        for k in keys:
            zipped[k].append(t[k])
    name = "uec-vs-roce" + ("-quick" if quick else "")
    hosts = SIZES[quick]["leaves"] * SIZES[quick]["hosts_per_leaf"]
    return {"name": name,
            "description": f"RoCE, RoCE + IRN + spraying, InfiniBand and UET on {hosts}-host fabrics",
            "seeds": 1, "base": {"topology": {"kind": "star", "hosts": 2}}, "zip": zipped}


def _key(tables: dict[str, Any]) -> str:
    keys = ("topology", "fabric", "traffic", "collective", "events", "links", "stop_time")
    return json.dumps({k: tables.get(k) or ([] if k != "fabric" else {}) for k in keys}, sort_keys=True)


def labels() -> dict[str, tuple[Variant, Workload, bool]]:
    """Canonical tables -> (variant, workload, quick), for both sizes."""
    return {_key(scenario_tables(v, w)): (v, w, quick) for quick in (False, True) for v, w in runs(quick)}


def label_of(scenario: dict[str, Any], table: dict[str, tuple[Variant, Workload, bool]] | None = None
             ) -> tuple[Variant, Workload, bool] | None:
    """A run's (variant, workload, quick) from its scenario, or None for a scenario of
    neither sweep."""
    return (table or labels()).get(_key(scenario))


HEADER = """# uec-vs-roce: RoCE (DCQCN, PFC, ECMP), RoCE with IRN and per-packet spraying (lossy),
# InfiniBand with its CC, and the Ultra Ethernet transport under NSCC with oblivious or REPS
# spraying, trimming on and off, on the same fabrics: N->1 incasts, permutations on 1:1, 4:1
# and 8:1 leaf-spines, a permutation with a degraded and with a failed leaf-spine link, a
# ring AllReduce per rail of a rail-optimised fabric (RC variants: collectives are RC), and
# web-search Poisson traffic. docs/uec-vs-roce.md has the choices and the results.
# Generated by uec_vs_roce_sweep.py: edit that, not this file.
"""


def text(quick: bool) -> str:
    """The file's text: the header, then the sweep."""
    return HEADER + toml_writer.dumps(sweep(quick))


def main() -> None:
    for quick in (False, True):
        (HERE / SIZES[quick]["file"]).write_text(text(quick))


if __name__ == "__main__":
    main()
