//! Optional mechanisms of the fabric and the RNIC, each off unless the scenario asks for it:
//! Blitz's DASR receiver, in-order flow deflection, the tenant defense, the retry limit, IRN's
//! loss recovery, link failures, DCQCN's byte counter and receive queues with RNR NAKs.
//! A run without one pays at most a flag test per packet for it (see ARCHITECTURE.md,
//! "Hooks"). Each hook is a function handed the state it touches, not the simulation; what
//! only the simulator can carry out (a drop, a PFC frame, a switch admission, a completion)
//! stays with the simulator's own handlers.

pub(crate) mod actions;
mod checks;
pub(crate) mod conweave;
pub(crate) mod dasr;
pub(crate) mod dcqcn_bytes;
pub(crate) mod dcqcn_checks;
pub(crate) mod dcqcn_grids;
pub(crate) mod dcqcn_timers;
pub(crate) mod deferred_dequeues;
pub mod failures;
pub(crate) mod ib;
pub(crate) mod ibcc;
pub(crate) mod iofd;
pub(crate) mod irn;
mod lb_tables;
pub(crate) mod pfc_pause;
pub(crate) mod pfc_watchdog;
pub(crate) mod port_buffers;
pub(crate) mod rccc;
mod recv_processing;
pub(crate) mod retry;
pub(crate) mod rnr;
pub(crate) mod tenancy;
pub(crate) mod transport;
pub(crate) mod trimming;
pub(crate) mod uet;

use crate::config::sim_config::PfcWatchdogAction;
use crate::config::SimConfig;
use crate::engine::{stream, Rng, StreamKind};
use crate::error::{Error, Result};
use crate::fabric::PortState;
use crate::stats::table::{Table, TableSchema};
use crate::stats::NamedCounts;
use crate::topology::Topology;
use crate::workload::FlowSpec;

/// Every optional mechanism's state in one place: what `Simulation` holds for the hooks of
/// ARCHITECTURE.md's table, each `None` (or empty, or false) when the scenario does not ask
/// for it, so that a run without it pays one test at its hook. Each piece belongs to one
/// node (a switch's, a port's, a host's), as the parallel engine requires.
#[derive(Debug)]
pub(crate) struct Mechanisms {
    /// Static per-port buffers per switch (`fabric.buffer_model = "per_port"`), used in
    /// place of the shared MMUs; `None`: the shared MMU (one test per admission and release).
    pub port_buffers: Option<Box<[crate::fabric::buffer_model::PortBuffers]>>,
    /// Per port: the error stream of a link with `error_rate` > 0 (`None`: no errors).
    pub error_rngs: Vec<Option<Rng>>,
    /// Per receiving NIC: payload delivered per tenant over time.
    pub meters: Vec<crate::tenancy::TenantMeter>,
    /// Per sending NIC, per tenant: the defense's budget of line-rate starts.
    pub start_budgets: Vec<Vec<crate::tenancy::StartBudget>>,
    /// Tenant names, by index.
    pub tenant_names: Vec<String>,
    /// Blitz's DASR receivers (`None` unless `cc = "blitz"`: no state, one test per packet).
    pub dasr: Option<Box<crate::cc::dasr::DasrReceivers>>,
    /// Switches do not ECN-mark at host-facing ports (Blitz with `dasr_edge_ecn = false`).
    pub no_edge_ecn: bool,
    /// InfiniBand CC's FECN marking (`None` unless it runs; tested only where RED ECN is off).
    pub fecn: Option<Box<crate::fabric::fecn::FecnMarker>>,
    /// In-order flow deflection (`None` unless `[fabric.iofd]`: one test per packet).
    pub iofd: Option<Box<crate::fabric::deflection::Iofd>>,
    /// InfiniBand's credits per port and VL (`None` on RoCE: one test per transmission).
    pub ib: Option<Box<ib::IbLinks>>,
    /// IRN's loss recovery (`None` under go-back-N: one test per packet sent and per ACK).
    pub irn: Option<Box<crate::rnic::IrnTable>>,
    /// The UET connections' state (`rnic::uet`): empty until a UET QP opens; reached only
    /// from a UET QP's packets (one test of the QP's transport at each hook).
    pub uet: crate::rnic::uet::UetTable,
    /// Receiver-credit congestion control (`None` unless `cc = "rccc"` or `"nscc+rccc"`):
    /// each UET QP's credit at its sender, its grants at its receiver, each receiving NIC's
    /// pacer. Reached only from UET QPs' packets and its own timer.
    pub rccc: Option<Box<crate::cc::rccc::Rccc>>,
    /// Switch-side load balancing (`None` unless `path_selection` is one of `fabric::lb`'s
    /// schemes or `[fabric.lb]` is given: one test per switch hop).
    pub lb: Option<Box<crate::fabric::lb::LoadBalancer>>,
    /// Receive queues and RNR NAKs (`None` unless `[rnic] recv_queue_depth`: one test per
    /// RC data packet at the receiver, and per NACK at the sender).
    pub rnr: Option<Box<rnr::Rnr>>,
    /// The switches' PFC watchdog (`None` unless `[fabric.pfc_watchdog]`: one test per PFC
    /// frame at a switch port, and per packet at a special egress under `drop`).
    pub pfc_watchdog: Option<Box<pfc_watchdog::PfcWatchdog>>,
    /// PAUSE frames with a pause time (`None` unless `[fabric.pfc_pause]`: one test per PFC
    /// frame sent and per PFC frame arriving).
    pub pfc_pause: Option<Box<pfc_pause::PfcPause>>,
    /// Packet trimming at switches (`None` unless `[fabric.trimming]`: one test per switch
    /// admission).
    pub trimming: Option<Box<trimming::Trimming>>,
    /// `lb` or `iofd` is set: the switch's forwarding takes its hooked path.
    pub switch_hooks: bool,
    /// A mechanism may drop packets at a switch's egress before admission
    /// (`refuses_at_egress`, tested only on the out-of-line `special` egresses).
    pub egress_filter: bool,
    /// Per host, DCQCN's decrease checks that wait without events (`None` unless the run is
    /// DCQCN in the origin order with its shortcuts: one test per handler at a host).
    pub idle_checks: Option<Box<dcqcn_checks::IdleChecks>>,
    /// Switch dequeues that wait without `TxDone` events (`None` unless the run is in the
    /// origin order on one thread, without a trace or an egress mechanism: one test per
    /// handler and per switch packet that leaves others queued).
    pub deferred: Option<Box<deferred_dequeues::DeferredDequeues>>,
    /// When DCQCN's timers that are not events would run, for the watch and the clock
    /// (empty unless a shortcut of `dcqcn_timers` takes some out of the queue).
    pub dcqcn_grids: dcqcn_grids::TimerGrids,
    /// InfiniBand CC's, the link failures' and UC/UD's counts.
    pub ibcc: ibcc::Tally,
    pub failures: failures::Tally,
    pub transport: transport::Tally,
    /// Packets the mechanisms dropped on purpose (`Action::DiscardClass`, `refuses_at_egress`):
    /// among the core's drops, exempt from the lossless check.
    pub deliberate_drops: u64,
    /// What the hooks asked for and the carry-out has not yet applied
    /// (`sim/switch/carry_out.rs`); empty between events, its capacity kept.
    pub(in crate::sim) actions: Vec<actions::Action>,
}

/// What `Mechanisms::build` reads of the world being laid out.
pub(crate) struct Parts<'a> {
    pub topo: &'a Topology,
    pub cfg: &'a SimConfig,
    pub ports: &'a mut [PortState],
    pub mmus: &'a [crate::fabric::SwitchMmu],
    /// Each NIC's line rate, in NIC order.
    pub nic_rates: Vec<crate::units::Rate>,
    /// The path BDP IRN's window uses when `[fabric.irn] bdp` is not given.
    pub irn_path_bdp: &'a dyn Fn() -> u64,
    pub tenant_names: Vec<String>,
}

impl Mechanisms {
    /// The mechanisms' checks of a config against itself (DASR, InfiniBand CC, the
    /// switch-side balancers), each error naming its field.
    pub(crate) fn validate(cfg: &SimConfig) -> Result<()> {
        checks::dasr(cfg)?;
        checks::ib_cc(cfg)?;
        rnr::check(cfg)?;
        pfc_watchdog::check(cfg)?;
        checks::balancer(cfg)
    }

    /// The mechanisms' checks against the flows (IOFD's escape class must be free).
    pub(crate) fn validate_flows(cfg: &SimConfig, flows: &[FlowSpec]) -> Result<()> {
        if let Some(i) = &cfg.iofd {
            checks::iofd(i, flows)?;
            if let Some(m) = cfg.lossy_escape_class(i.escape_pg) {
                return Err(Error::scenario("iofd.escape_pg", m));
            }
        }
        Ok(())
    }

    /// Each port's link-error stream (`None` where the link has no errors), needed before
    /// the ports' roles are marked, so built apart from the rest.
    pub(crate) fn error_streams(topo: &Topology, cfg: &SimConfig) -> Vec<Option<Rng>> {
        (0..topo.ports.len())
            .map(|i| {
                let link = &topo.links[topo.ports[i].link.idx()];
                (link.error_rate > 0.0).then(|| stream(cfg.seed, StreamKind::LinkError, i as u64))
            })
            .collect()
    }

    /// Builds the state of every mechanism the config asks for.
    pub(crate) fn build(p: Parts<'_>, error_rngs: Vec<Option<Rng>>) -> Result<Mechanisms> {
        let Parts { topo, cfg, ports, mmus, nic_rates, irn_path_bdp, tenant_names } = p;
        let n_nics = nic_rates.len();
        let ib = ib::build(cfg, ports);
        let irn = cfg.irn.map(|c| {
            let path_bdp = if c.bdp.is_some() { 0 } else { irn_path_bdp() };
            Box::new(crate::rnic::IrnTable::new(c, c.window(path_bdp, cfg.mtu)))
        });
        let dasr = cfg.cc.dasr().map(|d| Box::new(crate::cc::dasr::DasrReceivers::new(*d, nic_rates.into_iter())));
        let port_buffers = port_buffers::build(topo, cfg, mmus);
        let iofd = cfg.iofd.map(|i| Box::new(iofd::build(i, topo, cfg, mmus.len())));
        let lb = build_balancer(topo, cfg)?;
        let fecn = cfg.cc.fecn().map(|f| Box::new(crate::fabric::fecn::FecnMarker::new(f, ports.len())));
        Ok(Mechanisms {
            port_buffers,
            error_rngs,
            meters: vec![Default::default(); n_nics],
            start_budgets: vec![Vec::new(); n_nics],
            tenant_names,
            dasr,
            no_edge_ecn: no_edge_ecn(cfg),
            fecn,
            switch_hooks: iofd.is_some() || lb.is_some(),
            iofd,
            ib,
            irn,
            uet: {
                let mut t = crate::rnic::uet::UetTable::new(cfg.uet);
                t.windowed = cfg.cc.windowed();
                t
            },
            rccc: cfg.rccc.map(|r| Box::new(crate::cc::rccc::Rccc::new(r, n_nics))),
            lb,
            rnr: cfg.rnr.map(|r| Box::new(rnr::Rnr::new(r, cfg.nack_interval))),
            pfc_watchdog: cfg.pfc_watchdog.map(|w| Box::new(pfc_watchdog::PfcWatchdog::new(w))),
            pfc_pause: cfg.pfc_pause.map(|p| Box::new(pfc_pause::PfcPause::new(p))),
            trimming: cfg.trimming.map(|t| Box::new(trimming::Trimming::new(t, ports.len()))),
            egress_filter: cfg.pfc_watchdog.is_some_and(|w| w.action == PfcWatchdogAction::Drop),
            deliberate_drops: 0,
            idle_checks: None,
            deferred: None,
            dcqcn_grids: dcqcn_grids::TimerGrids::for_config(&cfg.cc),
            ibcc: Default::default(),
            failures: Default::default(),
            transport: Default::default(),
            actions: Vec::new(),
        })
    }
}

/// Every mechanism table's schema, in the order runs emit them (the bindings hand these to
/// Python, which builds a run's empty frames from them). A mechanism with a table adds it here.
pub const TABLE_SCHEMAS: &[TableSchema] = &[lb_tables::BALANCE, lb_tables::REORDER, rnr::TABLE, pfc_watchdog::TABLE];

impl Mechanisms {
    /// False when a mechanism lets a lossless fabric drop at its buffers by design: ConWeave
    /// holding packets outside the buffer and admitting them only when released (the ns-3
    /// artifact's model, `conweave_admit_on_release`). The lossless check is then off.
    pub(crate) fn keeps_lossless(&self) -> bool {
        !self.lb.as_deref().is_some_and(|l| l.conweave_admits_on_release())
    }

    /// The counters (`counters`' names) that are a peak over nodes rather than a tally: a
    /// parallel run keeps the largest of its partitions' values, not their sum (each node,
    /// and so each peak, belongs to one partition).
    pub(crate) const PEAK_COUNTERS: &'static [&'static str] = &[rccc::PEAK_SENDERS];

    /// Every mechanism's counters by name, in a fixed order: the counts every run reports
    /// (zeros where a mechanism is off), then the conditional ones (ConWeave's causes) last,
    /// so that columns never move. A mechanism with counters adds its call here.
    pub(crate) fn counters(&self) -> NamedCounts {
        let mut c = NamedCounts::default();
        c.push("fecn_marks", self.ibcc.fecn_marks);
        c.push("becns", self.ibcc.becns);
        c.push("link_failures", self.failures.link_failures);
        c.push("reroutes", self.failures.reroutes);
        c.push("messages_lost", self.transport.messages_lost);
        lb_tables::iofd_counters(self.iofd.as_deref(), &mut c);
        lb_tables::balancer_counters(self.lb.as_deref(), &mut c);
        rnr::counters(self.rnr.as_deref(), &mut c);
        lb_tables::conweave_causes(self.lb.as_deref(), &mut c);
        pfc_watchdog::counters(self.pfc_watchdog.as_deref(), &mut c);
        pfc_pause::counters(self.pfc_pause.as_deref(), &mut c);
        trimming::counters(self.trimming.as_deref(), &mut c);
        rccc::counters(self.rccc.as_deref(), &mut c);
        c
    }

    /// Every table the run's mechanisms keep, in `TABLE_SCHEMAS`' order. A mechanism with a
    /// table adds its call here.
    pub(crate) fn tables(&self) -> Vec<Table> {
        let mut out = Vec::new();
        lb_tables::balancer_tables(self.lb.as_deref(), &mut out);
        rnr::tables(self.rnr.as_deref(), &mut out);
        pfc_watchdog::tables(self.pfc_watchdog.as_deref(), &mut out);
        debug_assert!(out.iter().all(|t| TABLE_SCHEMAS.iter().any(|s| s.matches(t))), "a table unlike its schema");
        out
    }
}

/// A mechanism's timer at a port (`Event::Mech`): each mechanism that needs one adds its
/// variant here and its arm in `on_timer`. Kept within 8 bytes, so the event stays small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The PFC watchdog's check of a switch port's queue (`pfc_watchdog::on_timer`).
    PfcWatchdog { port: crate::ids::PortId, class: u8 },
    /// A port holding its upstream paused sends its PAUSE again (`pfc_pause::on_refresh`).
    PauseRefresh { port: crate::ids::PortId, class: u8 },
    /// The pause a port's transmitter obeys runs out (`pfc_pause::on_expire`).
    PauseExpiry { port: crate::ids::PortId, class: u8 },
    /// An RCCC receiver's pacer grants its next credit; `port` is the receiving NIC's
    /// (`rccc::on_timer`).
    RcccGrant { port: crate::ids::PortId },
}

impl Timer {
    /// The port whose node the timer belongs to (that node orders it in a parallel run).
    pub(crate) fn port(self) -> crate::ids::PortId {
        match self {
            Timer::PfcWatchdog { port, .. }
            | Timer::PauseRefresh { port, .. }
            | Timer::PauseExpiry { port, .. }
            | Timer::RcccGrant { port } => port,
        }
    }
}

/// A mechanism's timer fired: its hook, appending to `m.actions`.
pub(in crate::sim) fn on_timer(m: &mut Mechanisms, view: &actions::SwitchView<'_>, t: Timer) {
    match t {
        Timer::PfcWatchdog { port, class } => {
            if let Some(w) = m.pfc_watchdog.as_deref_mut() {
                pfc_watchdog::on_timer(w, view, port, class, &mut m.actions);
            }
        }
        Timer::PauseRefresh { port, class } => {
            if let Some(p) = m.pfc_pause.as_deref_mut() {
                pfc_pause::on_refresh(p, view, port, class, &mut m.actions);
            }
        }
        Timer::PauseExpiry { port, class } => {
            if let Some(p) = m.pfc_pause.as_deref_mut() {
                pfc_pause::on_expire(p, view, port, class, &mut m.actions);
            }
        }
        Timer::RcccGrant { port } => {
            if let Some(r) = m.rccc.as_deref_mut() {
                rccc::on_timer(r, view, port, &mut m.actions);
            }
        }
    }
}

/// The mechanisms' filter at a switch egress, before admission (`egress_filter`): true when
/// one drops a packet of `class` bound for `egress` on purpose.
pub(in crate::sim) fn refuses_at_egress(m: &mut Mechanisms, egress: crate::ids::PortId, class: u8) -> bool {
    m.pfc_watchdog.as_deref_mut().is_some_and(|w| pfc_watchdog::refuses(w, egress, class))
}

/// Whether switch egresses take the out-of-line path with the mechanisms' egress hooks
/// (`PortState::special`): a class table, IOFD, Blitz's edge rule, the input-fair arbiter,
/// per-port buffers, a mechanism's egress filter, or trimming (its test in the admission is
/// compiled into the special path only).
pub(crate) fn special_egress(cfg: &SimConfig) -> bool {
    let input_fair = cfg.egress_arbitration == crate::fabric::EgressArbitration::InputFair;
    let watchdog_drops = cfg.pfc_watchdog.is_some_and(|w| w.action == PfcWatchdogAction::Drop);
    cfg.classes.is_some()
        || cfg.iofd.is_some()
        || no_edge_ecn(cfg)
        || input_fair
        || cfg.buffer_model.per_egress()
        || watchdog_drops
        || cfg.trimming.is_some()
}

/// Blitz with `dasr_edge_ecn = false`: switches leave host-facing ports unmarked.
pub(crate) fn no_edge_ecn(cfg: &SimConfig) -> bool {
    cfg.cc.dasr().is_some_and(|p| !p.edge_ecn)
}

/// The switch-side balancer when `path_selection` names one of `fabric::lb`'s schemes or
/// `[fabric.lb]` asks for the uplink balance under ECMP.
fn build_balancer(topo: &Topology, cfg: &SimConfig) -> Result<Option<Box<crate::fabric::lb::LoadBalancer>>> {
    use crate::fabric::lb::{is_switch_scheme, LoadBalancer};
    if !is_switch_scheme(cfg.path_selection) && !cfg.lb.enabled {
        return Ok(None);
    }
    let lb = LoadBalancer::new(cfg.path_selection, cfg.lb, topo, cfg.seed)
        .map_err(|m| Error::scenario("path_selection", m))?;
    Ok(Some(Box::new(lb)))
}
