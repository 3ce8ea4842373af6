//! The host side of the DRUM paper's testbed: how applications reach the RNIC (`mechanism`) and
//! what posting and polling cost. Settings only; the simulator's glue is `sim/apps/closed_loop.rs`.

use crate::units::Time;

/// How a host's applications share the RNIC (the DRUM paper's §IV-B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Each application posts on its own QP and busy-polls its own CQ (FaRM-style).
    Raw,
    /// Every `share_ratio` connections to one destination share a QP behind a FIFO lock.
    Share,
    /// A per-host scheduler is the sole poster and poller (`app::drum_agent`).
    Drum,
}

impl Mechanism {
    /// From the TOML spelling.
    pub fn parse(s: &str) -> Result<Mechanism, String> {
        match s {
            "raw" => Ok(Mechanism::Raw),
            "share" => Ok(Mechanism::Share),
            "drum" => Ok(Mechanism::Drum),
            other => Err(format!("unknown mechanism `{other}` (known: raw, share, drum)")),
        }
    }
}

/// `[host]`: the same for every host of the scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostConfig {
    /// RAW, SHARE or DRUM.
    pub mechanism: Mechanism,
    /// RNIC time to process one WQE (doorbell order, FIFO across QPs).
    pub wqe_cost: Time,
    /// CPU time of one CQ poll.
    pub poll_cost: Time,
    /// Cores the application threads share (processor sharing).
    pub cores: u32,
    /// SHARE: connections to one destination per shared QP.
    pub share_ratio: u32,
    /// SHARE: time the QP's lock is held per WQE posted.
    pub lock_cost: Time,
    /// SHARE: one transfer of the lock's cache line between cores. A poster that finds k
    /// others queued on the lock adds k transfers to its hold (a test-and-set lock's
    /// hand-off costs one transfer per spinning core: Anderson, IEEE TPDS 1(1), 1990).
    pub lock_transfer: Time,
    /// Send-queue depth of every QP the host model opens: WQEs posted and not yet completed
    /// (`ibv_qp_cap.max_send_wr`). A post on a full queue fails as `ibv_post_send` does
    /// (ENOMEM), so every poster checks for room first.
    pub max_send_wr: u32,
}

impl Default for HostConfig {
    /// Calibrated on the DRUM paper's Fig 2a (docs/drum-fabric.md): 0.68 µs per WQE is the
    /// slope (74.3 − 19.8)/80; 24 cores are the testbed's two 12-core E5-2650 v4.
    fn default() -> Self {
        HostConfig {
            mechanism: Mechanism::Raw,
            wqe_cost: Time::from_ns(680),
            poll_cost: Time::from_ns(100),
            cores: 24,
            share_ratio: 5,
            lock_cost: Time::from_ns(200),
            // Broadwell-EP (the testbed's E5-2650 v4 generation), core-to-core transfer of a
            // modified line within a socket: 40.3-42.3 ns by Intel MLC on an E5-2660 v4
            // (J. McCalpin, Intel forum thread 700477, 2016).
            lock_transfer: Time::from_ns(40),
            // The largest send queue a ConnectX-3 (mlx4, the 40 Gb/s InfiniBand generation of
            // the DRUM paper's testbed) accepts (`rnic::DEFAULT_MAX_SEND_WR`).
            max_send_wr: crate::rnic::DEFAULT_MAX_SEND_WR,
        }
    }
}

/// Where DRUM's ADMM rounds run (docs/drum-fabric.md §3, docs/drum.md §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Per-host problems are independent: each scheduler solves its own.
    Local,
    /// One network-wide problem (the hosts' shared fabric links), solved by sharing ADMM
    /// between the schedulers and a coordinator; each round is a report and a price
    /// message, `control_delay` each way (`sim/apps/drum_control.rs`).
    OutOfBand,
    /// The same rounds as 64 B messages in the highest class through the fabric
    /// (`sim/apps/drum_inband.rs`).
    InBand,
}

/// How a DRUM scheduler under local control turns its host's problem into rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solve {
    /// The exact optimum of the host's (P) every period (`drum::exact`): where the
    /// paper's ADMM converges ("in less than 20 iterations"), this is where it arrives.
    Exact,
    /// `iterations` ADMM steps per period, warm-started, enforcing the feasible recovery of
    /// the iterate as it stands (which need not have converged, and can hold rates of 0).
    Admm,
}

impl Solve {
    /// From the TOML spelling.
    pub fn parse(s: &str) -> Result<Solve, String> {
        match s {
            "exact" => Ok(Solve::Exact),
            "admm" => Ok(Solve::Admm),
            other => Err(format!("unknown solve `{other}` (known: exact, admm)")),
        }
    }
}

/// What the scheduler measures as an application's `a` (the DRUM paper's §III: "the number of CQEs
/// per WQE"), the coefficient that ties its CQE rate to its WQE rate, z = a x.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AReading {
    /// The paper's words: signalled WQEs per WQE submitted, 1/wr_num (the default).
    CqePerWqe,
    /// WQEs per CQE, wr_num: the reading under which the top-k set keeps the one-WQE
    /// applications and gives them the largest rates (docs/drum-fabric.md §6.2), which the
    /// paper's Fig. 6 and TC1 numbers need.
    BatchSize,
}

impl AReading {
    /// From the TOML spelling.
    pub fn parse(s: &str) -> Result<AReading, String> {
        match s {
            "cqe_per_wqe" => Ok(AReading::CqePerWqe),
            "batch_size" => Ok(AReading::BatchSize),
            other => Err(format!("unknown a `{other}` (known: cqe_per_wqe, batch_size)")),
        }
    }

    /// The TOML spelling.
    pub fn name(self) -> &'static str {
        match self {
            AReading::CqePerWqe => "cqe_per_wqe",
            AReading::BatchSize => "batch_size",
        }
    }

    /// `a` of an application that submitted `wqes` WQEs with `cqes` signalled.
    pub fn of(self, wqes: f64, cqes: f64) -> f64 {
        match self {
            AReading::CqePerWqe => cqes / wqes,
            AReading::BatchSize => wqes / cqes,
        }
    }
}

/// Which applications hold the scheduler's dedicated QPs (the DRUM paper, Definition 2: the
/// multiplier "prioritizes k applications with largest utilities ... It can be formulated
/// to describe any prioritizing mechanism such as FIFO or smallest job first").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    /// The top-k rule: the k applications with the smallest `a` (the largest rates at (P)'s
    /// optimum, the paper's "largest utilities"), recomputed every control period (default).
    SmallestA,
    /// The applications furthest below their share of the bytes released (bytes over their
    /// rate x̂, `app::drum_select`) hold the k slots; a holder served a window more than a
    /// waiter hands its slot on, and every QP the scheduler posts to holds at most a window
    /// (docs/drum-fabric.md §6.11).
    LeastServed,
}

impl Select {
    /// From the TOML spelling.
    pub fn parse(s: &str) -> Result<Select, String> {
        match s {
            "smallest_a" => Ok(Select::SmallestA),
            "least_served" => Ok(Select::LeastServed),
            other => Err(format!("unknown select `{other}` (known: smallest_a, least_served)")),
        }
    }

    /// The TOML spelling.
    pub fn name(self) -> &'static str {
        match self {
            Select::SmallestA => "smallest_a",
            Select::LeastServed => "least_served",
        }
    }
}

/// `[drum]`: the scheduler's control loop (ignored under RAW and SHARE).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrumConfig {
    /// Control period: one solve (of `iterations` ADMM steps) per period.
    pub period: Time,
    /// ADMM steps per period, warm-started from the previous period (0: keep the start);
    /// under local control only with `solve = Admm`.
    pub iterations: u32,
    /// Local control: the exact optimum or a few ADMM steps per period.
    pub solve: Solve,
    /// α of the α-fair utility.
    pub alpha: f64,
    /// β of the CQ latency penalty.
    pub beta: f64,
    /// Dedicated QPs (the top-k active set).
    pub k: u32,
    /// WQE release budget as a fraction of the RNIC's WQE rate: `Q = q_fraction / wqe_cost`.
    pub q_fraction: f64,
    /// Where the coordination runs.
    pub control: Control,
    /// One-way delay of a control message (used by the coupled modes only).
    pub control_delay: Time,
    /// The scheduler releases a WQE onto a shared QP only while that QP holds fewer than
    /// this many bytes posted and not acknowledged: what waits there ahead of a new WQE is
    /// at most this plus one WQE.
    pub shared_window: u64,
    /// What `a` is measured as.
    pub a: AReading,
    /// Who holds the dedicated QPs.
    pub select: Select,
}

impl Default for DrumConfig {
    fn default() -> Self {
        DrumConfig {
            period: Time::from_us(100),
            iterations: 5,
            solve: Solve::Exact,
            alpha: 0.5,
            beta: 1.0,
            k: 20,
            q_fraction: 0.9,
            control: Control::Local,
            control_delay: Time::from_us(1),
            // Three bandwidth-delay products of the testbed (40 Gb/s × 4.7 µs, the lone
            // WQE's round trip of docs/drum-fabric.md §7, is 23.5 KB): enough to keep the
            // shared QP sending while its ACKs return.
            shared_window: 64 << 10,
            a: AReading::CqePerWqe,
            select: Select::SmallestA,
        }
    }
}

/// Everything the host model needs: settings and every application instance.
#[derive(Clone, Debug, Default)]
pub struct HostModelSpec {
    /// `[host]`.
    pub host: HostConfig,
    /// `[drum]`.
    pub drum: DrumConfig,
    /// `[[app]]`, with `count` expanded, in file order.
    pub apps: Vec<super::closed_loop::ClosedLoopSpec>,
}
