# %% [markdown]
# # A day with rdmalab, notebook style
# Each `# %%` cell runs in Jupyter (or VS Code) as it is; `python examples/notebook.py` runs
# them all and writes its figures to out/notebook/. Small sizes: seconds, not minutes.

# %%
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # in a notebook, leave this out: figures show inline
import matplotlib.pyplot as plt

import rdmalab
from rdmalab import Scenario, plots

OUT = Path("out/notebook")
OUT.mkdir(parents=True, exist_ok=True)

# %% A scenario in code, shown as a table in a notebook (`_repr_html_`) and as TOML.
sc = (Scenario.leaf_spine(2, 4, spines=2)
      .poisson("web_search", load=0.4, duration="100us")
      .incast(senders=[1, 2, 3], receiver=0, size=200_000, start="20us")
      .with_fabric(cc="dcqcn", queue_sample_interval="2us", link_sample_interval="5us",
                   rate_sample_interval="5us")
      .with_seed(3))
(OUT / "scenario.toml").write_text(sc.to_toml())
assert Scenario.from_toml(OUT / "scenario.toml").spec == sc.spec  # the same scenario back

# %% Run it: a tqdm.auto progress bar (a widget in Jupyter) after one second.
res = rdmalab.run(sc)
print(res.summary())

# %% Figures return a matplotlib Figure; `ax=` draws into your own layout.
fig, axes = plt.subplots(2, 2, figsize=(12, 7))
plots.slowdown_figure(res, percentiles=["p99"], ax=axes[0, 0])
plots.queue_lengths(res, top=3, ax=axes[0, 1])
plots.link_utilisation(res, top=3, ax=axes[1, 0])
plots.flow_rates(res, top=4, ax=axes[1, 1])
fig.suptitle(plots.describe(sc, res))
fig.tight_layout()
fig.savefig(OUT / "overview.png", dpi=100)

# %% Tables are polars DataFrames with named ports.
busiest = res.ports.sort("tx_bytes", descending=True).select("link", "node", "port", "tx_bytes").head(3)
print(busiest)
