"""Investigations: scripts that each take one paper's open differences and run, for each, the
runs that remove its suspected cause (docs/attacks.md, multipath.md, drum-fabric.md,
virtuoso.md, load-balancing.md say which rows come from which part).

| script | paper | parts (default first) |
|---|---|---|
| `attack_dcqcn_causes` | the CC-attack paper | fig4, fig5; seeds, where[:10ms], knobs, floor[:LOAD[:NICS[:MIN_RATE]]], dcqcn_paper, by_start, figure |
| `mp_partition_causes` | the data-partition paper | bubble, paths; flatten, knee, fresh, ns3rdma, ns3rdma_flatten, ns3rdma_knee, echo |
| `virtuoso_overhead_causes` | the Virtuoso paper, Fig. 8 | table |
| `virtuoso_irn_causes` | lb-host-vs-switch | 0.25, 0.35, lossless |
| `conweave_causes` | lb-conweave | 50, 80[:DURATION[:SCHEMES]]; variants[:LOAD[:DURATION[:ROWS]]] |
| `drum_tc_causes` | the DRUM paper, TC1/TC2 | tc1, tc2 |
| `drum_tc3_choices` | the DRUM paper, TC3 | choices[:N]; tc1 |
| `drum_topk_exact` | the DRUM paper, top-k | table |
| `drum_link_causes` | the DRUM paper, TC1/TC3 on RoCE and IB QDR | tc1, tc3 |
| `drum_stream_causes` | the DRUM paper: a one-WQE stream under DRUM | kv, bulk, two |
| `drum_tc1_causes` | the DRUM paper, TC1 (Fig. 8): DRUM's line flat in cc | tc1[:quick] |
| `drum_fig6_causes` | the DRUM paper, Fig. 6 (drum-fig2a's DRUM rows): growth with the batch | fig6[:quick] |
| `blitz_causes` | the Blitz poster, IB/DASR ratios | baseline, no_cc, fifo, timers, mark_every, no_long_flow, nic, serial, serial_no_long_flow, paced, deeper, deeper_dasr, dasr_cc, vl_4k, yardstick[:DRAWS] |

Each runs as `python -m rdmalab.experiments.causes.<script> [--out DIR] [--fresh] [PART ...]`.

To add one (say `blitz_causes`), write `causes/blitz_causes.py` on the base (`causes/base.py`):

    import sys

    from rdmalab.experiments.causes.base import Investigation, run

    def incast(rounds: str = "4") -> None:          # a part: prints its table
        res = run(SCENARIO_TOML)                    # a Scenario, TOML text, or a dict + base_dir
        print(res.flows["fct_ns"].mean(), res.counters["drops"])

    INVESTIGATION = Investigation("blitz_causes", {"incast": incast}, ["incast"])

    if __name__ == "__main__":
        sys.exit(INVESTIGATION.main())

`run` is the one way to make a run: under `main` it keeps each run in the results store
(`out/causes/<script>/`, the sweeps' `Store`) keyed by its scenario and reads it back on a
later call, so a script never keeps a cache of its own; figures go through
`rdmalab.plots.save_figure` into `figure_dir(<script>)`. Add the script to the table above and
its command to the docs that quote its rows.
"""
