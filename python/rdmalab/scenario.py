"""Scenarios: what to simulate, built in code or read from TOML.

A `Scenario` is a plain dictionary with the same structure as the TOML file (see the README's
scenario reference); the Rust engine parses and validates it, so errors name the field
whichever way the scenario was written.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.9 and 3.10: the same parser, from PyPI
    import tomli as tomllib  # type: ignore[no-redef]


class Scenario:
    """A topology, its traffic and the fabric settings.

    Build one with the class methods (`Scenario.star(...)`, `.fat_tree(...)`, ...) and add
    traffic with `.poisson(...)`, `.incast(...)`, `.permutation(...)`, `.flow(...)`; or read a
    TOML file with `Scenario.from_toml(path)`.
    """

    def __init__(self, spec: dict[str, Any], path: str | Path | None = None):
        self.spec = spec
        self.path = Path(path) if path is not None else None

    # -- topologies ---------------------------------------------------------------------
    @classmethod
    def star(cls, hosts: int, rate: str = "100Gbps", delay: str = "1us") -> "Scenario":
        return cls({"topology": {"kind": "star", "hosts": hosts, "rate": rate, "delay": delay}})

    @classmethod
    def dumbbell(cls, hosts_per_side: int, host_rate: str = "100Gbps", bottleneck_rate: str = "100Gbps",
                 delay: str = "1us") -> "Scenario":
        return cls({"topology": {"kind": "dumbbell", "hosts_per_side": hosts_per_side, "host_rate": host_rate,
                                 "bottleneck_rate": bottleneck_rate, "delay": delay}})

    @classmethod
    def leaf_spine(cls, leaves: int, hosts_per_leaf: int, spines: int | None = None,
                   oversubscription: float | None = None, host_rate: str = "100Gbps",
                   fabric_rate: str = "100Gbps", delay: str = "1us") -> "Scenario":
        topo: dict[str, Any] = {"kind": "leaf_spine", "leaves": leaves, "hosts_per_leaf": hosts_per_leaf,
                                "host_rate": host_rate, "fabric_rate": fabric_rate, "delay": delay}
        if spines is not None:
            topo["spines"] = spines
        if oversubscription is not None:
            topo["oversubscription"] = oversubscription
        return cls({"topology": topo})

    @classmethod
    def fat_tree(cls, k: int, host_rate: str = "100Gbps", fabric_rate: str = "100Gbps",
                 delay: str = "1us") -> "Scenario":
        return cls({"topology": {"kind": "fat_tree", "k": k, "host_rate": host_rate,
                                 "fabric_rate": fabric_rate, "delay": delay}})

    @classmethod
    def full_mesh(cls, switches: int, hosts_per_switch: int, rate: str = "100Gbps",
                  delay: str = "1us") -> "Scenario":
        """Switches joined pairwise, `hosts_per_switch` hosts on each (hosts first, then switches)."""
        return cls({"topology": {"kind": "full_mesh", "switches": switches, "hosts_per_switch": hosts_per_switch,
                                 "rate": rate, "delay": delay}})

    @classmethod
    def hpcc_topology(cls, path: str | Path) -> "Scenario":
        """A topology in the ns-3 HPCC simulator's format."""
        return cls({"topology": {"kind": "hpcc_file", "path": str(Path(path).resolve())}})

    @classmethod
    def from_toml(cls, path: str | Path) -> "Scenario":
        path = Path(path)
        with open(path, "rb") as f:
            return cls(tomllib.load(f), path)

    @classmethod
    def default(cls) -> "Scenario":
        """The built-in demo: a k=4 fat tree, FB Hadoop flow sizes at 30 % load for 5 ms."""
        return cls.fat_tree(4).poisson("fb_hadoop", load=0.3, duration="5ms").with_seed(1)

    # -- traffic ------------------------------------------------------------------------
    def _add(self, entry: dict[str, Any]) -> "Scenario":
        new = copy.deepcopy(self)
        new.spec.setdefault("traffic", []).append(entry)
        return new

    def poisson(self, cdf: str, load: float, duration: str, start: str = "0ns",
                hosts: list[int] | None = None) -> "Scenario":
        """Per-host Poisson arrivals, sizes from `cdf` (`fb_hadoop`, `web_search` or a file)."""
        e: dict[str, Any] = {"kind": "poisson", "cdf": cdf, "load": load, "duration": duration, "start": start}
        if hosts is not None:
            e["hosts"] = hosts
        return self._add(e)

    def incast(self, senders: list[int], receiver: int, size: int, start: str = "0ns") -> "Scenario":
        return self._add({"kind": "incast", "senders": senders, "receiver": receiver, "size": size,
                          "start": start})

    def incast_rounds(self, senders: list[int], receiver: int, size: int, period: str, rounds: int,
                      jitter: str = "0ns", start: str = "0ns") -> "Scenario":
        """`rounds` incasts, one every `period`, each sender starting U(0, jitter) into its round."""
        return self._add({"kind": "incast_rounds", "senders": senders, "receiver": receiver, "size": size,
                          "period": period, "rounds": rounds, "jitter": jitter, "start": start})

    def permutation(self, size: int, start: str = "0ns", hosts: list[int] | None = None) -> "Scenario":
        e: dict[str, Any] = {"kind": "permutation", "size": size, "start": start}
        if hosts is not None:
            e["hosts"] = hosts
        return self._add(e)

    def random_pairs(self, count: int, size: int, start: str = "0ns", window: str = "0ns",
                     hosts: list[int] | None = None) -> "Scenario":
        """`count` flows of `size` bytes between uniformly random host pairs, starting
        uniformly in [start, start + window]."""
        e: dict[str, Any] = {"kind": "random_pairs", "count": count, "size": size, "start": start, "window": window}
        if hosts is not None:
            e["hosts"] = hosts
        return self._add(e)

    def multipath(self, messages: list[dict[str, Any]], **fields: Any) -> "Scenario":
        """Messages cut into chunks over several QPs per connection (seed 001). `messages`:
        dicts of src, dst, size and optionally start. Fields: split, qps, chunk_size,
        chunk_header, outstanding, allocation (dynamic|static), refill_on (ack|sent),
        post_delay, sport_policy (sequential|distinct_paths|explicit), sports, pg, dport.
        Results: `Results.messages` and `Results.chunks`."""
        return self._add({"kind": "multipath", **fields, "messages": [dict(m) for m in messages]})

    def flow(self, src: int, dst: int, size: int, start: str = "0ns", **extra: Any) -> "Scenario":
        """One explicit flow (extra: pg, dport, sport, src_ip_index: which of the source
        host's addresses it sends from, see `with_ips_per_host`)."""
        return self._add({"kind": "flows", "flows": [{"src": src, "dst": dst, "size": size, "start": start,
                                                      **extra}]})

    def hpcc_flows(self, path: str | Path) -> "Scenario":
        return self._add({"kind": "hpcc_flow_file", "path": str(Path(path).resolve())})

    def htsim_cm(self, path: str | Path) -> "Scenario":
        return self._add({"kind": "htsim_cm", "path": str(Path(path).resolve())})

    # -- settings -----------------------------------------------------------------------
    def with_seed(self, seed: int) -> "Scenario":
        new = copy.deepcopy(self)
        new.spec["seed"] = seed
        return new

    def with_fabric(self, **settings: Any) -> "Scenario":
        """Fabric settings: timing, mtu, lossless, buffer_mb, ecn, ack_high_prio,
        ack_interval, rto, cc, granularity, cc_params, window, qp_cache_entries,
        qp_cache_miss_penalty, queue_sample_interval, rate_sample_interval (per-QP rate
        samples: `Results.rates`), iofd (Blitz's in-order flow deflection, a dict of the
        `[fabric.iofd]` fields, e.g. `iofd={"max_deflections": 2}`; `{}` = on with defaults).

        Blitz: `with_fabric(cc="blitz", cc_params={"dasr_count": "qp"}, iofd={})`."""
        new = copy.deepcopy(self)
        new.spec.setdefault("fabric", {}).update(settings)
        return new

    def with_ips_per_host(self, n: int) -> "Scenario":
        """Every host owns `n` addresses (`11.x.y.1` .. `11.x.y.n`); a flow picks one with
        `src_ip_index`, and ECMP hashes it, so flows may differ in path by address alone."""
        new = copy.deepcopy(self)
        new.spec["topology"]["ips_per_host"] = n
        return new

    def with_stop_time(self, t: str) -> "Scenario":
        new = copy.deepcopy(self)
        new.spec["stop_time"] = t
        return new

    def to_json(self) -> str:
        return json.dumps(self.spec)

    def to_toml(self, path: str | Path | None = None) -> str:
        """The scenario as the TOML text that `Scenario.from_toml` reads back to the same
        scenario (written to `path` too when given)."""
        from rdmalab.toml_writer import dumps

        text = dumps(self.spec)
        if path is not None:
            Path(path).write_text(text)
        return text

    def _repr_html_(self) -> str:
        """A notebook's view: topology, traffic and settings as tables."""
        from html import escape

        def row(k: str, v: Any) -> str:
            return f"<tr><th style='text-align:left'>{escape(str(k))}</th><td style='text-align:left'>{escape(str(v))}</td></tr>"

        def table(title: str, d: dict[str, Any]) -> str:
            return f"<table><caption style='text-align:left'><b>{escape(title)}</b></caption>" + "".join(
                row(k, v) for k, v in d.items()) + "</table>"

        spec = self.spec
        parts = [table("topology", spec.get("topology", {}))]
        for i, t in enumerate(spec.get("traffic", [])):
            parts.append(table(f"traffic[{i}]", t))
        rest = {k: v for k, v in spec.items() if k not in ("topology", "traffic")}
        for k, v in rest.items():
            parts.append(table(k, v) if isinstance(v, dict) else table(k, {"value": v}))
        return "<div>" + "".join(parts) + "</div>"

    def base_dir(self) -> str:
        return str(self.path.parent if self.path else Path.cwd())

    def __repr__(self) -> str:
        return f"Scenario({self.spec!r})"
