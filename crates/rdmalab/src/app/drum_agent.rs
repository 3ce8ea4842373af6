//! DRUM's per-host scheduler (the DRUM paper's §IV-A): the only software that posts WQEs and
//! polls completions on its host. Every control period it solves its host's row of (P):
//! exactly (`drum::exact`, the default `solve = "exact"`: where the paper's ADMM arrives
//! when it converges), or with `iterations` warm-started steps of the library's ADMM
//! (`drum::Admm`, `solve = "admm"`), and enforces the rates (the feasible recovery):
//!
//! - **release**: WQEs leave the per-application queues at total rate `Q` in
//!   work-conserving weighted fair order, weights `x̂_j` (stride scheduling over the
//!   backlogged applications; an application that was idle restarts at the current pass,
//!   so idling earns no credit);
//! - **polling**: one poller thread polls per-application completion rings back to back,
//!   choosing among non-empty rings by stride scheduling with weights `ẑ_j`;
//! - **active set**: the top-k rule of `drum::ActiveSet::top_k` (all applications when
//!   m ≤ k) picks who keeps a dedicated QP; the rest post on one shared QP per destination.
//!   An application that leaves the set posts on the shared QP at once; one that joins it
//!   waits for a free slot: its dedicated QP is used only while fewer than k dedicated QPs
//!   are active or still hold WQEs, so the QP-context cache never holds more;
//! - **room**: a WQE stays in its application's software queue until the QP it goes to has
//!   room: a free send-queue slot, and on a shared QP fewer than `shared_window` bytes
//!   posted and not acknowledged. Among the applications whose QP has room, the release
//!   order above picks; a blocked application banks no passes while it waits.
//!
//! Rates are in WQEs (x) and CQEs (z) per microsecond: `Q = q_fraction / wqe_cost`,
//! `C = 1 / poll_cost`, both O(1), the scale the solver's default ρ suits.
//! This file is pure bookkeeping; the simulator (`sim/apps/drum.rs`) owns time and QPs.

use super::drum_select::LeastServed;
use super::host_model::{DrumConfig, Select, Solve};
use crate::drum::admm::recovery_scales;
use crate::drum::exact;
use crate::drum::{ActiveSet, Admm, AdmmSettings, AdmmState, Problem};
use crate::ids::QpId;
use crate::units::Time;

/// What the scheduler reads of one of its QPs before a release: (WQEs posted and not
/// completed, free send-queue slots, bytes posted and not acknowledged).
pub type QpView = (u32, u32, u64);

/// One line of `res.drum`: an application's allocation over one period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrumRow {
    /// Start of the period the allocation applies to.
    pub t: Time,
    /// Application index.
    pub app: u32,
    /// Feasible WQE rate x̂ (per µs) enforced this period.
    pub x: f64,
    /// Its CQE rate ẑ = a x̂ (per µs): the poller's weight.
    pub z: f64,
    /// The CQE-per-WQE ratio the solve used.
    pub a: f64,
    /// Holds a dedicated QP.
    pub active: bool,
    /// WQEs released per µs over the period that just ended.
    pub rate: f64,
}

/// Stride scheduling over a set of weighted queues.
#[derive(Clone, Debug, Default)]
struct Stride {
    pass: Vec<f64>,
    weight: Vec<f64>,
    /// Pass of the last queue served: where a queue that was empty rejoins.
    now: f64,
}

impl Stride {
    fn new(m: usize, w: f64) -> Stride {
        Stride { pass: vec![0.0; m], weight: vec![w; m], now: 0.0 }
    }

    /// Queue `j` becomes non-empty: it must not bank the passes it missed while empty.
    fn wake(&mut self, j: usize) {
        self.pass[j] = self.pass[j].max(self.now);
    }

    /// The non-empty queue with the smallest pass (ties: lower index); advances it.
    fn pick(&mut self, nonempty: impl Fn(usize) -> bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for j in 0..self.pass.len() {
            if nonempty(j) && best.is_none_or(|b| self.pass[j] < self.pass[b]) {
                best = Some(j);
            }
        }
        let j = best?;
        self.now = self.pass[j];
        self.pass[j] += 1.0 / self.weight[j].max(1e-12);
        Some(j)
    }
}

/// The scheduler of one host.
#[derive(Debug)]
pub struct DrumAgent {
    cfg: DrumConfig,
    /// Application indices (of the run) on this host; local index j.
    pub apps: Vec<u32>,
    q: f64,
    c: f64,
    /// Time between two releases at rate Q.
    pub gap: Time,
    /// WQEs waiting to be released, per application, and their size.
    backlog: Vec<(u32, u64)>,
    release: Stride,
    /// A release event is pending.
    pub release_armed: bool,
    /// When the last WQE was released.
    pub last_release: Time,
    /// CQEs waiting in each application's ring.
    ring: Vec<u32>,
    poll: Stride,
    /// The ring the poller is reading (`None`: poller idle).
    pub polling: Option<usize>,
    /// Dedicated QP (true) or the shared one (false), per application: where its next WQE
    /// goes.
    pub active: Vec<bool>,
    /// The top-k rule's set; a member not yet `active` waits for a free slot.
    want: Vec<bool>,
    /// Per application: its dedicated QP and its destination's shared QP (set by the
    /// simulator once the QPs are open).
    pub qps: Vec<(QpId, QpId)>,
    a: Vec<f64>,
    released: Vec<u64>,
    submitted: Vec<u64>,
    signalled: Vec<u64>,
    state: Option<AdmmState>,
    /// `select = "least_served"`: the service tags that choose the slot holders (None
    /// under the top-k rule, which costs the release nothing).
    pub least_served: Option<LeastServed>,
}

impl DrumAgent {
    /// A scheduler for `apps` (with their initial CQE/WQE ratios 1/wr_num) under `cfg`.
    pub fn new(cfg: DrumConfig, apps: Vec<u32>, a0: Vec<f64>, wqe_cost: Time, poll_cost: Time) -> DrumAgent {
        let m = apps.len();
        let q = cfg.q_fraction / (wqe_cost.0 as f64 / 1e6);
        let c = 1.0 / (poll_cost.0 as f64 / 1e6);
        let gap = Time((wqe_cost.0 as f64 / cfg.q_fraction).round() as u64);
        DrumAgent {
            cfg,
            apps,
            q,
            c,
            gap,
            backlog: vec![(0, 0); m],
            release: Stride::new(m, 1.0),
            release_armed: false,
            last_release: Time::ZERO,
            ring: vec![0; m],
            poll: Stride::new(m, 1.0),
            polling: None,
            active: vec![true; m],
            want: vec![true; m],
            qps: vec![(QpId(0), QpId(0)); m],
            a: a0,
            released: vec![0; m],
            submitted: vec![0; m],
            signalled: vec![0; m],
            state: None,
            least_served: (cfg.select == Select::LeastServed).then(|| LeastServed::new(m, cfg.shared_window)),
        }
    }

    /// Application `j` submits a batch of `n` WQEs of `size` bytes.
    pub fn submit(&mut self, j: usize, n: u32, size: u64) {
        if self.backlog[j].0 == 0 {
            self.release.wake(j);
            if let Some(ls) = &mut self.least_served {
                ls.wake(j);
            }
        }
        self.backlog[j] = (self.backlog[j].0 + n, size);
        self.submitted[j] += n as u64;
        self.signalled[j] += 1;
    }

    /// Any WQE waiting.
    pub fn backlogged(&self) -> bool {
        self.backlog.iter().any(|b| b.0 > 0)
    }

    /// The next WQE to release: (application j, the QP it goes to, size, last of its batch =
    /// signalled), among the applications whose QP has room by `view`; `None` when no
    /// WQE waits or none has room.
    pub fn release_one(&mut self, view: impl Fn(QpId) -> QpView) -> Option<(usize, QpId, u64, bool)> {
        self.reselect(&view);
        self.admit_joiners(&view);
        let window = self.cfg.shared_window;
        let ls = self.least_served.as_ref();
        let (qps, active, want, backlog) = (&self.qps, &self.active, &self.want, &self.backlog);
        let due_above = ls.map_or(f64::INFINITY, |ls| ls.due_above(want, |i| backlog[i].0 > 0));
        let room = |j: usize| {
            // Under least_served a joiner waits at the agent for its slot, a holder due to
            // hand it on gets nothing more onto its QP, and a dedicated QP holds at most a
            // window too, so that slots pass WQE by WQE.
            if let Some(ls) = ls {
                let waits = want[j] && !active[j];
                if waits || (active[j] && ls.due(j, due_above)) {
                    return false;
                }
            }
            let (q, windowed) = if active[j] { (qps[j].0, ls.is_some()) } else { (qps[j].1, true) };
            let (_, free, bytes) = view(q);
            free > 0 && (!windowed || bytes < window)
        };
        for (j, b) in backlog.iter().enumerate() {
            if b.0 > 0 && !room(j) {
                self.release.wake(j); // waiting for room banks nothing
            }
        }
        let j = self.release.pick(|j| backlog[j].0 > 0 && room(j))?;
        self.backlog[j].0 -= 1;
        self.released[j] += 1;
        let qp = if self.active[j] { self.qps[j].0 } else { self.qps[j].1 };
        if let Some(ls) = &mut self.least_served {
            ls.served(j, self.backlog[j].1);
        }
        Some((j, qp, self.backlog[j].1, self.backlog[j].0 == 0))
    }

    /// `least_served`: re-chooses the slot holders by their service tags; a holder hands
    /// its slot on only once its QP has drained, so its successor takes it at once.
    fn reselect(&mut self, view: &impl Fn(QpId) -> QpView) {
        let Some(ls) = &mut self.least_served else { return };
        let (qps, backlog, k) = (&self.qps, &self.backlog, self.cfg.k as usize);
        ls.reselect(&mut self.want, |j| backlog[j].0 > 0, k, |j| view(qps[j].0).0 == 0);
        for (a, &w) in self.active.iter_mut().zip(&self.want) {
            *a &= w;
        }
    }

    /// Members of the top-k set that wait for a slot take one while fewer than k dedicated
    /// QPs are active or still hold WQEs (lowest index first).
    fn admit_joiners(&mut self, view: &impl Fn(QpId) -> QpView) {
        if self.want == self.active {
            return;
        }
        let k = self.cfg.k as usize;
        let mut used = (0..self.active.len()).filter(|&j| self.active[j] || view(self.qps[j].0).0 > 0).count();
        for j in 0..self.active.len() {
            if self.want[j] && !self.active[j] && (used < k || view(self.qps[j].0).0 > 0) {
                used += (view(self.qps[j].0).0 == 0) as usize;
                self.active[j] = true;
            }
        }
    }

    /// Holds `mask` as the active set from the start (no QP is in use yet).
    pub fn start_with(&mut self, mask: Vec<bool>) {
        self.active.clone_from(&mask);
        self.want = mask;
    }

    /// Sets the top-k set: leavers move to the shared QP at once, joiners wait for a slot
    /// (`admit_joiners`, at the next release).
    fn set_want(&mut self, want: Vec<bool>) {
        for (a, &w) in self.active.iter_mut().zip(&want) {
            *a &= w;
        }
        self.want = want;
    }

    /// A signalled CQE of application `j` lands in its ring.
    pub fn cqe(&mut self, j: usize) {
        if self.ring[j] == 0 {
            self.poll.wake(j);
        }
        self.ring[j] += 1;
    }

    /// The poller starts its next poll: the ring it reads, if any is non-empty.
    pub fn start_poll(&mut self) -> Option<usize> {
        let ring = &self.ring;
        self.polling = self.poll.pick(|j| ring[j] > 0);
        self.polling
    }

    /// The poll of ring `j` ends: one CQE is taken.
    pub fn end_poll(&mut self, j: usize) {
        self.ring[j] -= 1;
        self.polling = None;
    }

    /// One control period solved on the host alone (`control = "local"`): measure, solve,
    /// set the weights. Returns the rows for `res.drum`; `t` is now, `period_us` the length
    /// of the period that ended.
    pub fn control(&mut self, t: Time, period_us: f64) -> Vec<DrumRow> {
        let m = self.apps.len();
        let rates = self.measure(period_us);
        let active = self.active_set();
        let xs = match self.cfg.solve {
            Solve::Exact => {
                let mask = active.to_mask(1, m);
                exact::solve_host(&self.a, &mask, self.q, self.c, self.cfg.alpha, self.cfg.beta).0
            }
            Solve::Admm => self.admm_steps(&active),
        };
        match self.least_served {
            Some(_) if period_us > 0.0 => self.evict_idle(&rates),
            Some(_) => {}
            None => self.set_want(active.to_mask(1, m)),
        }
        self.apply(t, &xs, &rates)
    }

    /// `iterations` ADMM steps from the previous period's state; the feasible recovery of
    /// the iterate they reach.
    fn admm_steps(&mut self, active: &ActiveSet) -> Vec<f64> {
        let m = self.apps.len();
        let (qv, cv) = ([self.q], [self.c]);
        let p = Problem::new(1, m, &self.a, &qv, &cv, self.cfg.alpha, self.cfg.beta, active.clone())
            .expect("parameters checked at setup");
        let settings = AdmmSettings { adaptive_rho: true, ..AdmmSettings::default() };
        let mut admm = Admm::new(&p, settings, self.state.take()).expect("warm start of the same shape");
        let mut last = None;
        for _ in 0..self.cfg.iterations {
            last = Some(admm.step());
        }
        if let Some(r) = last {
            // Residual balancing across periods (the solver's own rule looks at every
            // tenth iteration of one solve; a period runs only a few).
            balance_rho(&mut admm.state, r.r_norm, r.s_norm);
        }
        let scale = recovery_scales(&p, &admm.state.x)[0];
        let xs = admm.state.x.iter().map(|x| x * scale).collect();
        self.state = Some(admm.state);
        xs
    }

    /// Ends a measurement period: updates `a` and returns the WQEs each application released
    /// per µs during it (the counters restart).
    pub fn measure(&mut self, period_us: f64) -> Vec<f64> {
        let m = self.apps.len();
        for j in 0..m {
            // CQEs per WQE over the WQEs submitted this period (each batch asks for one
            // CQE); kept from before when nothing was submitted. Counting completions
            // instead would split large batches across period boundaries.
            if self.submitted[j] > 0 {
                self.a[j] = self.cfg.a.of(self.submitted[j] as f64, self.signalled[j] as f64);
            }
        }
        let rates = self.released.iter().map(|&r| if period_us > 0.0 { r as f64 / period_us } else { 0.0 }).collect();
        self.released.fill(0);
        self.submitted.fill(0);
        self.signalled.fill(0);
        rates
    }

    /// The top-k active set for the current `a` (every application when m ≤ k).
    pub fn active_set(&self) -> ActiveSet {
        let (m, k) = (self.apps.len(), self.cfg.k as usize);
        if m > k { ActiveSet::top_k(1, m, &self.a, k) } else { ActiveSet::from_mask(1, m, &vec![true; m]) }
            .expect("shapes checked at setup")
    }

    /// The CQE-per-WQE ratios, the budgets `(Q, C)` and the model parameters `(α, β)`.
    pub fn data(&self) -> (&[f64], f64, f64, f64, f64) {
        (&self.a, self.q, self.c, self.cfg.alpha, self.cfg.beta)
    }

    /// Enforces the feasible allocation `xs` (release weights x̂, poll weights a x̂) with the
    /// active set `active` (None: keep it); returns the rows for `res.drum`.
    pub fn allocate(&mut self, t: Time, xs: &[f64], active: Option<Vec<bool>>, rates: &[f64]) -> Vec<DrumRow> {
        match (active, &self.least_served) {
            (_, Some(_)) if t > Time::ZERO => self.evict_idle(rates),
            (_, Some(_)) => {}
            (Some(a), None) => self.set_want(a),
            (None, None) => {}
        }
        self.apply(t, xs, rates)
    }

    /// `least_served`: holders that released nothing in the period that ended and have
    /// nothing queued give their slot up.
    fn evict_idle(&mut self, rates: &[f64]) {
        let Some(ls) = &self.least_served else { return };
        let backlog = &self.backlog;
        ls.evict_idle(&mut self.want, |j| rates[j] == 0.0 && backlog[j].0 == 0);
        for (a, &w) in self.active.iter_mut().zip(&self.want) {
            *a &= w;
        }
    }

    fn apply(&mut self, t: Time, xs: &[f64], rates: &[f64]) -> Vec<DrumRow> {
        let m = self.apps.len();
        if let Some(ls) = &mut self.least_served {
            ls.set_weights(xs);
        }
        let mut rows = Vec::with_capacity(m);
        for j in 0..m {
            let z = self.a[j] * xs[j];
            self.release.weight[j] = xs[j];
            self.poll.weight[j] = z;
            rows.push(DrumRow {
                t,
                app: self.apps[j],
                x: xs[j],
                z,
                a: self.a[j],
                active: self.active[j],
                rate: rates[j],
            });
        }
        rows
    }
}

/// Boyd §3.4.1: double ρ when the primal residual is ten times the dual one, halve it in
/// the opposite case, rescaling the scaled dual so that `u = ρ w` is unchanged.
fn balance_rho(st: &mut AdmmState, r: f64, s: f64) {
    let f = if r > 10.0 * s {
        2.0
    } else if s > 10.0 * r {
        0.5
    } else {
        return;
    };
    st.rho *= f;
    st.w.iter_mut().for_each(|w| *w /= f);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every QP has room.
    const ROOM: fn(QpId) -> QpView = |_| (0, u32::MAX, 0);

    #[test]
    fn stride_shares_follow_weights_and_idle_queues_bank_nothing() {
        let mut s = Stride::new(3, 1.0);
        s.weight = vec![1.0, 2.0, 4.0];
        let mut n = [0u32; 3];
        for _ in 0..700 {
            n[s.pick(|_| true).unwrap()] += 1;
        }
        assert_eq!(n, [100, 200, 400]);
        // Queue 0 idles for a while, then rejoins at the current pass, not before it.
        for _ in 0..600 {
            s.pick(|j| j != 0);
        }
        s.wake(0);
        let mut first = [0u32; 3];
        for _ in 0..70 {
            first[s.pick(|_| true).unwrap()] += 1;
        }
        assert!(first[0] <= 11, "an idle queue must not catch up in a burst: {first:?}");
    }

    /// Work conservation (docs/drum-fabric.md §3, "release"): an application below its
    /// share x̂_j is released at the scheduler's next release slot, whatever the others
    /// have queued; one above its share gets its share and no more.
    #[test]
    fn an_application_below_its_share_is_released_next() {
        let cfg = DrumConfig { iterations: 0, solve: Solve::Admm, ..DrumConfig::default() };
        let m = 10;
        let mut ag =
            DrumAgent::new(cfg, (0..m).collect(), vec![1.0; m as usize], Time::from_ns(680), Time::from_ns(100));
        ag.control(Time::ZERO, 0.0);
        for j in 1..m as usize {
            ag.submit(j, 10_000, 1024);
        }
        // The foreground (app 0) posts one WQE every 25 slots: below its share of 1 in 10.
        let mut waits = Vec::new();
        for round in 0..40 {
            for _ in 0..25 {
                assert_ne!(ag.release_one(ROOM).unwrap().0, 0, "nothing of app 0 is queued");
            }
            ag.submit(0, 1, 32);
            let mut wait = 0;
            while ag.release_one(ROOM).unwrap().0 != 0 {
                wait += 1;
            }
            waits.push((round, wait));
        }
        assert!(waits.iter().all(|&(_, w)| w == 0), "released at the next slot: {waits:?}");
        // Above its share (re-posting at once after each release) it gets 1 in 10.
        let mut fg = 0;
        for _ in 0..1000 {
            if ag.backlog[0].0 == 0 {
                ag.submit(0, 1, 32);
            }
            fg += (ag.release_one(ROOM).unwrap().0 == 0) as u32;
        }
        assert!((99..=101).contains(&fg), "its share of 1000 slots: {fg}");
    }

    #[test]
    fn zero_iterations_keep_equal_rates() {
        let cfg = DrumConfig { iterations: 0, solve: Solve::Admm, ..DrumConfig::default() };
        let mut ag = DrumAgent::new(cfg, vec![0, 1, 2], vec![1.0, 0.1, 0.01], Time::from_ns(680), Time::from_ns(100));
        let rows = ag.control(Time::ZERO, 0.0);
        assert!(rows.iter().all(|r| (r.x - rows[0].x).abs() < 1e-12));
        assert!((rows.iter().map(|r| r.x).sum::<f64>() - 0.9 / 0.68).abs() < 1e-9);
    }

    /// TC2 at cc = 100 (docs/drum-fabric.md §6.1): the foreground's last batch (68 WQEs,
    /// a = 1/68) puts it on the shared QP among 99 backlogged applications (a = 1/wr_num,
    /// wr_num 20..99), after 300 control periods. Every optimal rate
    /// of (P) is positive (the CQ penalty is infinite at 0), so the scheduler must release
    /// its WQE within ⌈Σx̂ / x̂_j⌉ slots of stride scheduling. Enforcing a few ADMM steps'
    /// iterate instead (`solve = "admm"`) gives it x̂ = 0 and it waits forever.
    #[test]
    fn an_application_on_the_shared_qp_is_not_starved() {
        let m = 100;
        let mut a: Vec<f64> = (0..m).map(|j| 1.0 / (20.0 + 0.8 * j as f64)).collect();
        a[1] = 1.0 / 68.0; // the foreground's cut last batch
        let cfg = DrumConfig { k: 19, ..DrumConfig::default() };
        let mut ag = DrumAgent::new(cfg, (0..m as u32).collect(), a, Time::from_ns(680), Time::from_ns(100));
        let mut rows = Vec::new();
        for p in 0..300 {
            rows = ag.control(Time::from_us(100 * p), 100.0);
        }
        assert!(!ag.active[1], "not among the 19 smallest a: on the shared QP");
        let total: f64 = rows.iter().map(|r| r.x).sum();
        assert!((total / (0.9 / 0.68) - 1.0).abs() < 1e-9, "the WQE budget is used: {total}");
        assert!(rows.iter().all(|r| r.x > 0.0), "every rate of (P)'s optimum is positive: {:?}", rows[1]);
        let bound = (total / rows[1].x).ceil() as u32 + 1;
        for j in (0..m).filter(|&j| j != 1) {
            ag.submit(j, 1_000_000, 1 << 20);
        }
        ag.submit(1, 1, 32);
        let waited = (0..1_000_000).take_while(|_| ag.release_one(ROOM).unwrap().0 != 1).count() as u32;
        assert!(waited <= bound, "released after {waited} slots, bound {bound} (x̂ = {})", rows[1].x);
    }

    /// Room (docs/drum-fabric.md §3): an application whose QP is full is skipped and banks
    /// no passes while it waits, so once room comes back it is served in turn with the
    /// others, not in a burst; and a WQE never goes to a shared QP at or above its window.
    #[test]
    fn a_blocked_application_waits_and_banks_nothing() {
        let cfg = DrumConfig { iterations: 0, solve: Solve::Admm, shared_window: 4096, ..DrumConfig::default() };
        let mut ag = DrumAgent::new(cfg, vec![0, 1, 2], vec![1.0; 3], Time::from_ns(680), Time::from_ns(100));
        ag.control(Time::ZERO, 0.0);
        ag.qps = vec![(QpId(0), QpId(9)), (QpId(1), QpId(9)), (QpId(2), QpId(9))];
        ag.start_with(vec![true, true, false]);
        for j in 0..3 {
            ag.submit(j, 1000, 1024);
        }
        // QP 0 is full, the shared QP 9 holds its window: only app 1 is released.
        let full = |q: QpId| match q.0 {
            0 => (16, 0, 0),
            9 => (4, 100, 4096),
            _ => (0, 100, 0),
        };
        for _ in 0..300 {
            assert_eq!(ag.release_one(full).map(|r| r.0), Some(1));
        }
        let none = |q: QpId| if q.0 == 1 { (16, 0, 0) } else { (16, 0, 4096) };
        assert_eq!(ag.release_one(none), None, "no QP has room: nothing is released");
        // Room again everywhere: equal weights give each about one slot in three.
        let mut n = [0u32; 3];
        for _ in 0..30 {
            let (j, qp, _, _) = ag.release_one(ROOM).unwrap();
            assert_eq!(qp, if j == 2 { QpId(9) } else { QpId(j as u32) });
            n[j] += 1;
        }
        // (The two that waited rejoin at the current pass, one stride ahead of app 1: one
        // slot each, not the 300 they were skipped.)
        assert!(n.iter().all(|&c| (9..=11).contains(&c)), "the apps that waited catch up nothing: {n:?}");
    }

    /// A member of the top-k set waits for a free slot: it posts on the shared QP while k
    /// dedicated QPs are in use (active, or still holding WQEs of a leaver).
    #[test]
    fn a_joiner_waits_for_a_free_cache_slot() {
        let cfg = DrumConfig { iterations: 0, solve: Solve::Admm, k: 1, ..DrumConfig::default() };
        let mut ag = DrumAgent::new(cfg, vec![0, 1], vec![1.0; 2], Time::from_ns(680), Time::from_ns(100));
        ag.control(Time::ZERO, 0.0);
        ag.qps = vec![(QpId(0), QpId(9)), (QpId(1), QpId(9))];
        ag.start_with(vec![true, false]);
        ag.set_want(vec![false, true]);
        ag.submit(1, 10, 64);
        // App 0 left, but its dedicated QP still holds 3 WQEs: app 1 stays on the shared QP.
        let draining = |q: QpId| if q.0 == 0 { (3, 10, 0) } else { (0, 10, 0) };
        assert_eq!(ag.release_one(draining).map(|r| r.1), Some(QpId(9)));
        assert!(!ag.active[1] && !ag.active[0]);
        // Drained: the slot is free, app 1 takes it.
        assert_eq!(ag.release_one(ROOM).map(|r| r.1), Some(QpId(1)));
        assert!(ag.active[1]);
    }
}
