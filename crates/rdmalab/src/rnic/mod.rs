//! The RDMA NIC: queue pairs with send queues of WQEs, transmit arbitration with pacing and
//! windows, the receiver's go-back-N state, IRN's selective
//! retransmission (`irn`), the Ultra Ethernet transport's delivery (`uet`), completion queues, and the QP-context cache.

pub mod cache;
pub mod engine;
pub mod irn;
mod marks;
pub mod nic;
pub mod posted;
pub mod qp;
pub mod tenant_rr;
pub mod transport;
pub mod uet;
pub mod uet_ev;

pub use cache::{FetchMode, QpCache, QpCacheConfig};
pub use engine::WqeEngine;
pub use irn::{IrnConfig, IrnTable};
pub use nic::{Nic, Pick};
pub use posted::PostedMessages;
pub use qp::{Completion, Message, Qp, RxState, DEFAULT_MAX_SEND_WR};
pub use tenant_rr::{NicArbitration, TenantRr};
