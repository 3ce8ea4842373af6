//! `[fabric]`: fabric and RNIC settings, checked and turned into a [`SimConfig`].

use std::path::Path;

use serde::Deserialize;

mod cc_params;
mod ib;
mod iofd;
mod irn;
mod lb;
mod pfc_pause;
mod pfc_watchdog;
mod rccc;
mod switch_model;
mod trimming;
mod uet;

use super::{classes, field_time, positive_time, positive_time_or, sample_interval};
use crate::config::{Scenario, SimConfig, WindowConfig};
use crate::error::{Error, Result};
use crate::units::TimingModel;

/// Every `fabric.cc` name: the algorithms', then RCCC's alone and beside NSCC.
const CC_KEY_NAMES: &[&str] =
    &["none", "dcqcn", "hpcc", "timely", "dctcp", "blitz", "ib", "swift", "nscc", "rccc", "nscc+rccc"];

/// Fabric and RNIC settings (defaults as in the reference's configs).
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FabricSpec {
    /// `exact` (default), in picoseconds, or `ns3` (the reference's truncated nanoseconds).
    pub timing: Option<TimingModel>,
    /// Payload bytes per packet (default 1000; 2048 with `link_layer = "infiniband"`).
    pub mtu: Option<u32>,
    /// PFC on (true, default) or drop on overflow (false).
    pub lossless: Option<bool>,
    /// Shared buffer per switch in MiB (default 32).
    pub buffer_mb: Option<f64>,
    /// ECN marking on (default true).
    pub ecn: Option<bool>,
    /// ACKs in the strict-priority class (default true).
    pub ack_high_prio: Option<bool>,
    /// ACK every N packets (default 1).
    pub ack_interval: Option<u32>,
    /// Retransmission timeout (default `"1ms"`; `"none"` to disable).
    pub rto: Option<String>,
    /// Go-back-N: at most one NACK per expected sequence within this interval (default 500 µs,
    /// the reference's; ConWeave's artifact has 4 µs, `rdma-hw.cc`'s `NACKGenerationInterval`).
    pub nack_interval: Option<String>,
    /// Go-back-N rounds without progress before a WR fails (absent: unlimited).
    pub retry_limit: Option<u32>,
    /// `go_back_n` (default) or `irn` (`scenario::irn`).
    pub loss_recovery: Option<String>,
    /// IRN's timeouts and BDP-FC cap (`[fabric.irn]`; absent: IRN's defaults).
    pub irn: Option<irn::IrnSpec>,
    /// The receiving NIC sends a CNP on an out-of-order packet (default false).
    pub cnp_on_ooo: Option<bool>,
    /// The Ultra Ethernet transport's ACK coalescing, timeout, tracked window and entropy
    /// (`[fabric.uet]`, `scenario::fabric::uet`; absent: its defaults).
    pub uet: Option<uet::UetSpec>,
    /// `ecmp` (default), `source_ip` (Virtuoso's rule: hop = alias index mod n), a switch-side
    /// balancer: `spray`, `drill`, `letflow`, `conga`, `conweave` (`fabric::lb`), or the
    /// entropy spraying of UET packets under the switches' ECMP: `ev_spray`, `ev_cycle`,
    /// `ev_bitmap`, `reps` (these act on `transport = "uet"` traffic only: a run with none
    /// gets a warning).
    pub path_selection: Option<crate::topology::routing::PathSelection>,
    /// Congestion control (default `none`): `none`, `dcqcn`, `hpcc`, `timely`, `dctcp`, `blitz`
    /// (DASR at the receiver) or `ib` (InfiniBand CC), with run.py's parameters (`hpcc` also
    /// turns on its rate-scaled window unless `window` is given), or a window algorithm,
    /// `swift` or `nscc` (docs/cc-window.md), with htsim's; on UET flows, the receiver's
    /// credit alone, `rccc`, or beside NSCC's window, `nscc+rccc` (docs/rccc.md).
    #[schemars(extend("enum" = CC_KEY_NAMES))]
    pub cc: Option<String>,
    /// Which QPs share a congestion-control state: `per_qp` (default), `per_destination`,
    /// `per_pair`, `per_destination_unsplit`, `per_sl` (one state per sending NIC and service
    /// level: InfiniBand CC's SL mode).
    pub granularity: Option<crate::cc::Granularity>,
    /// Parameters of the congestion control, named as the reference's config keys in lower
    /// case (`ewma_gain`, `rate_ai`, `rp_timer`, `u_target`, ...; Swift's `swift_*` and NSCC's
    /// `nscc_*`, docs/cc-window.md); the keys depend on `cc` (absent: the reference's values).
    #[schemars(with = "Option<std::collections::BTreeMap<String, serde_json::Value>>")]
    pub cc_params: Option<cc_params::CcParamTable>,
    /// At most one CNP per QP per this interval at the receiver (absent: every marked
    /// packet's ACK carries one, as in the reference).
    pub cnp_interval: Option<String>,
    /// Window limiting at one BDP (absent: on under `hpcc`, off otherwise).
    pub window: Option<bool>,
    /// QP-context cache entries per NIC (absent: not modelled).
    pub qp_cache_entries: Option<u32>,
    /// QP-context miss penalty (default `"500ns"`). Refused without `qp_cache_entries`.
    pub qp_cache_miss_penalty: Option<String>,
    /// `parallel` (default) or `serial` context fetches (the knee of the DRUM paper's Fig. 2c;
    /// refused without `qp_cache_entries`).
    pub qp_cache_fetch: Option<crate::rnic::FetchMode>,
    /// Sample switch queue lengths at this interval (absent: not sampled).
    pub queue_sample_interval: Option<String>,
    /// Sample every active QP's rate and delivered throughput at this interval (absent: not
    /// sampled).
    pub rate_sample_interval: Option<String>,
    /// ECN Kmin in bytes on every port (absent: the per-rate value).
    pub ecn_kmin: Option<u64>,
    /// ECN Kmax in bytes on every port (absent: the per-rate value).
    pub ecn_kmax: Option<u64>,
    /// ECN Pmax on every port, 0 to 1 (absent: the per-rate value).
    pub ecn_pmax: Option<f64>,
    /// A shared congestion state outlives its last QP this long (default `"0ns"`).
    pub cc_state_linger: Option<String>,
    /// Tenant isolation: `none` (default) or `tenant`.
    pub defense: Option<String>,
    /// The tenant defense's budget of line-rate starts, as a fraction of the NIC rate
    /// (default 0.05; 0 = no line-rate starts).
    pub defense_start_fraction: Option<f64>,
    /// A cycle of switch ports paused this long is a PFC deadlock (default `"1ms"`).
    pub deadlock_timeout: Option<String>,
    /// `stop` (default) ends the run at a PFC deadlock; `continue` counts it and goes on.
    pub on_deadlock: Option<crate::config::OnDeadlock>,
    /// Record the bytes every port sends per this interval (link utilisation, `res.links`;
    /// absent: not sampled).
    pub link_sample_interval: Option<String>,
    /// Per-packet loss probability of every link (default 0; `[[links]]` overrides one link).
    pub error_rate: Option<f64>,
    /// Time from a link going down or up to the new routes (default 0, as the reference).
    pub reroute_delay: Option<String>,
    /// In-order flow deflection at switches (Blitz's IOFD); absent = off.
    pub iofd: Option<iofd::IofdSpec>,
    /// Switch-side balancers' parameters (`[fabric.lb]`; absent: their defaults); with ECMP,
    /// turns on `balance.parquet`.
    pub lb: Option<lb::LbSpec>,
    /// Receiver-credit congestion control's initial credit and grant size (`[fabric.rccc]`,
    /// with `cc = "rccc"` or `"nscc+rccc"`; absent: its defaults).
    pub rccc: Option<rccc::RcccSpec>,
    /// The switches' PFC watchdog (`[fabric.pfc_watchdog]`); absent = off. Refused under
    /// `link_layer = "infiniband"` and without PFC (`lossless = false` and no class table,
    /// or a class table with no class `pfc = true`).
    pub pfc_watchdog: Option<pfc_watchdog::PfcWatchdogSpec>,
    /// Switches trim UET data packets to their headers (`[fabric.trimming]`); absent = off.
    pub trimming: Option<trimming::TrimmingSpec>,
    /// PAUSE frames with a pause time (`[fabric.pfc_pause]`); absent = until RESUME. Refused
    /// under `link_layer = "infiniband"` and without PFC (`lossless = false` and no class
    /// table, or a class table with no class `pfc = true`).
    pub pfc_pause: Option<pfc_pause::PfcPauseSpec>,
    /// Traffic classes (`[[fabric.classes]]`): per-class scheduling, PFC and ECN.
    #[serde(default)]
    pub classes: Vec<classes::ClassSpec>,
    /// `roce` (default) or `infiniband` (`scenario::ib`).
    pub link_layer: Option<crate::fabric::LinkLayer>,
    /// InfiniBand: input buffer per port and VL, bytes (default 32768).
    pub ib_vl_buffer: Option<u64>,
    /// `fifo` (default, but `input_fair` under `link_layer = "infiniband"`) or `input_fair`:
    /// deficit round robin among a switch egress's input ports (`fabric::arbitration`).
    pub egress_arbitration: Option<crate::fabric::EgressArbitration>,
    /// `qp` (default) or `tenant`: how each NIC shares its data turns (`rnic::tenant_rr`).
    pub nic_arbitration: Option<crate::rnic::NicArbitration>,
    /// `shared` (default), `per_port` (static buffers per egress port) or `egress_dynamic` (a
    /// pool with a dynamic threshold per egress port; `fabric::buffer_model`).
    pub buffer_model: Option<crate::fabric::BufferModel>,
    /// KiB each egress port owns under `per_port` (absent: `buffer_mb` split among the ports).
    pub port_buffer_kb: Option<f64>,
    /// Under `egress_dynamic`: a port may hold `dt_alpha` times the pool's free bytes (default 1).
    pub dt_alpha: Option<f64>,
    /// PFC headroom of every switch ingress port, KiB (absent: derived from each port's
    /// rate, delay and the MTU; `fabric::mmu::headroom_needed`).
    pub pfc_headroom_kb: Option<f64>,
}

impl FabricSpec {
    pub(super) fn build(&self, file: &Path, seed: u64, stop: Option<&str>) -> Result<SimConfig> {
        let mut c = SimConfig { seed, ..SimConfig::default() };
        let f = |name: &str| format!("fabric.{name}");
        if let Some(s) = stop {
            c.stop_time = field_time(file, "stop_time", s)?;
        }
        if let Some(t) = self.timing {
            c.timing = t;
        }
        if let Some(m) = self.mtu {
            if m == 0 {
                return Err(Error::input(file, 0, f("mtu"), "must be at least 1 byte"));
            }
            c.mtu = m;
        }
        if let Some(l) = self.lossless {
            c.lossless = l;
        }
        if let Some(mb) = self.buffer_mb {
            if !(mb.is_finite() && mb > 0.0) {
                return Err(Error::input(file, 0, f("buffer_mb"), "must be a positive number of MiB"));
            }
            c.buffer_bytes = (mb * 1024.0 * 1024.0) as u64;
        }
        if self.ecn == Some(false) {
            c.ecn = None;
        }
        if let Some(a) = self.ack_high_prio {
            c.ack_high_prio = a;
        }
        if let Some(n) = self.ack_interval {
            if n == 0 {
                return Err(Error::input(file, 0, f("ack_interval"), "must be at least 1"));
            }
            c.ack_interval = n;
        }
        if let Some(r) = &self.nack_interval {
            c.nack_interval = positive_time(file, &f("nack_interval"), r)?;
        }
        if let Some(r) = &self.rto {
            c.rto = if r == "none" { None } else { Some(positive_time_or(file, &f("rto"), r, Some("none"))?) };
        }
        if let Some(p) = self.path_selection {
            c.path_selection = p;
        }
        if let Some(n) = self.retry_limit {
            if n == 0 {
                let m = "must be at least 1 go-back-N round (leave it out for no limit)";
                return Err(Error::input(file, 0, f("retry_limit"), m));
            }
            c.retry_limit = Some(n);
        }
        let mut with_rccc = false;
        if let Some(cc) = &self.cc {
            let (cc, r) = rccc::split_cc(cc, file)?;
            with_rccc = r;
            c.cc = crate::cc::CcConfig::from_name(cc).map_err(|m| Error::input(file, 0, f("cc"), m))?;
        }
        if let Some(table) = &self.cc_params {
            cc_params::apply(&mut c.cc, table, file)?;
        }
        if let Some(g) = self.granularity {
            c.granularity = g;
        }
        if c.cc.fecn().is_some() {
            // InfiniBand CC's switches mark FECN (annex A10), not RED ECN.
            if self.ecn == Some(true) {
                return Err(Error::input(file, 0, f("ecn"), "InfiniBand congestion control marks FECN, not ECN"));
            }
            c.ecn = None;
        }
        if let Some(d) = c.cc.dasr() {
            // Blame the field the user wrote: the count when given, else the granularity.
            let count_given = self.cc_params.as_ref().is_some_and(|t| t.contains_key("dasr_count"));
            let field = if count_given || self.granularity.is_none() { "cc_params.dasr_count" } else { "granularity" };
            crate::cc::dasr::check_granularity(d.count, c.granularity)
                .map_err(|m| Error::input(file, 0, f(field), m))?;
        }
        if let Some(s) = &self.cnp_interval {
            c.cnp_interval = Some(field_time(file, &f("cnp_interval"), s)?);
        }
        let hpcc = matches!(c.cc, crate::cc::CcConfig::Hpcc(_));
        match self.window {
            Some(true) => c.window = WindowConfig { enabled: true, variable: hpcc, global: true },
            None if hpcc => c.window = WindowConfig { enabled: true, variable: true, global: true },
            _ => {}
        }
        if let Some(n) = self.qp_cache_entries {
            let pen = self.qp_cache_miss_penalty.as_deref().unwrap_or("500ns");
            let pen = field_time(file, &f("qp_cache_miss_penalty"), pen)?;
            let fetch = self.qp_cache_fetch.unwrap_or_default();
            c.qp_cache = Some(crate::rnic::QpCacheConfig { entries: n, miss_penalty_ns: pen.ns(), fetch });
        } else if self.qp_cache_fetch.is_some() {
            return Err(Error::input(file, 0, f("qp_cache_fetch"), "needs `qp_cache_entries` (no cache is modelled)"));
        } else if self.qp_cache_miss_penalty.is_some() {
            let m = "needs `qp_cache_entries` (no cache is modelled, so no lookup misses)";
            return Err(Error::input(file, 0, f("qp_cache_miss_penalty"), m));
        }
        if let Some(s) = &self.queue_sample_interval {
            c.queue_sample_interval = Some(sample_interval(file, &f("queue_sample_interval"), s)?);
        }
        if let Some(s) = &self.rate_sample_interval {
            c.rate_sample_interval = Some(sample_interval(file, &f("rate_sample_interval"), s)?);
        }
        if let Some(s) = &self.cc_state_linger {
            c.cc_state_linger = field_time(file, &f("cc_state_linger"), s)?;
        }
        if let Some(d) = &self.defense {
            c.defense = match d.as_str() {
                "none" => crate::tenancy::Defense::None,
                "tenant" => crate::tenancy::Defense::Tenant,
                other => {
                    return Err(Error::input(
                        file,
                        0,
                        f("defense"),
                        format!("unknown defense `{other}` (known: none, tenant)"),
                    ))
                }
            };
        }
        if matches!(c.cc, crate::cc::CcConfig::Blitz(_)) && c.defense != crate::tenancy::Defense::None {
            // DASR already apportions each receiver's rate; stacking the tenant defense on it
            // would need a joint rule neither paper gives.
            let msg = "does not compose with `fabric.cc = \"blitz\"` (Blitz apportions rates at the receiver; \
                       use cc = \"dcqcn\" with the defense, or blitz with defense = \"none\")";
            return Err(Error::input(file, 0, f("defense"), msg));
        }
        if let Some(x) = self.defense_start_fraction {
            if !(0.0..=1.0).contains(&x) {
                return Err(Error::input(file, 0, f("defense_start_fraction"), format!("must be in [0, 1], got {x}")));
            }
            c.defense_params.start_fraction = x;
        }
        self.apply_ecn_overrides(file, &mut c)?;
        if let Some(s) = &self.deadlock_timeout {
            c.deadlock_timeout = positive_time(file, &f("deadlock_timeout"), s)?;
        }
        if let Some(o) = self.on_deadlock {
            c.on_deadlock = o;
        }
        if let Some(s) = &self.link_sample_interval {
            c.link_sample_interval = Some(sample_interval(file, &f("link_sample_interval"), s)?);
        }
        if let Some(s) = &self.reroute_delay {
            c.reroute_delay = field_time(file, &f("reroute_delay"), s)?;
        }
        if let Some(i) = &self.iofd {
            c.iofd = Some(i.build(file)?);
        }
        let (recovery, irn) = (self.loss_recovery.as_deref(), self.irn.as_ref());
        irn::apply(recovery, irn, self.cnp_on_ooo, self.rto.is_some(), file, &mut c)?;
        uet::apply(self.uet.as_ref(), file, &mut c)?;
        rccc::apply(with_rccc, self.rccc.as_ref(), file, &mut c)?;
        if let Some(l) = &self.lb {
            c.lb = l.build(file)?;
        }
        if let Some(t) = &self.trimming {
            c.trimming = Some(t.build(c.header_bytes, c.data_wire(c.mtu), file)?);
            if let crate::cc::CcConfig::Nscc(p) = &mut c.cc {
                p.trimming = true; // NSCC's target is 3/4 of the network RTT on a trimming fabric
            }
        }
        if let Some(w) = &self.pfc_watchdog {
            c.pfc_watchdog = Some(w.build(file)?);
        }
        if let Some(p) = &self.pfc_pause {
            c.pfc_pause = Some(p.build(file)?);
        }
        c.classes = classes::build(&self.classes, &c, file)?;
        // After every other fabric key: the link layer, then the switch model.
        ib::apply(self, file, &mut c)?;
        switch_model::apply(self, file, &mut c)?;
        pfc_watchdog::check_pfc_on(&c, file)?;
        pfc_pause::check_pfc_on(&c, file)?;
        Ok(c)
    }

    /// [`FabricSpec::build`], then what needs the topology: `fabric.uet.rto = "auto"` from
    /// its host rate (`uet::auto_rto`).
    pub(super) fn build_for(
        &self,
        topology: &crate::topology::Topology,
        file: &Path,
        seed: u64,
        stop: Option<&str>,
    ) -> Result<SimConfig> {
        let mut c = self.build(file, seed, stop)?;
        uet::auto_rto(self.uet.as_ref(), topology, file, &mut c)?;
        Ok(c)
    }

    /// The warnings of fabric keys that the scenario's traffic leaves with nothing to do.
    pub(super) fn unused_keys(s: &Scenario) -> Option<String> {
        uet::unused_path_selection(s)
    }

    /// The fabric mechanisms' checks against what the rest of the scenario built (flows,
    /// topology, applications). A mechanism whose section is under `[fabric]` adds its own
    /// check here.
    pub(super) fn check_built(s: &Scenario, file: &Path) -> Result<()> {
        iofd::check_escape_class(&s.config, &s.flows, file)?;
        lb::check(&s.config, &s.topology, file)?;
        switch_model::check_port_capacity(&s.config, &s.topology, file)?;
        uet::check(s, file)?;
        rccc::check(s, file)?;
        irn::check_plain_flows(s, file)
    }

    /// `ecn_kmin`, `ecn_kmax`, `ecn_pmax`: forced on every port, checked against each other
    /// and against the per-rate values they leave in place.
    fn apply_ecn_overrides(&self, file: &Path, c: &mut SimConfig) -> Result<()> {
        let o = crate::fabric::ecn::EcnOverrides { kmin: self.ecn_kmin, kmax: self.ecn_kmax, pmax: self.ecn_pmax };
        if o == Default::default() {
            return Ok(());
        }
        let first = ["ecn_kmin", "ecn_kmax", "ecn_pmax"]
            .into_iter()
            .zip([o.kmin.is_some(), o.kmax.is_some(), o.pmax.is_some()])
            .find(|(_, set)| *set)
            .map_or("ecn_kmin", |(n, _)| n);
        let Some(ecn) = c.ecn.take() else {
            return Err(Error::input(file, 0, format!("fabric.{first}"), "ECN marking is off (`ecn = false`)"));
        };
        if let Some(p) = o.pmax {
            if !(0.0..=1.0).contains(&p) {
                return Err(Error::input(file, 0, "fabric.ecn_pmax", format!("must be in [0, 1], got {p}")));
            }
        }
        let ecn = ecn.with_overrides(o);
        if let Some((rate, p)) = ecn.by_rate.iter().find(|(_, p)| p.kmin > p.kmax) {
            let field = if o.kmin.is_some() { "fabric.ecn_kmin" } else { "fabric.ecn_kmax" };
            let msg = format!("Kmin {} > Kmax {} (at {rate})", p.kmin, p.kmax);
            return Err(Error::input(file, 0, field, msg));
        }
        c.ecn = Some(ecn);
        Ok(())
    }
}
