//! Inputs that would exhaust the machine's memory or run for hours: refused before the run
//! with the estimate in the message, or accepted with a warning that names the field and
//! what it costs (`SimConfig::input_warnings`, printed before the run).
//!
//! The sampling estimate is a lower bound: it takes the run to last until the last flow,
//! message or application could end at line rate with nothing in its way, plus a round trip
//! over the shortest link for a flow's last ACK (or until
//! `stop_time`, if earlier); congestion only makes a run longer. The engine enforces the
//! same cap while it runs (`sim::observe::sampling`), for runs the bound underestimates.

use std::path::Path;

use super::host_apps::{AppSpec, DrumSpec, HostSpec};
use super::ScenarioSpec;
use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::ids::NodeId;
use crate::units::{Rate, Time};

/// Bytes the engine keeps per queue or link sample row: (time, port, bytes).
const PORT_ROW_BYTES: u64 = std::mem::size_of::<(Time, crate::ids::PortId, u64)>() as u64;
/// Bytes per rate sample row.
const RATE_ROW_BYTES: u64 = std::mem::size_of::<crate::stats::RateSample>() as u64;
/// The most ADMM history one DRUM control period may keep (one record per iteration).
const DRUM_HISTORY_MAX_BYTES: u64 = 1 << 30;
/// A tenant state with more members than this gets the pacing warning: each of its packets
/// re-times every member (docs/attacks.md measured 3.2x the wall time at 256 members).
const TENANT_MEMBERS_WARN: usize = 256;
/// Wire bytes over data bytes above which a multipath entry's chunking gets a warning.
const CHUNK_OVERHEAD_WARN: u64 = 2;
/// Bytes a collective's transfer costs while the run holds its schedule (the transfer, its
/// dependencies, its depth, the ranks' state and its record): 1 MiB in 1-byte chunks on 4
/// ranks, 6.3 M transfers, peaked at 1.5 GB.
const TRANSFER_BYTES: u128 = 240;
/// The most memory the collectives' schedules may take (the 1,024-rank ring of
/// `bench/scenarios/ring_allreduce_1k.toml`, 4.2 M transfers, needs about 1 GB).
const SCHEDULE_MAX_BYTES: u128 = 2 << 30;
/// The most data packets the collectives may send in a run without a stop time: the
/// 1,024-rank ring sends 536 M (4.3 G events, 4 to 6 minutes on 2 cores, docs/benchmarks.md).
const COLLECTIVE_MAX_PACKETS: u128 = 1 << 32;
/// The most transfers a run may cut into pieces smaller than a packet.
const SMALL_TRANSFERS_MAX: u128 = 1 << 20;
/// Events per data packet that benchmark ran (a fat tree, ACK per packet).
const EVENTS_PER_PACKET: u128 = 8;

/// Refuses what would exhaust memory; returns the warnings for what is only costly.
pub(super) fn check(spec: &ScenarioSpec, s: &Scenario, file: &Path) -> Result<Vec<String>> {
    let end = earliest_end(s);
    check_sampling(s, end, file)?;
    check_collectives(s, file)?;
    if let Some(d) = &spec.drum {
        check_drum_history(d, file)?;
    }
    let mut out = Vec::new();
    out.extend(unused_host_model(spec.host.as_ref(), spec.drum.as_ref(), &spec.app));
    out.extend(super::rnic::unused_rnr_keys(spec.rnic.as_ref()));
    out.extend(drum_steps(s));
    out.extend(multipath_costs(spec, s));
    out.extend(stop_before_every_message(s));
    out.extend(iofd_without_resequencing(s));
    out.extend(super::fabric::FabricSpec::unused_keys(s));
    out.extend(large_tenant_states(s));
    Ok(out)
}

/// Time to send `bytes` at `rate`, saturating instead of wrapping.
fn at_line_rate(rate: Rate, bytes: u64) -> Time {
    let ps = (bytes as u128 * 8_000_000_000_000).div_ceil(rate.0.max(1) as u128);
    Time(ps.min(u64::MAX as u128) as u64)
}

fn later(t: Time, d: Time) -> Time {
    Time(t.0.saturating_add(d.0))
}

/// The earliest the run can end: every flow, multipath message and finite application sent
/// at its NIC's line rate from its start; an application without `total_bytes` runs to the
/// stop time. Never past `stop_time`.
fn earliest_end(s: &Scenario) -> Time {
    let topo = &s.topology;
    let nic = |h: NodeId| if topo.is_host(h) { topo.nic_rate(h) } else { Rate(u64::MAX) };
    // A flow completes when its last ACK is back: at least one round trip over the
    // shortest link.
    let rtt = topo.links.iter().map(|l| l.delay).min().map_or(Time::ZERO, |d| Time(d.0.saturating_mul(2)));
    let mut end = Time::ZERO;
    for f in &s.flows {
        end = end.max(later(f.start, later(rtt, at_line_rate(nic(f.src), f.size))));
    }
    for mp in &s.multipath {
        for &(src, _, size, start) in &mp.messages {
            end = end.max(later(start, at_line_rate(nic(src), size)));
        }
    }
    if let Some(h) = &s.host_model {
        for a in &h.apps {
            let sent = a.total_bytes.map_or(Time::MAX, |b| at_line_rate(nic(a.host), b));
            end = end.max(later(a.start, sent));
        }
    }
    end.min(s.config.stop_time)
}

/// The sample rows the run takes at least, against `SimConfig::sample_max_bytes`; the field named is
/// the interval that costs the most.
fn check_sampling(s: &Scenario, end: Time, file: &Path) -> Result<()> {
    let c = &s.config;
    let topo = &s.topology;
    let switch_ports = topo.ports.iter().filter(|p| !topo.is_host(p.node)).count() as u64;
    let samples = |every: Option<Time>| every.map_or(0, |e| (end.0 / e.0.max(1)) as u128);
    let queue = samples(c.queue_sample_interval) * (switch_ports * PORT_ROW_BYTES) as u128;
    let link = samples(c.link_sample_interval) * (topo.ports.len() as u64 * PORT_ROW_BYTES) as u128;
    // Every flow is sampled at least while it could be sending at line rate.
    let rate = c.rate_sample_interval.map_or(0, |e| {
        let busy: u128 =
            s.flows.iter().map(|f| (at_line_rate(topo.nic_rate(f.src), f.size).0 / e.0.max(1)) as u128).sum();
        busy * RATE_ROW_BYTES as u128
    });
    let total = queue + link + rate;
    let cap = c.sample_max_bytes;
    if total <= cap as u128 {
        return Ok(());
    }
    let (field, every) = [
        (queue, "queue_sample_interval", c.queue_sample_interval),
        (link, "link_sample_interval", c.link_sample_interval),
        (rate, "rate_sample_interval", c.rate_sample_interval),
    ]
    .into_iter()
    .max_by_key(|(bytes, ..)| *bytes)
    .map(|(_, f, e)| (f, e.unwrap_or(Time(1))))
    .expect("three intervals");
    // Rows scale as 1/interval: the interval that would fit.
    let fits = (every.0 as u128 * total).div_ceil(cap as u128);
    let msg = format!(
        "sampling every {every} over the run (at least {end}: every flow, message and application at line \
         rate) keeps at least {total} bytes of samples ({}), over the cap of {cap} bytes ({}): use an \
         interval of at least {fits} ps, or a stop_time",
        human_bytes(total),
        human_bytes(cap as u128),
    );
    Err(Error::input(file, 0, format!("fabric.{field}"), msg))
}

fn human_bytes(b: u128) -> String {
    let gib = b as f64 / (1u64 << 30) as f64;
    if gib >= 1.0 {
        format!("{gib:.1} GiB")
    } else {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

/// A collective's transfers (from its closed form, before any is built) against the
/// schedule's memory, and its data packets against the run's length when nothing stops it.
fn check_collectives(s: &Scenario, file: &Path) -> Result<()> {
    let mtu = u128::from(s.config.mtu.max(1));
    let mut total = 0u128;
    for (i, c) in s.collectives.iter().enumerate() {
        let transfers = c.transfers_per_iteration() * u128::from(c.repeat);
        total += transfers;
        let n = c.ranks.len() as u128;
        // Bytes every rank sends together, per iteration: 2(n-1) x size for allreduce
        // (reduce, then gather), (n-1) x size for the others.
        let twice = u128::from(c.kind == crate::app::collective::Kind::Allreduce) + 1;
        let bytes = twice * (n - 1) * u128::from(c.size) * u128::from(c.repeat);
        let packets = bytes.div_ceil(mtu) + transfers;
        let memory = total * TRANSFER_BYTES;
        let what = format!(
            "{transfers} transfers ({} ranks, {} per rank, chunk {} B, {} channel(s), {} iteration(s)), \
             about {} for the schedule, {packets} data packets (about {} events)",
            n,
            c.size,
            c.chunk,
            c.channels,
            c.repeat,
            human_bytes(transfers * TRANSFER_BYTES),
            packets * EVENTS_PER_PACKET
        );
        let msg = if memory > SCHEDULE_MAX_BYTES {
            format!(
                "{what}: the collectives' schedules would take {}, over the cap of {}; use a smaller size, a \
                 larger chunk or fewer iterations",
                human_bytes(memory),
                human_bytes(SCHEDULE_MAX_BYTES)
            )
        } else if packets > COLLECTIVE_MAX_PACKETS && s.config.stop_time == Time::MAX {
            format!(
                "{what}: over the cap of {COLLECTIVE_MAX_PACKETS} data packets for a run without a stop_time; \
                 use a smaller size or fewer iterations, or set a stop_time"
            )
        } else if transfers > SMALL_TRANSFERS_MAX && bytes / transfers.max(1) < mtu {
            format!(
                "{what}: the chunk cuts the data into transfers of less than a packet (MTU {mtu} B) on average, \
                 over {SMALL_TRANSFERS_MAX} of them, each a WR, a completion and a record; use a chunk of at \
                 least the MTU"
            )
        } else {
            continue;
        };
        // The chunk is to blame when it is below the default and cuts the size into more
        // pieces than the default would.
        let field = if c.chunk < super::collective::DEFAULT_CHUNK { "chunk" } else { "size" };
        return Err(Error::input(file, 0, format!("collective[{i}].{field}"), msg));
    }
    Ok(())
}

/// One DRUM solve keeps a history record per ADMM iteration.
fn check_drum_history(d: &DrumSpec, file: &Path) -> Result<()> {
    let Some(n) = d.iterations else { return Ok(()) };
    let per = std::mem::size_of::<crate::drum::IterRecord>() as u64;
    let bytes = n as u64 * per;
    if bytes > DRUM_HISTORY_MAX_BYTES {
        let msg = format!(
            "{n} ADMM iterations per control period keep a history of {bytes} bytes ({per} per iteration, {}) \
             per solve, over the cap of {DRUM_HISTORY_MAX_BYTES} bytes (1 GiB); the seed paper runs 5 per period",
            human_bytes(bytes as u128)
        );
        return Err(Error::input(file, 0, "drum.iterations", msg));
    }
    Ok(())
}

/// ADMM steps the run makes: iterations x periods x DRUM hosts, when that is many.
fn drum_steps(s: &Scenario) -> Option<String> {
    let h = s.host_model.as_ref()?;
    if h.host.mechanism != crate::app::host_model::Mechanism::Drum || s.config.stop_time == Time::MAX {
        return None;
    }
    let hosts: std::collections::BTreeSet<_> = h.apps.iter().map(|a| a.host).collect();
    let periods = s.config.stop_time.0 / h.drum.period.0.max(1);
    let steps = h.drum.iterations as u128 * periods as u128 * hosts.len() as u128;
    (steps > 100_000_000).then(|| {
        format!(
            "drum.iterations = {} over {periods} control periods on {} host(s) makes {steps} ADMM steps: \
             expect a long run (the seed paper runs 5 per period)",
            h.drum.iterations,
            hosts.len()
        )
    })
}

/// `[host]` or `[drum]` without any `[[app]]`: the host model only drives applications.
fn unused_host_model(host: Option<&HostSpec>, drum: Option<&DrumSpec>, apps: &[AppSpec]) -> Option<String> {
    if !apps.is_empty() {
        return None;
    }
    let given: Vec<&str> = [("[host]", host.is_some()), ("[drum]", drum.is_some())]
        .into_iter()
        .filter_map(|(n, set)| set.then_some(n))
        .collect();
    (!given.is_empty()).then(|| {
        format!(
            "{} given without any [[app]]: the host model only drives closed-loop applications, so it is \
             not used (flows from [[traffic]] go straight to the NIC)",
            given.join(" and ")
        )
    })
}

/// Multipath entries whose QPs or chunk headers cost more than they carry.
fn multipath_costs(spec: &ScenarioSpec, s: &Scenario) -> Vec<String> {
    let mut out = Vec::new();
    for (i, mp) in s.multipath.iter().enumerate() {
        let c = &mp.config;
        if !matches!(c.split, crate::multipath::Split::Partition) {
            continue;
        }
        let at = traffic_index(spec, i);
        let chunks = mp.messages.iter().map(|m| m.2.div_ceil(c.chunk_size)).max().unwrap_or(0);
        if (c.qps as u64) > chunks {
            out.push(format!(
                "traffic[{at}].qps = {} but the largest message has {chunks} chunk(s): {} QPs per connection \
                 never carry data, and each is set up and torn down",
                c.qps,
                c.qps as u64 - chunks
            ));
        }
        let factor = c.chunk_size.saturating_add(c.chunk_header) / c.chunk_size;
        if factor >= CHUNK_OVERHEAD_WARN {
            out.push(format!(
                "traffic[{at}].chunk_size = {} with chunk_header = {}: each chunk puts {factor}x its data on the \
                 wire, and the run simulates every header byte",
                c.chunk_size, c.chunk_header
            ));
        }
    }
    out
}

/// The `[[traffic]]` index of the `i`-th multipath entry.
fn traffic_index(spec: &ScenarioSpec, i: usize) -> usize {
    let mut at = spec.traffic.iter().enumerate().filter(|(_, t)| matches!(t, super::TrafficSpec::Multipath(_)));
    at.nth(i).map_or(i, |(k, _)| k)
}

/// A stop time at or before every multipath message's post: none is sent.
fn stop_before_every_message(s: &Scenario) -> Option<String> {
    let first = s.multipath.iter().flat_map(|m| m.messages.iter().map(|x| x.3)).min()?;
    (s.config.stop_time <= first).then(|| {
        format!(
            "stop_time ({}) is at or before every multipath message's start (the first at {}): the run sends \
             none of them",
            s.config.stop_time, first
        )
    })
}

/// IOFD with no re-sequencing buffer: every deflected packet that overtakes is discarded
/// at the receiver and recovered by go-back-N, even on a lossless fabric.
fn iofd_without_resequencing(s: &Scenario) -> Option<String> {
    let i = s.config.iofd.as_ref()?;
    (i.resequence_bytes == 0).then(|| {
        "fabric.iofd.resequence_kb = 0: receivers keep no out-of-order packets, so every deflected packet \
         that arrives ahead of its turn is discarded and NACKed (go-back-N resends it and what follows), \
         even on a lossless fabric"
            .to_string()
    })
}

/// Under the tenant defense, each packet of a (host, tenant) state re-times all its
/// members: warn when a state is large.
fn large_tenant_states(s: &Scenario) -> Option<String> {
    if s.config.defense != crate::tenancy::Defense::Tenant {
        return None;
    }
    let mut members: std::collections::BTreeMap<(NodeId, u16), usize> = Default::default();
    let mut counted = vec![false; s.apps.len()];
    for f in &s.flows {
        *members.entry((f.src, f.tenant)).or_default() += match s.apps.get(f.app.idx()) {
            // An application's flows share its QPs: count those once, not its flows.
            Some(app) if !std::mem::replace(&mut counted[f.app.idx()], true) => app_qps(app),
            Some(_) => 0,
            None => 1,
        };
    }
    let (&(host, tenant), &n) = members.iter().max_by_key(|(_, n)| **n)?;
    (n > TENANT_MEMBERS_WARN).then(|| {
        let name = s.tenants.get(tenant as usize).map_or_else(|| tenant.to_string(), |t| t.clone());
        format!(
            "fabric.defense = \"tenant\": tenant `{name}` has {n} QPs on host {host}, and each of its packets \
             re-times every member (O(members) per packet, docs/attacks.md): expect about {n}x the work per \
             packet of a one-QP tenant (256 members measured 3.2x the wall time)"
        )
    })
}

/// The QPs an application keeps open together: a staggered transfer's slots, a shuffled-
/// overlay member's one QP per destination, a serial incast's aggregator one grant QP per
/// sender and each sender one.
fn app_qps(app: &crate::workload::attacks::HostApp) -> usize {
    use crate::workload::attacks::HostApp;
    match app {
        HostApp::Staggered(st) => st.qps as usize,
        HostApp::PairQps { planned, .. } => planned.len(),
        HostApp::GrantAggregator(g) => g.senders.len(),
        HostApp::GrantSender(_) => 1,
    }
}
