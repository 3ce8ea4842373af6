"""Writes the SimAI workloads of `rdmalab repro run collectives-simai` (docs/collectives.md):
`python make_simai_llama7b.py <folder>`.

Source: aliyun/aicb, workload/simAI/model_workload/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1_A100.txt
at commit b6f180c4fef121587f563b5aa4272df337028470 (AICB's SimAI workload for Llama-7B under
Megatron, TP 2, PP 1, micro-batch 1, compute times measured on A100s). Its rows are kept with
their names, compute times, types and sizes, except:

- 2 of its 32 transformer blocks (attention_layer + mlp_layer rows) are kept, and the rows
  that carry the whole model's parameters (grad_norm's allgather and reduce-scatter of the
  distributed optimizer, layernorm's allreduce) are scaled by 2/32 to match;
- its first row (`norm`, a BROADCAST of 16 KiB) is left out: rdmalab's reader has no broadcast
  type;
- the header gains `ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: N` (the source names no GPU count);
- the quick workload (16 GPUs) keeps 1 block and divides every size by 64.
"""
import sys
from pathlib import Path

ATT = ("attention_layer", 539986, "ALLREDUCE", 16777216, 592000, "ALLREDUCE", 16777216, 592000, "NONE", 0)
MLP = ("mlp_layer", 486330, "ALLREDUCE", 16777216, 529500, "ALLREDUCE", 16777216, 529500, "NONE", 0)

def rows(blocks, param_scale, div):
    g = lambda b: int(b * param_scale) // div
    a = lambda b: b // div
    out = [("grad_norm", 1, "ALLGATHER", g(6754926592), 1, "NONE", 0, 1, "REDUCESCATTER", g(13509853184)),
           ("layernorm", 1, "NONE", 0, 1, "ALLREDUCE", g(6754926592), 1, "NONE", 0),
           ("embedding_layer", 1, "ALLREDUCE", a(16777216), 1, "ALLREDUCE", a(16777216), 1, "NONE", 0)]
    for _ in range(blocks):
        for r in (ATT, MLP):
            out.append((r[0], r[1], r[2], a(r[3]), r[4], r[5], a(r[6]), r[7], r[8], r[9]))
    out.append(("embedding_norm", 1, "ALLREDUCE", a(262144000), 1, "NONE", 0, 1, "NONE", 0))
    out += [(f"cross_entropy{i}", 1, "ALLREDUCE", 8192, 1, "NONE", 0, 1, "NONE", 0) for i in (1, 2, 3)]
    out += [(f"optimizer{i}", 1, "ALLREDUCE", 4, 1, "NONE", 0, 1, "NONE", 0) for i in (1, 2, 3, 4)]
    return out

def write(path, gpus, blocks, div):
    rs = rows(blocks, blocks / 32, div)
    lines = [f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: {gpus} "
             "checkpoints: 0 checkpoint_initiates: 0", str(len(rs))]
    lines += ["\t".join([r[0], "-1"] + [str(x) for x in r[1:]] + ["100"]) for r in rs]
    Path(path).write_text("\n".join(lines) + "\n")

d = Path(sys.argv[1])
write(d / "simai_llama7b_tp2_256.txt", 256, 2, 1)
write(d / "simai_llama7b_tp2_1024.txt", 1024, 2, 1)
write(d / "simai_llama7b_tp2_quick.txt", 16, 1, 64)
