"""Short names of a run's traffic (`staggered+victim`, `parallel30+victim`): what a run's label
and the attack tables print. A leaf: it imports nothing of the package, so the sweep, the
store and the tenant tables can all use it."""

from __future__ import annotations

from typing import Any


def case_name(traffic: list[dict[str, Any]]) -> str:
    """A short name of a list of traffic entries (`staggered+victim`, ...)."""
    kinds = {"staggered_qps": "staggered", "parallel_qps": "parallel", "shuffled_overlay": "overlay",
             "flows": "victim", "poisson": "benign"}
    names = []
    for t in traffic:
        k = kinds.get(t.get("kind"), t.get("kind"))
        if t.get("kind") == "parallel_qps":
            k = f"parallel{t.get('qps')}"
        if t.get("kind") == "staggered_qps":
            k = f"staggered-{t.get('policy', 'reuse')}"
        if t.get("kind") == "poisson" and t.get("split"):
            gap = t["split"].get("gap", "0ns")
            k = "split-parallel" if gap in ("0ns", "0us", "0") else f"split-staggered-{gap}"
        names.append(k)
    return "+".join(names)
