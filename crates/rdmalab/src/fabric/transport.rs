//! The transport service a QP's packets belong to (RC, UC, UD). Only the name lives here, low
//! enough for flow specs (`workload`) to carry it; what each service does is the RNIC's
//! (`rnic/transport.rs`).

/// A QP's transport service.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connection (ACKs, retransmission): the default.
    #[default]
    Rc,
    /// Unreliable connection: in-order, no ACK, a lost packet loses its message.
    Uc,
    /// Unreliable datagram: one-MTU messages, no ACK, one context for every destination.
    Ud,
}

impl Transport {
    /// From the TOML spelling.
    pub fn parse(s: &str) -> Result<Transport, String> {
        match s {
            "rc" => Ok(Transport::Rc),
            "uc" => Ok(Transport::Uc),
            "ud" => Ok(Transport::Ud),
            other => Err(format!("unknown transport `{other}` (known: rc, uc, ud)")),
        }
    }

    /// RC: ACKs, NACKs, retransmission and the retransmission timer.
    #[inline]
    pub fn reliable(self) -> bool {
        self == Transport::Rc
    }
}
