//! NVLink inside a server (`[topology] nvlink_rate` and `nvlink_latency` of
//! `kind = "rail"`): each GPU's second port leads to its server's NVLink switch, and a GPU
//! sends to a GPU of its server over it, to any other over its rail NIC. Checked against
//! the star's closed forms at the NVLink's rate and latency (docs/collectives.md), and byte
//! for byte per link.

use rdmalab::sim::{Results, SimConfig};
use rdmalab::topology::Topology;
use rdmalab::{NodeId, Rate, Time};

use crate::fixtures::{input_error, port_to, run_finished, scenario, wires};

/// The NVLink of these tests: a rate and latency other than the rails' (100 Gb/s, 1 us),
/// so that a step on the wrong links shows.
const NV: Rate = Rate::gbps(200);
const NV_D: Time = Time::from_ns(500);

/// 2 servers of 4 GPUs, one leaf per rail, 2 spines: hosts 0..8, leaves 8..12, spines 12 and
/// 13, the NVLink switches 14 (server 0) and 15 (server 1).
fn fabric() -> String {
    "[topology]\nkind = \"rail\"\nservers = 2\ngpus_per_server = 4\nspines = 2\nhost_rate = \"100Gbps\"\n\
     fabric_rate = \"100Gbps\"\nnvlink_rate = \"200Gbps\"\nnvlink_latency = \"500ns\"\n\
     [fabric]\nack_interval = 1000000\n"
        .to_string()
}

fn ring(ranks: &str, size: u64) -> String {
    format!(
        "{}[[collective]]\nname = \"r\"\nkind = \"allreduce\"\nranks = {ranks}\nsize = {size}\nchunk = \"1MiB\"\n",
        fabric()
    )
}

fn run(toml: &str) -> (Results, Topology) {
    let s = scenario(toml, "nvlink.toml");
    let topo = s.topology.clone();
    (run_finished(s), topo)
}

fn sent(r: &Results, t: &Topology, a: u32, b: u32) -> u64 {
    r.ports[port_to(t, NodeId(a), NodeId(b)).idx()].tx_bytes
}

fn wire(b: u64) -> u64 {
    wires(b).iter().sum()
}

#[test]
fn every_gpu_has_a_second_port_to_its_servers_nvlink_switch() {
    let t = scenario(&fabric(), "nvlink.toml").topology;
    assert_eq!(t.len(), 8 + 4 + 2 + 2);
    for h in 0..8u32 {
        let ports = &t.nodes[h as usize].ports;
        assert_eq!(ports.len(), 2, "host {h}");
        assert_eq!(t.ports[ports[0].idx()].peer_node, NodeId(8 + h % 4), "rail first");
        assert_eq!(t.ports[ports[1].idx()].peer_node, NodeId(14 + h / 4));
        assert_eq!((t.port_rate(ports[1]), t.port_delay(ports[1])), (NV, NV_D));
    }
    assert!(t.egress_by_destination);
}

#[test]
fn a_ring_inside_one_server_takes_the_closed_form_at_the_nvlinks_rate() {
    // GPUs 0..3 of server 0: every hop is GPU -> NVLink switch -> GPU, a star at 200 Gb/s
    // and 500 ns. Ring AllReduce: T = 2(n-1)·A(S/n) + (2n-3)·tx(ack).
    let (n, size) = (4u64, 600_000u64);
    let (r, t) = run(&ring("[0, 1, 2, 3]", size));
    let rec = &r.collectives[0];
    let steps = 2 * (n - 1);
    let ack = NV.tx_time(SimConfig::default().ack_bytes as u64);
    let a = crate::fixtures::arrival(size / n, NV, NV_D);
    assert_eq!(rec.end.unwrap() - rec.start, Time(steps * a.0 + (steps - 1) * ack.0));
    // Nothing took the rails.
    for h in 0..4 {
        assert_eq!(sent(&r, &t, h, 8 + h), 0, "host {h}'s rail NIC");
    }
}

#[test]
fn a_ring_across_servers_takes_nvlink_inside_each_and_the_rails_between() {
    // Ranks in host order: 0 -> 1 -> 2 -> 3 and 4 -> 5 -> 6 -> 7 inside the servers, 3 -> 4
    // and 7 -> 0 between them (GPU 3 to GPU 0: through a spine). Each rank sends 2(n-1)
    // messages of S/n to its successor and one ACK per message to its predecessor.
    let (n, size) = (8u64, 800_000u64);
    let (r, t) = run(&ring("{ hosts = \"0..7\" }", size));
    assert!(r.collectives[0].end.is_some());
    let (data, acks) = (2 * (n - 1) * wire(size / n), 2 * (n - 1) * SimConfig::default().ack_bytes as u64);
    for h in 0..8u32 {
        let (rail, nvlink) = (sent(&r, &t, h, 8 + h % 4), sent(&r, &t, h, 14 + h / 4));
        let expect = match h % 4 {
            0 => (acks, data), // data to GPU 1, ACKs to the other server's GPU 3
            3 => (data, acks), // data to the other server's GPU 0, ACKs to GPU 2
            _ => (0, data + acks),
        };
        assert_eq!((rail, nvlink), expect, "host {h}: (rail, nvlink) bytes");
    }
}

#[test]
fn nvlink_gives_the_same_outputs_at_1_2_and_4_threads() {
    let toml = format!("{}cc = \"dcqcn\"\n{}", fabric(), &ring("{ hosts = \"0..7\" }", 1 << 19)[fabric().len()..]);
    let (stop, r) = crate::parallel_outputs::same_for_1_2_4_threads("nvlink", &toml);
    assert_eq!(stop, rdmalab::sim::StopReason::Finished);
    assert!(r.collectives[0].end.is_some());
}

#[test]
fn nvlink_keys_come_together() {
    let base = "[topology]\nkind = \"rail\"\nservers = 2\ngpus_per_server = 4\nspines = 2\n";
    let e = input_error(&format!("{base}nvlink_rate = \"900Gbps\"\n"));
    assert!(e.contains("topology.nvlink_latency") && e.contains("required"), "{e}");
    let e = input_error(&format!("{base}nvlink_latency = \"1us\"\n"));
    assert!(e.contains("topology.nvlink_rate") && e.contains("required"), "{e}");
    let e = input_error(&format!("{base}nvlink_rate = \"fast\"\nnvlink_latency = \"1us\"\n"));
    assert!(e.contains("topology.nvlink_rate"), "{e}");
}

#[test]
fn multipath_on_nvlink_hosts_is_refused_at_its_entry() {
    // Its timers would kick a host's first NIC only: refused, as docs/collectives.md says,
    // naming the traffic entry's line; without NVLink the same entry is accepted.
    let mp = "[[traffic]]\nkind = \"multipath\"\nqps = 2\nchunk_size = 16000\nmessages = [{ src = 0, dst = 5, size = 100000 }]\n";
    let toml = format!("{}{mp}", fabric());
    let e = input_error(&toml);
    let line = toml.lines().position(|l| l.contains("\"multipath\"")).unwrap() + 1;
    assert!(e.starts_with(&format!("bad.toml:{line}: field `traffic[0].kind`")) && e.contains("NVLink"), "{e}");
    let plain = fabric().replace("nvlink_rate = \"200Gbps\"\nnvlink_latency = \"500ns\"\n", "");
    scenario(&format!("{plain}{mp}"), "ok.toml");
}

#[test]
fn conga_and_conweave_on_nvlink_hosts_are_refused_naming_nvlink() {
    // Both keep one leaf per host; a GPU with NVLink also links to its server's NVLink
    // switch. The refusal names NVLink, not "host 0 is not on one leaf"; without NVLink the
    // same scenario is accepted.
    for scheme in ["conga", "conweave"] {
        let toml = ring("{ hosts = \"0..7\" }", 1 << 20)
            .replace("[fabric]\n", &format!("[fabric]\npath_selection = \"{scheme}\"\n"));
        let e = input_error(&toml);
        assert!(e.contains("fabric.path_selection") && e.contains("NVLink") && e.contains("nvlink_rate"), "{e}");
        let plain = toml.replace("nvlink_rate = \"200Gbps\"\nnvlink_latency = \"500ns\"\n", "");
        scenario(&plain, "ok.toml");
    }
}
