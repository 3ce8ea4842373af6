//! Rail-optimised fabrics (`[topology] kind = "rail"`): the wiring the builder
//! documents, which switches a transfer crosses, a ring AllReduce over one rail against the
//! star's closed form (docs/collectives.md), one over every GPU, and errors naming the field.

use rdmalab::sim::{Results, SimConfig};
use rdmalab::topology::Topology;
use rdmalab::{NodeId, Rate, Time};

use crate::fixtures::{input_error, port_to, run_finished, scenario};

const B: Rate = Rate::gbps(400);
const D: Time = Time::from_ns(1000);

fn rail(servers: usize, gpus: usize, leaves: usize, spines: usize) -> String {
    format!(
        "[topology]\nkind = \"rail\"\nservers = {servers}\ngpus_per_server = {gpus}\nleaves_per_rail = {leaves}\n\
         spines = {spines}\n[fabric]\nack_interval = 1000000\n"
    )
}

/// The run's results and its topology.
fn run(toml: &str) -> (Results, Topology) {
    let s = scenario(toml, "rail.toml");
    let topo = s.topology.clone();
    (run_finished(s), topo)
}

/// Bytes the link from `a` to `b` carried.
fn sent(r: &Results, t: &Topology, a: u32, b: u32) -> u64 {
    r.ports[port_to(t, NodeId(a), NodeId(b)).idx()].tx_bytes
}

#[test]
fn gpu_g_of_every_server_hangs_off_rail_g() {
    // 4 servers of 4 GPUs, 2 leaves per rail (servers 0-1 and 2-3), 3 spines: hosts 0..16,
    // rail g's leaf j is 16 + 2g + j, spines 24..27.
    let t = scenario(&rail(4, 4, 2, 3), "rail.toml").topology;
    assert_eq!(t.len(), 16 + 8 + 3);
    for h in 0..16u32 {
        let (server, gpu) = (h / 4, h % 4);
        let leaf = 16 + 2 * gpu + server / 2;
        assert_eq!(t.nodes[h as usize].ports.len(), 1);
        assert_eq!(t.ports[t.nodes[h as usize].ports[0].idx()].peer_node, NodeId(leaf), "host {h}");
    }
    for leaf in 16..24 {
        // 2 servers' GPU below, every spine above.
        assert_eq!(t.nodes[leaf].ports.len(), 2 + 3);
    }
    for spine in 24..27 {
        assert_eq!(t.nodes[spine].ports.len(), 8);
    }
}

#[test]
fn the_same_gpu_of_two_servers_meets_at_its_rail_leaf_and_two_gpus_of_one_server_at_a_spine() {
    // GPU 1 of server 0 (host 1) to GPU 1 of server 1 (host 5): both on rail 1's leaf 18.
    // GPU 0 to GPU 1 of server 0 (hosts 0 and 1): rails 0 and 1 meet only at the spines.
    let flows = "[[traffic]]\nkind = \"flows\"\nflows = [{ src = 1, dst = 5, size = 100000 }, \
                 { src = 0, dst = 1, size = 200000, start = \"1ms\" }]\n";
    let (r, t) = run(&format!("{}{flows}", rail(2, 4, 1, 2)));
    let wire = |b: u64| b + b.div_ceil(1000) * SimConfig::default().header_bytes as u64;
    // Hosts 0..8, leaves 8..12 (rail g: 8 + g), spines 12, 13. Host 1 sends the first flow
    // and the ACK of the second (one per message here).
    let ack = SimConfig::default().ack_bytes as u64;
    assert_eq!(sent(&r, &t, 1, 9), wire(100_000) + ack);
    assert_eq!(sent(&r, &t, 9, 5), wire(100_000));
    let up: u64 = (12..14).map(|s| sent(&r, &t, 8, s)).sum();
    let down: u64 = (12..14).map(|s| sent(&r, &t, s, 9)).sum();
    assert_eq!((up, down), (wire(200_000), wire(200_000)));
    // Leaf 9's uplinks carried only that ACK: the first flow never left rail 1's leaf.
    let spine_from_9: u64 = (12..14).map(|s| sent(&r, &t, 9, s)).sum();
    assert_eq!(spine_from_9, ack);
}

/// A(b) on this file's star (`fixtures::arrival`).
fn arrival(b: u64) -> Time {
    crate::fixtures::arrival(b, B, D)
}

#[test]
fn a_ring_over_one_rail_takes_the_stars_closed_form() {
    // GPU 3 of 6 servers: one leaf of rail 3 joins them, a star at 400 Gb/s. Ring AllReduce:
    // T = 2(n-1)·A(S/n) + (2n-3)·tx(ack).
    let n = 6u64;
    let ranks: Vec<String> = (0..n).map(|s| (s * 4 + 3).to_string()).collect();
    let c = format!(
        "[[collective]]\nname = \"r\"\nkind = \"allreduce\"\nranks = [{}]\nsize = 600000\nchunk = \"1MiB\"\n",
        ranks.join(", ")
    );
    let (r, _) = run(&format!("{}{c}", rail(6, 4, 1, 2)));
    let rec = &r.collectives[0];
    let steps = 2 * (n - 1);
    let ack = B.tx_time(SimConfig::default().ack_bytes as u64);
    assert_eq!(rec.end.unwrap() - rec.start, Time(steps * arrival(600_000 / n).0 + (steps - 1) * ack.0));
}

#[test]
fn a_ring_over_every_gpu_completes() {
    let c = "[[collective]]\nname = \"all\"\nkind = \"allreduce\"\nranks = { hosts = \"0..15\" }\nsize = \"1MiB\"\n";
    let (r, _) = run(&format!("{}{c}", rail(4, 4, 2, 2)));
    let rec = &r.collectives[0];
    assert!(rec.end.is_some() && rec.busbw_gbps > 0.0, "{rec:?}");
    assert_eq!(rec.steps, 2 * 15);
}

#[test]
fn bad_rail_input_names_the_field() {
    for (toml, field, says) in [
        (rail(6, 8, 4, 2), "topology.leaves_per_rail", "do not split evenly"),
        (rail(4, 0, 1, 2), "topology.gpus_per_server", "at least 1"),
        (rail(4, 8, 1, 0), "topology.spines", "at least 1"),
        ("[topology]\nkind = \"rail\"\nspines = 2\n".into(), "servers", "missing"),
    ] {
        let e = input_error(&toml);
        assert!(e.contains(field) && e.contains(says), "{e}");
    }
}

#[test]
fn a_rail_fabric_gives_the_same_outputs_at_1_2_and_4_threads() {
    // Every GPU of 4 servers in one ring under DCQCN: intra-server steps cross the spines,
    // inter-server ones stay on a rail, and both cross the partitions' cuts.
    let toml = format!(
        "{}cc = \"dcqcn\"\n[[collective]]\nname = \"all\"\nkind = \"allreduce\"\nranks = {{ hosts = \"0..15\" }}\n\
         size = \"512KiB\"\nchunk = \"8KiB\"\nchannels = 2\n",
        rail(4, 4, 2, 2)
    );
    let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads("rail", &toml);
    assert_eq!(stop, rdmalab::sim::StopReason::Finished);
    assert!(r.collectives[0].end.is_some());
}
