"""Scenarios: what to simulate, built in code or read from TOML.

A `Scenario` is a plain dictionary with the same structure as the TOML file (see the README's
scenario reference); the Rust engine parses and validates it, so errors name the field
whichever way the scenario was written.
"""

from __future__ import annotations

import copy
import json
import math
from html import escape
from pathlib import Path
from typing import Any

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - 3.9 and 3.10: the same parser, from PyPI
    import tomli as tomllib  # type: ignore[no-redef]

from rdmalab.toml_writer import dumps


#: Where a scenario built in Python comes from, in error messages (as the engine names it).
PYTHON_SCENARIO = "<python scenario>"


def check_numbers(value: Any, path: str = "") -> None:
    """Raises ValueError naming the field of the first NaN, infinity or integer that no
    64-bit field can hold (below -2^63 or at least 2^64), as a TOML scenario's error would."""
    if isinstance(value, dict):
        for k, v in value.items():
            check_numbers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_numbers(v, f"{path}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{PYTHON_SCENARIO}: field `{path}`: `{value}` is not a finite number")
    elif isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        raise ValueError(f"{PYTHON_SCENARIO}: field `{path}`: integer `{value}` does not fit in 64 bits")


def looks_like_toml(text: str) -> bool:
    """TOML text rather than a path: several lines, or a `key = value`, and no such file."""
    if "\n" not in text and "=" not in text:
        return False
    try:
        return not Path(text).exists()
    except (OSError, ValueError):  # too long or a NUL: no file has that name
        return True


class Scenario:
    """A topology, its traffic and the fabric settings.

    Build one with the class methods (`Scenario.star(...)`, `.fat_tree(...)`, ...) and add
    traffic with `.poisson(...)`, `.incast(...)`, `.permutation(...)`, `.flow(...)`; or read a
    TOML file with `Scenario.from_toml(path)`.
    """

    def __init__(self, spec: dict[str, Any], path: str | Path | None = None):
        if not isinstance(spec, dict):
            raise TypeError(f"Scenario() takes the scenario as a dict (the TOML's structure), got "
                            f"{type(spec).__name__}; for a TOML file use Scenario.from_toml(path)")
        self.spec = spec
        self.path = Path(path) if path is not None else None
        #: The TOML text read, while `spec` is still what it says: the engine then parses the
        #: text itself, so that errors name the file's lines.
        self.source: tuple[str, dict[str, Any]] | None = None

    # -- topologies ---------------------------------------------------------------------
    @classmethod
    def star(cls, hosts: int, rate: str = "100Gbps", delay: str = "1us") -> "Scenario":
        """`hosts` hosts around one switch, every link at `rate` and `delay`."""
        return cls({"topology": {"kind": "star", "hosts": hosts, "rate": rate, "delay": delay}})

    @classmethod
    def dumbbell(cls, hosts_per_side: int, host_rate: str = "100Gbps", bottleneck_rate: str | list[str] = "100Gbps",
                 delay: str = "1us", bottleneck_links: int | None = None) -> "Scenario":
        """Two switches joined by `bottleneck_links` parallel links (default 1, or one per
        rate when `bottleneck_rate` is a list), `hosts_per_side` hosts on each."""
        topo: dict[str, Any] = {"kind": "dumbbell", "hosts_per_side": hosts_per_side, "host_rate": host_rate,
                                "bottleneck_rate": bottleneck_rate, "delay": delay}
        if bottleneck_links is not None:
            topo["bottleneck_links"] = bottleneck_links
        return cls({"topology": topo})

    @classmethod
    def leaf_spine(cls, leaves: int, hosts_per_leaf: int, spines: int | None = None,
                   oversubscription: float | None = None, host_rate: str = "100Gbps",
                   fabric_rate: str = "100Gbps", delay: str = "1us") -> "Scenario":
        """A two-tier Clos: `leaves` leaves of `hosts_per_leaf` hosts each, every leaf linked to
        every spine; give `spines`, or `oversubscription` (host bandwidth over uplink bandwidth
        per leaf), which chooses them."""
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
        """A k-ary fat tree (k even) of k³/4 hosts, every link at `delay`."""
        return cls({"topology": {"kind": "fat_tree", "k": k, "host_rate": host_rate,
                                 "fabric_rate": fabric_rate, "delay": delay}})

    @classmethod
    def full_mesh(cls, switches: int, hosts_per_switch: int, rate: str = "100Gbps",
                  delay: str = "1us") -> "Scenario":
        """Switches joined pairwise, `hosts_per_switch` hosts on each (hosts first, then switches)."""
        return cls({"topology": {"kind": "full_mesh", "switches": switches, "hosts_per_switch": hosts_per_switch,
                                 "rate": rate, "delay": delay}})

    @classmethod
    def rail(cls, servers: int, spines: int, gpus_per_server: int = 8, leaves_per_rail: int = 1,
             host_rate: str = "400Gbps", fabric_rate: str = "400Gbps", delay: str = "1us",
             nvlink_rate: str | None = None, nvlink_latency: str | None = None) -> "Scenario":
        """A rail-optimised leaf-spine: GPU g of every server is host `s * gpus_per_server + g`
        with its own NIC on a leaf of rail g; every leaf links to every spine. Defaults: a DGX
        H100's 8 GPUs, each with a 400 Gb/s ConnectX-7 (docs/collectives.md). With
        `nvlink_rate` and `nvlink_latency` (both or neither), a server's GPUs also reach each
        other over a link standing for NVLink, which their traffic then takes."""
        topo = {"kind": "rail", "servers": servers, "spines": spines,
                "gpus_per_server": gpus_per_server, "leaves_per_rail": leaves_per_rail,
                "host_rate": host_rate, "fabric_rate": fabric_rate, "delay": delay}
        if nvlink_rate is not None or nvlink_latency is not None:
            topo |= {"nvlink_rate": nvlink_rate, "nvlink_latency": nvlink_latency}
        return cls({"topology": {k: v for k, v in topo.items() if v is not None}})

    @classmethod
    def hpcc_file(cls, path: str | Path) -> "Scenario":
        """A topology in the ns-3 HPCC simulator's format (`kind = "hpcc_file"`)."""
        return cls({"topology": {"kind": "hpcc_file", "path": str(Path(path).resolve())}})

    hpcc_topology = hpcc_file
    """Another name for `hpcc_file`."""

    @classmethod
    def from_toml(cls, source: str | Path) -> "Scenario":
        """A scenario from TOML: a file's path (a `Path`, or a string that names a file or
        has neither a newline nor an `=`), or TOML text such as `to_toml()` writes (a string
        with a newline or an `=` that names no file; then `from_toml_text`). Errors name
        the file's lines, as `rdmalab run` does."""
        if isinstance(source, str) and looks_like_toml(source):
            return cls.from_toml_text(source)
        path = Path(source)
        return cls.from_toml_text(path.read_text(), path)

    @classmethod
    def from_toml_text(cls, text: str, path: str | Path = "<toml string>") -> "Scenario":
        """A scenario from TOML text; `path` names it in errors and resolves relative paths
        inside it (default: the current folder)."""
        try:
            spec = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: {e}") from None
        new = cls(spec, path)
        new.source = (text, copy.deepcopy(spec))
        return new

    def toml_source(self) -> str | None:
        """The TOML text this scenario was read from, while no builder has changed it."""
        if self.source is not None and self.source[1] == self.spec:
            return self.source[0]
        return None

    @classmethod
    def default(cls) -> "Scenario":
        """The built-in demo: a k=4 fat tree, FB Hadoop flow sizes at 30 % load for 5 ms."""
        return cls.fat_tree(4).poisson("fb_hadoop", load=0.3, duration="5ms").with_seed(1)

    # -- traffic ------------------------------------------------------------------------
    def _add(self, entry: dict[str, Any]) -> "Scenario":
        new = copy.deepcopy(self)
        new.spec.setdefault("traffic", []).append(entry)
        return new

    def _add_with(self, entry: dict[str, Any], **optional: Any) -> "Scenario":
        """Adds a traffic entry with the optional fields that are not None."""
        entry.update({k: v for k, v in optional.items() if v is not None})
        return self._add(entry)

    def poisson(self, cdf: str, load: float, duration: str, start: str = "0ns",
                hosts: list[int] | None = None, tenant: str | None = None,
                split: dict[str, Any] | None = None, pg: int | None = None,
                transport: str | None = None, verb: str | None = None) -> "Scenario":
        """Per-host Poisson arrivals, sizes from `cdf` (`fb_hadoop`, `web_search` or a file).
        `split = {"min_size", "piece", "gap", "tenant"}` cuts long flows into pieces on their
        own QPs (the CC-attack paper, §IV-B)."""
        e: dict[str, Any] = {"kind": "poisson", "cdf": cdf, "load": load, "duration": duration, "start": start}
        return self._add_with(e, hosts=hosts, tenant=tenant, split=split, pg=pg, transport=transport, verb=verb)

    def incast(self, senders: list[int], receiver: int, size: int, start: str = "0ns",
               tenant: str | None = None, pg: int | None = None, transport: str | None = None,
               verb: str | None = None) -> "Scenario":
        """Every host of `senders` sends `size` bytes to `receiver`, all at `start`."""
        return self._add_with({"kind": "incast", "senders": senders, "receiver": receiver, "size": size,
                               "start": start}, tenant=tenant, pg=pg, transport=transport, verb=verb)

    def incast_rounds(self, senders: list[int], receiver: int, size: int, period: str, rounds: int,
                      jitter: str = "0ns", start: str = "0ns", tenant: str | None = None,
                      pg: int | None = None, stagger: str | None = None, piece: int | None = None,
                      transport: str | None = None, verb: str | None = None) -> "Scenario":
        """`rounds` incasts, one every `period`, each sender starting U(0, jitter) into its round.
        `stagger = "serial" | "paced"`: the Blitz poster's application-layer DASR (the aggregator grants
        one sender at a time; or each message in `piece`-byte pieces held to 1/n of the link).
        `verb = "send"` makes each message (each paced piece) a SEND taking a receive WQE."""
        e: dict[str, Any] = {"kind": "incast_rounds", "senders": senders, "receiver": receiver, "size": size,
                             "period": period, "rounds": rounds, "jitter": jitter, "start": start}
        if stagger is not None:
            e["stagger"] = stagger
        if piece is not None:
            e["piece"] = piece
        return self._add_with(e, tenant=tenant, pg=pg, transport=transport, verb=verb)

    def permutation(self, size: int, start: str = "0ns", hosts: list[int] | None = None,
                    tenant: str | None = None, pg: int | None = None, transport: str | None = None,
                    verb: str | None = None) -> "Scenario":
        """Every host (of `hosts`, default all) sends `size` bytes to one other and receives
        from one, all at `start`; the permutation is drawn from the seed."""
        return self._add_with({"kind": "permutation", "size": size, "start": start}, hosts=hosts, tenant=tenant,
                              pg=pg, transport=transport, verb=verb)

    def random_pairs(self, count: int, size: int, start: str = "0ns", window: str = "0ns",
                     hosts: list[int] | None = None, tenant: str | None = None,
                     pg: int | None = None, transport: str | None = None, verb: str | None = None) -> "Scenario":
        """`count` flows of `size` bytes between uniformly random host pairs, starting
        uniformly in [start, start + window]."""
        e: dict[str, Any] = {"kind": "random_pairs", "count": count, "size": size, "start": start, "window": window}
        return self._add_with(e, hosts=hosts, tenant=tenant, pg=pg, transport=transport, verb=verb)

    def multipath(self, messages: list[dict[str, Any]], **fields: Any) -> "Scenario":
        """Messages cut into chunks over several QPs per connection (docs/multipath.md). `messages`:
        dicts of src, dst, size and optionally start and verb (write|send|read; send and
        read need split = "virtuoso"). Fields: split (partition|virtuoso), qps, chunk_size,
        chunk_header, outstanding, allocation (dynamic|static), refill_on (ack|sent),
        post_delay, qp_policy (reuse|recreate), sport_policy (sequential|distinct_paths|explicit),
        sports, pg, dport;
        with split = "virtuoso" (docs/virtuoso.md): path_by (sport|src_ip),
        weights (probe|equal|[w1, ..]), probe_size, small_message, small_path, block,
        monitor_gain, and on a lossy fabric chunk_probe, chunk_probe_start, chunk_probe_step,
        chunk_probe_signal (retry_exceeded|retransmission); workload (a flow source's table,
        e.g. {"kind": "poisson", ...}: its flows become more messages, `messages` may then be
        empty). Results: `Results.messages`, `Results.chunks`, `Results.paths`."""
        return self._add({"kind": "multipath", **fields, "messages": [dict(m) for m in messages]})

    def flows(self, flows: list[dict[str, Any]], tenant: str | None = None, pg: int | None = None,
              transport: str | None = None, verb: str | None = None) -> "Scenario":
        """One `kind = "flows"` entry: explicit flows, each a dict of src, dst, size and
        optionally start, pg (its traffic class, winning over the entry's `pg`), dport, sport
        and src_ip_index (which of the source's addresses, see `with_ips_per_host`);
        `transport`: rc (default) | uc | ud | uet."""
        return self._add_with({"kind": "flows", "flows": [dict(f) for f in flows]}, tenant=tenant, pg=pg,
                              transport=transport, verb=verb)

    def flow(self, src: int, dst: int, size: int, start: str = "0ns", tenant: str | None = None,
             transport: str | None = None, verb: str | None = None, **extra: Any) -> "Scenario":
        """One explicit flow (extra: pg, the traffic class, default 3; dport, sport,
        src_ip_index: which of the source host's addresses it sends from, see
        `with_ips_per_host`). `transport`: rc (default) | uc | ud | uet, as on every traffic
        kind that makes flows; `verb`: write (default) | send (a SEND draws on the responder's
        receive queue, `with_rnic`)."""
        return self._add_with({"kind": "flows", "flows": [{"src": src, "dst": dst, "size": size, "start": start,
                                                           **extra}]}, tenant=tenant, transport=transport, verb=verb)

    # -- tenants and the congestion-control attacks ---------------------------------------------------
    def tenant(self, name: str, hosts: list[int]) -> "Scenario":
        """Declares a tenant: a name and its hosts (a host may be in several)."""
        new = copy.deepcopy(self)
        new.spec.setdefault("tenants", []).append({"name": name, "hosts": list(hosts)})
        return new

    def parallel_qps(self, src: int, dst: int, qps: int, size: int, start: str = "0ns",
                     tenant: str | None = None, pg: int | None = None) -> "Scenario":
        """`qps` QPs from `src` to `dst` opened together, `size` bytes each."""
        return self._add_with({"kind": "parallel_qps", "src": src, "dst": dst, "qps": qps, "size": size,
                               "start": start}, tenant=tenant, pg=pg)

    def staggered_qps(self, src: int, dst: int, qps: int, size: int, chunk: int | None = None,
                      interval: str | None = None, policy: str = "reuse", start: str = "0ns",
                      tenant: str | None = None, pg: int | None = None) -> "Scenario":
        """One `size`-byte transfer cut in `chunk`s (default the path's BDP), chunk k posted at
        start + k·interval (default the path's base RTT) on slot k mod `qps`; `policy` is
        `reuse` or `recreate`."""
        return self._add_with({"kind": "staggered_qps", "src": src, "dst": dst, "qps": qps, "size": size,
                               "policy": policy, "start": start}, chunk=chunk, interval=interval, tenant=tenant,
                              pg=pg)

    def shuffled_overlay(self, hosts: list[int], chunk: int, interval: str, until: str, parallel: int = 1,
                         start: str = "0ns", tenant: str | None = None, pg: int | None = None) -> "Scenario":
        """A ring all-reduce whose ring changes at every step (seeded shifts coprime to n)."""
        return self._add_with({"kind": "shuffled_overlay", "hosts": list(hosts), "chunk": chunk,
                               "interval": interval, "until": until, "parallel": parallel, "start": start},
                              tenant=tenant, pg=pg)

    def hpcc_flow_file(self, path: str | Path, tenant: str | None = None, pg: int | None = None,
                       transport: str | None = None, verb: str | None = None) -> "Scenario":
        """An ns-3 HPCC flow file (`kind = "hpcc_flow_file"`); `pg` replaces every line's own class."""
        return self._add_with({"kind": "hpcc_flow_file", "path": str(Path(path).resolve())}, tenant=tenant, pg=pg,
                              transport=transport, verb=verb)

    hpcc_flows = hpcc_flow_file
    """Another name for `hpcc_flow_file`."""

    def htsim_cm(self, path: str | Path, tenant: str | None = None, pg: int | None = None,
                 transport: str | None = None, verb: str | None = None) -> "Scenario":
        """The flows of an htsim connection matrix (`.cm`; `kind = "htsim_cm"`): htsim node i is
        the i-th host."""
        return self._add_with({"kind": "htsim_cm", "path": str(Path(path).resolve())}, tenant=tenant, pg=pg,
                              transport=transport, verb=verb)

    def simai(self, path: str | Path, ranks: list[int] | dict[str, str] | None = None,
              algorithm: str | None = None, channels: int | None = None, chunk: str | int | None = None,
              start: str | None = None) -> "Scenario":
        """One training iteration of a SimAI workload file (`kind = "simai"`,
        docs/collectives.md): SimAI rank i on `ranks[i]` (a list of hosts or
        `{"hosts": "a..b"}`; default the first `all_gpus` hosts); `algorithm` of the
        allreduces (`ring`, `double_binary_tree`, `halving_doubling`); `channels` and `chunk`
        of every collective; `start` of the first compute."""
        return self._add_with({"kind": "simai", "path": str(Path(path).resolve())}, ranks=ranks,
                              algorithm=algorithm, channels=channels, chunk=chunk, start=start)

    def chakra(self, path: str | Path, ranks: list[int] | dict[str, str] | None = None,
               system: str | Path | None = None, algorithm: dict[str, str] | None = None,
               splits: int | None = None, active_chunks: int | None = None,
               endpoint_delay: str | None = None, channels: int | None = None,
               chunk: str | int | None = None, compute_scale: float | None = None,
               start: str | None = None, dims: list[int] | None = None,
               network: str | Path | None = None) -> "Scenario":
        """Chakra execution traces, one per rank (`kind = "chakra"`, docs/chakra.md): `path`
        is the prefix of the files `<path>.<rank>.et`; rank i on `ranks[i]` (default the
        first hosts); `system` an ASTRA-sim system file; `algorithm` per kind
        (`{"allreduce": "ring"}`), `splits`, `active_chunks` and `endpoint_delay` as its keys
        `*-implementation`, `preferred-dataset-splits`, `active-chunks-per-dimension` and
        `endpoint-delay` (given here, they win over the file's); `compute_scale` multiplies
        the recorded compute durations (0 leaves compute out); `dims` the ranks per network
        dimension (ASTRA-sim's `logical-dims`), one algorithm per dimension in the system file,
        or `network` ASTRA-sim's network file, read for its dimensions only."""
        return self._add_with({"kind": "chakra", "path": str(Path(path).resolve())}, ranks=ranks,
                              system=None if system is None else str(Path(system).resolve()),
                              algorithm=algorithm, splits=splits, active_chunks=active_chunks,
                              endpoint_delay=endpoint_delay, channels=channels, chunk=chunk,
                              compute_scale=compute_scale, start=start, dims=dims,
                              network=None if network is None else str(Path(network).resolve()))

    # -- the DRUM paper's host model (docs/drum-fabric.md) ----------------------------------
    def app(self, host: int, dst: int, size: int | list[int], wr_num: int | list[int], count: int | None = None,
            name: str | None = None, think: str | None = None, start: str | None = None,
            total_bytes: int | None = None, size_dist: str | None = None,
            transport: str | None = None) -> "Scenario":
        """A closed-loop application (`[[app]]`): batches of `wr_num` WQEs of `size` bytes to
        `dst`, the last one signalled; waits for that CQE, thinks, repeats. `size` and `wr_num`
        take a number or `[lo, hi]` (size log-uniform, or uniform with
        `size_dist="uniform"`; wr_num uniform; drawn per batch);
        `count` identical instances, each its own connection. Results: `wqes`, `apps`, `drum`."""
        e: dict[str, Any] = {"host": host, "dst": dst, "size": size, "wr_num": wr_num}
        e.update({k: v for k, v in dict(count=count, name=name, think=think, start=start,
                                         total_bytes=total_bytes, size_dist=size_dist,
                                         transport=transport).items() if v is not None})
        new = copy.deepcopy(self)
        new.spec.setdefault("app", []).append(e)
        return new

    def collective(self, name: str, kind: str, ranks: list[int] | dict[str, str], size: str | int,
                   algorithm: str | None = None, channels: int | None = None, chunk: str | int | None = None,
                   start: str | None = None, repeat: int | None = None,
                   transport: str | None = None) -> "Scenario":
        """A collective (`[[collective]]`, docs/collectives.md): `kind` allreduce, allgather,
        reduce_scatter, alltoall or broadcast; `algorithm` ring (default), double_binary_tree,
        halving_doubling or direct (alltoall's default); `ranks` hosts in rank order or
        `{"hosts": "0..15"}`; `size` bytes per rank as NCCL-tests counts them (`"64MiB"`);
        `channels`, `chunk` (default 512KiB), `start`, `repeat`; `transport` rc (default) or uet
        (docs/uet.md). Results: `collectives`."""
        e: dict[str, Any] = {"name": name, "kind": kind, "ranks": ranks, "size": size}
        e.update({k: v for k, v in dict(algorithm=algorithm, channels=channels, chunk=chunk, start=start,
                                         repeat=repeat, transport=transport).items() if v is not None})
        return self._append("collective", e)

    def with_host(self, **settings: Any) -> "Scenario":
        """`[host]`: mechanism (raw|share|drum), wqe_cost, poll_cost, cores, share_ratio, lock_cost,
        lock_transfer, max_send_wr."""
        new = copy.deepcopy(self)
        new.spec.setdefault("host", {}).update(settings)
        return new

    def with_rnic(self, recv_queue_depth: int | None = None, recv_repost_delay: str | None = None,
                  min_rnr_timer: int | None = None, rnr_retry: int | None = None,
                  srq_depth: int | None = None, timeout: int | None = None,
                  retry_cnt: int | None = None, recv_processing: str | None = None,
                  max_send_wr: int | None = None) -> "Scenario":
        """`[rnic]` (docs/model/rnic.md, "Receive queues and RNR NAKs"): `recv_queue_depth` receive
        WQEs kept posted per connection at a responder (absent: unlimited, no RNR NAK);
        `recv_repost_delay` from a SEND's receive completion to its WQE posted again (default
        "0ns"); `recv_processing` the responder's per-message processing, one receive completion
        at a time per host before the repost delay starts (default "0ns"); `min_rnr_timer` the IBA Table 45 code 0-31 (default 12, 0.64 ms); `rnr_retry`
        0-7 (default 7, retry forever); `srq_depth` instead of `recv_queue_depth`: one shared
        receive queue of that many WQEs per responder host, drawn on by every connection to it.
        Only `verb="send"` traffic draws on the queue. `timeout` (the local ACK timeout as verbs
        encode it, 4.096 us x 2^timeout, 0: none) and `retry_cnt` (0-7) set `fabric.rto` and
        `fabric.retry_limit` in the verbs' terms. `max_send_wr` is the send-queue depth of every
        application QP (default 16351; docs/model/rnic.md, "Send queues of applications' QPs").
        Results: `counters["rnr_naks"]`, `counters["rnr_retry_exceeded"]`, `rnr` (per flow)."""
        new = copy.deepcopy(self)
        new.spec.setdefault("rnic", {}).update({k: v for k, v in dict(
            recv_queue_depth=recv_queue_depth, recv_repost_delay=recv_repost_delay,
            min_rnr_timer=min_rnr_timer, rnr_retry=rnr_retry, srq_depth=srq_depth, timeout=timeout,
            retry_cnt=retry_cnt, recv_processing=recv_processing,
            max_send_wr=max_send_wr).items() if v is not None})
        return new

    def with_drum(self, **settings: Any) -> "Scenario":
        """`[drum]`: period, solve (exact|admm), iterations, alpha, beta, k, q_fraction, control, control_delay,
        shared_window, a (cqe_per_wqe|batch_size), select (smallest_a|least_served) (ignored unless `with_host(mechanism="drum")`)."""
        new = copy.deepcopy(self)
        new.spec.setdefault("drum", {}).update(settings)
        return new

    # -- settings -----------------------------------------------------------------------
    def with_seed(self, seed: int) -> "Scenario":
        """The seed of every random stream (traffic and ECN marking; default 1)."""
        new = copy.deepcopy(self)
        new.spec["seed"] = seed
        return new

    def with_fabric(self, **settings: Any) -> "Scenario":
        """Fabric settings: timing, mtu, lossless, buffer_mb, ecn, ack_high_prio,
        ack_interval, rto, retry_limit (go-back-N rounds without progress before a WR fails),
        path_selection (ecmp|source_ip|spray|drill|letflow|conga|conweave; the switch-side balancers take
        `lb={...}`, the `[fabric.lb]` fields, docs/load-balancing.md; ev_spray|ev_cycle|ev_bitmap|reps spray UET's
        packets by entropy), uet (a dict of the `[fabric.uet]` fields, e.g. `uet={"ack_every": 2}`),
        trimming (a dict of the `[fabric.trimming]` fields, e.g. `trimming={"threshold_kb": 20}`;
        docs/uet.md), cc (none|dcqcn|hpcc|timely|dctcp|blitz|ib|swift|nscc, or on UET flows
        rccc|nscc+rccc: the receiver's credit, alone or beside NSCC) with rccc (a dict of the
        `[fabric.rccc]` fields, e.g. `rccc={"grant_packets": 4}`; docs/rccc.md), granularity, cc_params, window, qp_cache_entries,
        qp_cache_miss_penalty, queue_sample_interval, rate_sample_interval (per-QP rate
        samples: `Results.rates`), iofd (Blitz's in-order flow deflection, a dict of the
        `[fabric.iofd]` fields, e.g. `iofd={"max_deflections": 2}`; `{}` = on with defaults),
        ecn_kmin, ecn_kmax, ecn_pmax, cc_state_linger, defense, defense_start_fraction
        (docs/attacks.md), classes (a list of `[[fabric.classes]]` tables; or
        `with_class`), link_layer (roce|infiniband: credit-based flow control per VL, IB
        headers, MTU 256..4096 default 2048) and ib_vl_buffer (bytes per input port and VL;
        docs/model/infiniband.md, "InfiniBand link layer"). Link rates also take "QDR4x", "FDR4x",
        "EDR4x", "HDR4x". egress_arbitration (fifo|input_fair: DRR among a switch egress's
        input ports; InfiniBand's default is input_fair), buffer_model (shared|per_port|egress_dynamic), port_buffer_kb (per_port only) and dt_alpha (egress_dynamic only;
        docs/model/classes-and-buffers.md, "Fair arbitration among input ports", "Per-port buffers"), and
        nic_arbitration (qp|tenant: a NIC's data turns per QP, or by tenant first).
        Also cnp_interval (CNP pacing at the receiver), qp_cache_fetch (parallel|serial),
        deadlock_timeout and on_deadlock (stop|continue; docs/model/pfc.md, "PFC deadlocks"),
        link_sample_interval (bytes and utilisation per link direction: `Results.links`),
        error_rate (per-packet loss probability of every link) and reroute_delay (link
        down/up to new routes). docs/reference/scenario.md lists every key with its default.
        loss_recovery (go_back_n|irn) with irn (a dict of the `[fabric.irn]` fields: rto_low,
        rto_high, low_packets, bdp), cnp_on_ooo (a CNP on an out-of-order packet) and
        nack_interval (go-back-N's least time between NACKs for one expected packet; ConWeave's
        artifact uses 4us); docs/model/loss-and-failures.md, "Loss recovery: go-back-N and IRN". pfc_watchdog (a
        dict of the `[fabric.pfc_watchdog]` fields: detection_time, restoration_time,
        poll_interval, action; docs/model/pfc.md, "PFC watchdog"). pfc_pause (a dict of the
        `[fabric.pfc_pause]` fields: quanta, refresh_quanta; docs/model/pfc.md, "PFC pause time").
        pfc_headroom_kb (PFC headroom of every switch ingress port, KiB; default: what can still
        arrive after a PAUSE, docs/model/pfc.md "PFC headroom").

        Blitz: `with_fabric(cc="blitz", cc_params={"dasr_count": "qp"}, iofd={})`.
        InfiniBand CC (IBA annex A10): `with_fabric(cc="ib", cc_params={"ccti_timer": "20us",
        "cct": [0, "3:1", "3:2"]})`, keys threshold, marking_rate, packet_size, ccti_increase,
        ccti_limit, ccti_min, ccti_timer, cct, and the named forms ib_cc_preset, threshold_level
        and cct = "<table>" (docs/model/infiniband.md, "Settings by name"); `granularity="per_sl"` for one
        state per (source, SL); Blitz over it with `cc_params={"dasr_fallback": "ib"}`.
        The window algorithms (docs/cc-window.md): `with_fabric(cc="swift", cc_params=
        {"swift_base_target": "20us"})`, `with_fabric(cc="nscc", cc_params={"nscc_target_qdelay":
        "4us"})`; their windows are `Results.rates`' window_bytes."""
        new = copy.deepcopy(self)
        new.spec.setdefault("fabric", {}).update(settings)
        return new

    def with_class(self, pg: int, scheduler: str | None = None, weight: int | None = None,
                   pfc: bool | None = None, ecn_kmin: int | None = None, ecn_kmax: int | None = None,
                   ecn_pmax: float | None = None) -> "Scenario":
        """Settings of traffic class `pg` (1..7): one `[[fabric.classes]]` table. `scheduler`
        is `strict` (before every DWRR class; among strict classes the lower number first) or
        `dwrr` (the default) with `weight` (default 1); `pfc` defaults to `fabric.lossless`;
        the ECN thresholds default to the fabric-wide ones. Traffic picks its class with
        `pg=` (every traffic builder takes it). See docs/model/classes-and-buffers.md, "Traffic classes"."""
        entry = {"pg": pg, **{k: v for k, v in (("scheduler", scheduler), ("weight", weight), ("pfc", pfc),
                                                 ("ecn_kmin", ecn_kmin), ("ecn_kmax", ecn_kmax),
                                                 ("ecn_pmax", ecn_pmax)) if v is not None}}
        new = copy.deepcopy(self)
        new.spec.setdefault("fabric", {}).setdefault("classes", []).append(entry)
        return new

    def with_ips_per_host(self, n: int) -> "Scenario":
        """Every host owns `n` addresses (`11.x.y.1` .. `11.x.y.n`); a flow picks one with
        `src_ip_index`, and ECMP hashes it, so flows may differ in path by address alone."""
        new = copy.deepcopy(self)
        new.spec["topology"]["ips_per_host"] = n
        return new

    def with_stop_time(self, t: str) -> "Scenario":
        """Stop the run at simulated time `t` (`"10ms"`; default: when all flows are done)."""
        new = copy.deepcopy(self)
        new.spec["stop_time"] = t
        return new

    # -- the rest of the TOML's top level (same names as the file's keys) --------------------
    def link(self, a: int, b: int, error_rate: float | None = None, rate: str | None = None) -> "Scenario":
        """`[[links]]`: settings of the link(s) joining nodes `a` and `b` that override the
        fabric-wide ones and the topology's: `error_rate` (the per-packet loss probability) and
        `rate` (the line rate of both directions, e.g. `"25Gbps"`)."""
        entry: dict[str, Any] = {"a": a, "b": b}
        if error_rate is not None:
            entry["error_rate"] = error_rate
        if rate is not None:
            entry["rate"] = rate
        return self._append("links", entry)

    def event(self, kind: str, at: str, a: int, b: int) -> "Scenario":
        """`[[events]]`: `kind` is `link_down` or `link_up`, the link(s) joining nodes `a` and
        `b` at time `at` (packets on the wire are lost, routes recomputed after
        `fabric.reroute_delay`)."""
        return self._append("events", {"kind": kind, "at": at, "a": a, "b": b})

    def with_trace(self, flows: list[int] | None = None, nodes: list[int] | None = None,
                   ports: list[str] | None = None, start: str | None = None, end: str | None = None,
                   max_bytes: int | None = None) -> "Scenario":
        """`[trace]`: the per-packet events of these flows, nodes or links (`h0:0-sw16:0`;
        none given: everywhere) in [start, end), refused above an estimate of `max_bytes`
        (docs/outputs.md). `Results.trace` reads it."""
        fields = dict(flows=flows, nodes=nodes, ports=ports, start=start, end=end, max_bytes=max_bytes)
        new = copy.deepcopy(self)
        new.spec["trace"] = {k: v for k, v in fields.items() if v is not None}
        return new

    def with_threads(self, threads: int | str) -> "Scenario":
        """`threads`: the parallel engine's thread count, or `"auto"` (docs/parallel.md)."""
        new = copy.deepcopy(self)
        new.spec["threads"] = threads
        return new

    def with_partition_map(self, path: str | Path) -> "Scenario":
        """`partition_map`: a file of `node partition` lines, the parallel engine's cut."""
        new = copy.deepcopy(self)
        new.spec["partition_map"] = str(Path(path).resolve())
        return new

    def _append(self, section: str, entry: dict[str, Any]) -> "Scenario":
        new = copy.deepcopy(self)
        new.spec.setdefault(section, []).append(entry)
        return new

    def to_json(self) -> str:
        """The scenario as the engine reads it. NaN, infinities and integers outside 64 bits
        have no JSON form: they are refused here, naming the field as the engine would."""
        check_numbers(self.spec)
        return json.dumps(self.spec, allow_nan=False)

    def to_toml(self, path: str | Path | None = None) -> str:
        """The scenario as the TOML text that `Scenario.from_toml` reads back to the same
        scenario (written to `path` too when given)."""
        text = dumps(self.spec)
        if path is not None:
            Path(path).write_text(text)
        return text

    def _repr_html_(self) -> str:
        """A notebook's view: topology, traffic and settings as tables."""
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
        """The folder relative paths inside the scenario resolve against (its file's, else the
        current folder)."""
        return str(self.path.parent if self.path else Path.cwd())

    def __repr__(self) -> str:
        return f"Scenario({self.spec!r})"
