//! The one application table: a row per application instance of the run, indexed by
//! `AppId`, holding its kind (how the simulator routes its completions and timers) and its
//! state. What several applications share stays with the host model
//! (`closed_loop::HostModel`: a SHARE group's lock, a NIC's busy-polling threads, the
//! batch records, each scheduler's shared QPs), and so does DRUM's network-wide control
//! loop, which belongs to no one host.

use super::AppRun;
use crate::app::closed_loop::ClosedLoop;
use crate::app::drum_agent::DrumAgent;
use crate::app::rank::RankApp;
use crate::app::{AppId, AppKind, Headers, VerbQueue};
use crate::ids::{NodeId, QpId};
use crate::multipath::virtuoso::{VirtuosoReceiver, VirtuosoSender};
use crate::multipath::{MpReceiver, MpSender};
use crate::units::Time;

/// The state of one application.
#[derive(Debug, Default)]
pub(in crate::sim) enum AppState {
    /// None in the table: the host model keeps it, or its handler runs now (`with_app`).
    #[default]
    Elsewhere,
    /// An attack generator of the CC-attack paper.
    Attack(AppRun),
    /// The sending half of a multipath connection.
    MpSender(MpSender),
    /// The receiving half of a multipath connection.
    MpReceiver(MpReceiver),
    /// The sending half of a Virtuoso connection.
    VSender(VirtuosoSender),
    /// A closed-loop application of the DRUM paper.
    Closed(ClosedLoop),
    /// DRUM's scheduler of one host.
    DrumAgent(DrumAgent),
    /// The receiving half of a Virtuoso connection.
    VReceiver(VirtuosoReceiver),
    /// A host's part of a dependency-driven job.
    Rank(RankApp),
}

/// The accessors of one variant of `AppState`: the state, or a panic naming the kind
/// expected (an id routed to the wrong kind is a bug of the simulator, not of the input).
macro_rules! state_of {
    ($get:ident, $get_mut:ident, $variant:ident, $ty:ty) => {
        #[doc = concat!("The state of a `", stringify!($variant), "` row.")]
        pub(in crate::sim) fn $get(&self) -> &$ty {
            match self {
                AppState::$variant(s) => s,
                _ => wrong_kind(stringify!($variant)),
            }
        }

        #[doc = concat!("The state of a `", stringify!($variant), "` row, to change.")]
        pub(in crate::sim) fn $get_mut(&mut self) -> &mut $ty {
            match self {
                AppState::$variant(s) => s,
                _ => wrong_kind(stringify!($variant)),
            }
        }
    };
}

/// An application id routed to a row of another kind (out of line: the accessors are
/// inlined into the RNIC's receive path, which must not grow for them).
#[cold]
#[inline(never)]
fn wrong_kind(expected: &str) -> ! {
    panic!("application row is not a {expected}")
}

impl AppState {
    state_of!(attack, attack_mut, Attack, AppRun);
    state_of!(mp_sender, mp_sender_mut, MpSender, MpSender);
    state_of!(mp_receiver, mp_receiver_mut, MpReceiver, MpReceiver);
    state_of!(v_sender, v_sender_mut, VSender, VirtuosoSender);
    state_of!(v_receiver, v_receiver_mut, VReceiver, VirtuosoReceiver);
    state_of!(closed, closed_mut, Closed, ClosedLoop);
    state_of!(drum_agent, drum_agent_mut, DrumAgent, DrumAgent);
    state_of!(rank, rank_mut, Rank, RankApp);
}

/// One row of the table.
#[derive(Debug)]
pub(in crate::sim) struct App {
    pub(in crate::sim) kind: AppKind,
    pub(in crate::sim) state: AppState,
}

/// Every application instance of the run and what they share with the RNIC (their
/// headers in flight, the verbs of the running handler). Setup-time bookkeeping (`conns`,
/// `messages`) is read only to report results.
#[derive(Debug, Default)]
pub(in crate::sim) struct Apps {
    pub(in crate::sim) rows: Vec<App>,
    pub(in crate::sim) headers: Headers,
    /// The verbs the running handler issued, carried out when it returns.
    pub(in crate::sim) verbs: VerbQueue,
    pub(in crate::sim) conns: Vec<Conn>,
    /// Global message id -> (connection, index in its sender, ideal FCT).
    pub(in crate::sim) messages: Vec<(u32, u32, Time)>,
    /// The latest time a message is posted at: until then more work may start, so the
    /// stall watchdog must not call the run stuck (`sim::watch`).
    pub(in crate::sim) last_post: Time,
    /// Dependency-driven jobs (collectives among them), in setup order.
    pub(in crate::sim) jobs: Vec<super::collective::Job>,
    /// Transfers of every job: each counts as a flow of the run.
    pub(in crate::sim) transfers: usize,
    /// Shuffled-overlay flows held for room in a send queue (`overlay`): while none is, a
    /// plain flow's completion asks no application.
    pub(in crate::sim) overlay_held: u64,
}

/// A multipath connection as set up. Its two halves are rows of the table.
#[derive(Debug)]
pub(in crate::sim) struct Conn {
    pub(in crate::sim) src: NodeId,
    pub(in crate::sim) dst: NodeId,
    /// Application id of the sending half (on `src`).
    pub(in crate::sim) sender: AppId,
    /// Application id of the receiving half (on `dst`).
    pub(in crate::sim) receiver: AppId,
    /// QPs from `src` to `dst`, by slot (path).
    pub(in crate::sim) qps: Vec<QpId>,
    /// QPs from `dst` back to `src` by path (Virtuoso's READ data); empty otherwise.
    pub(in crate::sim) reverse: Vec<QpId>,
    pub(in crate::sim) disconnected: bool,
    pub(in crate::sim) virtuoso: bool,
    /// How long `dst` takes to learn that the connection closed (the first path's
    /// propagation delay): in the origin order its own QPs (`reverse`) close that much
    /// later, since one host never changes another's state at once (`sim::parallel`).
    pub(in crate::sim) notice: Time,
}

impl Apps {
    /// Messages posted on multipath connections (each counts as a flow of the run).
    pub(in crate::sim) fn message_count(&self) -> usize {
        self.messages.len()
    }

    /// Adds an application of kind `kind` with its state to the table; returns its id.
    pub(in crate::sim) fn add(&mut self, kind: AppKind, state: AppState) -> AppId {
        self.rows.push(App { kind, state });
        AppId::new(self.rows.len() - 1)
    }

    /// The id the next application added will get.
    pub(in crate::sim) fn next_id(&self) -> AppId {
        AppId::new(self.rows.len())
    }

    /// Applications in the table.
    pub(in crate::sim) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The kind of application `app`.
    #[inline]
    pub(in crate::sim) fn kind(&self, app: AppId) -> AppKind {
        self.rows[app.idx()].kind
    }

    /// The state of application `app`.
    pub(in crate::sim) fn state(&self, app: AppId) -> &AppState {
        &self.rows[app.idx()].state
    }

    /// The state of application `app`, to change.
    pub(in crate::sim) fn state_mut(&mut self, app: AppId) -> &mut AppState {
        &mut self.rows[app.idx()].state
    }

    /// True when `app` is an attack generator, which hears of its acknowledged chunks
    /// together, after its QP's slot may have been released (`sim::host`).
    #[inline]
    pub(in crate::sim) fn hears_chunks(&self, app: AppId) -> bool {
        !app.is_none() && matches!(self.kind(app), AppKind::Attack(_))
    }

    /// True when `app` is one of DRUM's schedulers or its network-wide control loop (the
    /// origin order keeps their events apart from the other applications', `sim::order`).
    pub(in crate::sim) fn is_drum(&self, app: AppId) -> bool {
        matches!(self.kind(app), AppKind::DrumAgent(_) | AppKind::DrumNet)
    }

    /// True when `app` learns of its failed WRs (`sim::retry`), so that a QP carrying them is
    /// left to it rather than abandoned as a flow's (`sim::failures`). An attack generator's
    /// chunks are given up as flows are.
    pub(in crate::sim) fn learns_of_failures(&self, app: AppId) -> bool {
        !app.is_none() && !matches!(self.kind(app), AppKind::Attack(_))
    }
}
