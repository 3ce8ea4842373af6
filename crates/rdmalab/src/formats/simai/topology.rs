//! Reader of SimAI's topology file (what its `gen_Topo_Template.py` writes; read by its
//! ns-3 backend's `SetupNetwork`, aliyun/SimAI at cef83f9,
//! `astra-sim-alibabacloud/astra-sim/network_frontend/ns3/common.h`, lines 701-773):
//!
//! ```text
//! N GPUS_PER_SERVER NV S L GPU_TYPE
//! <NV NVSwitch ids> <S switch ids>
//! a b RATE DELAY ERR      (L times)
//! ```
//!
//! The reference's file (`hpcc_topology`) with two more header fields and the NVSwitches
//! listed before the switches. The nodes listed in neither are GPUs; SimAI numbers its ranks
//! 0 .. N − NV − S and puts GPU i under NVSwitch `gpus + i / GPUS_PER_SERVER`
//! (`AstraSimNetwork.cc`, `main`, lines 273-279), so the GPUs must be the first ids. A GPU
//! linked both to an NVSwitch and to the fabric sends each flow on the port its route leaves
//! by (`Topology::egress_by_destination`), as SimAI's hosts pick the NVSwitch port for a
//! destination reached through it (`common.h`, `SetRoutingEntries`, lines 327-334).

use std::path::Path;

use crate::error::Result;
use crate::formats::hpcc_topology::{build, check_hosts_linked, read_links, read_switches, MAX_NODES};
use crate::formats::tokens::{read_text, Reader};
use crate::ids::NodeId;
use crate::topology::Topology;

/// A SimAI topology: the graph (NVSwitches and switches are its switches) and the header.
#[derive(Clone, Debug)]
pub struct SimaiTopology {
    /// The graph; GPUs are hosts 0 .. `gpus`.
    pub topology: Topology,
    /// GPUs (hosts).
    pub gpus: usize,
    /// `GPUS_PER_SERVER`.
    pub gpus_per_server: u64,
    /// The NVSwitches' node ids.
    pub nvswitches: Vec<NodeId>,
    /// `GPU_TYPE` as written (SimAI knows A100, A800, H100 and H800, and reads any other as none).
    pub gpu_type: String,
}

/// Parses a SimAI topology file's text; `path` names it in errors.
pub fn parse_simai_topology(text: &str, path: &Path) -> Result<SimaiTopology> {
    let mut r = Reader::new(text, path);
    r.check_record("the header", "N GPUS_PER_SERVER NV S L GPU_TYPE")?;
    let (n, n_line) = r.u64_max("N", "the node count N", MAX_NODES)?;
    let (gps, gps_line) = r.u64("GPUS_PER_SERVER", "the GPUs per server")?;
    let (nv, _) = r.u64("NV", "the NVSwitch count")?;
    let (s, s_line) = r.u64("S", "the switch count S")?;
    if nv + s > n {
        return Err(r.err(s_line, "S", format!("{nv} NVSwitches and {s} switches but only N = {n} nodes")));
    }
    let (l, _) = r.u64("L", "the link count L")?;
    let gpu_type = r.next("GPU_TYPE", "the GPU type")?.text.to_string();
    if gps == 0 {
        return Err(r.err(gps_line, "GPUS_PER_SERVER", "must be at least 1 (SimAI divides by it)"));
    }
    let all = read_switches(&mut r, n, nv + s)?;
    let links = read_links(&mut r, n, l)?;
    check_hosts_linked(&r, n, n_line, &all, &links)?;
    let gpus = (n - nv - s) as usize;
    if let Some(sw) = all.iter().find(|id| id.idx() < gpus) {
        let msg = format!("switch {} is among the first {gpus} ids: SimAI's GPUs are nodes 0 .. {gpus}", sw.0);
        return Err(r.err(s_line, "S", msg));
    }
    let topology = build(n, &all, &links, path)?;
    let nvswitches = all[..nv as usize].to_vec();
    let mut t = SimaiTopology { topology, gpus, gpus_per_server: gps, nvswitches, gpu_type };
    if t.topology.hosts().any(|h| t.topology.nodes[h.idx()].ports.len() > 1) {
        t.topology.egress_by_destination = true;
        let mut nvswitch = vec![false; t.topology.len()];
        for s in &t.nvswitches {
            nvswitch[s.idx()] = true;
        }
        t.topology.nvswitch = nvswitch;
    }
    Ok(t)
}

/// Reads and parses the SimAI topology file at `path`.
pub fn read_simai_topology(path: impl AsRef<Path>) -> Result<SimaiTopology> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_simai_topology(&text, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gpus_nvswitches_and_switches() {
        // Two GPUs of one server: an NVSwitch (2) and a leaf (3), as gen_Topo_Template writes it.
        let text = "4 2 1 1 4 H100\n2 3 \n0 2 2880Gbps 0.000025ms 0\n0 3 400Gbps 0.0005ms 0\n\
                    1 2 2880Gbps 0.000025ms 0\n1 3 400Gbps 0.0005ms 0\n";
        let t = parse_simai_topology(text, Path::new("topo")).unwrap();
        assert_eq!(
            (t.gpus, t.gpus_per_server, t.nvswitches.clone(), t.gpu_type.as_str()),
            (2, 2, vec![NodeId(2)], "H100")
        );
        assert!(t.topology.egress_by_destination);
        assert_eq!(t.topology.hosts().count(), 2);
        let bad = [
            ("4 0 1 1 4 H100\n2 3\n", "topo:1: field `GPUS_PER_SERVER`"),
            ("4 2 1 1 2 H100\n0 3\n1 0 1Gbps 1ns 0\n2 3 1Gbps 1ns 0\n", "topo:1: field `S`"),
            ("4 2 3 2 0 H100\n", "topo:1: field `S`"),
        ];
        for (b, loc) in bad {
            let e = parse_simai_topology(b, Path::new("topo")).unwrap_err().to_string();
            assert!(e.contains(loc), "{b:?}: {e}");
        }
    }
}
