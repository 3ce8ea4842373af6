//! The transport service a QP's packets belong to (RC, UC, UD, UET). Only the name lives here, low
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
    /// The Ultra Ethernet transport: reliable unordered delivery, selective ACKs, each
    /// packet's own entropy (`rnic::uet`).
    Uet,
}

impl Transport {
    /// From the TOML spelling.
    pub fn parse(s: &str) -> Result<Transport, String> {
        match s {
            "rc" => Ok(Transport::Rc),
            "uc" => Ok(Transport::Uc),
            "ud" => Ok(Transport::Ud),
            "uet" => Ok(Transport::Uet),
            other => Err(format!("unknown transport `{other}` (known: rc, uc, ud, uet)")),
        }
    }

    /// RC and UET: ACKs, NACKs, retransmission and the retransmission timer.
    #[inline]
    pub fn reliable(self) -> bool {
        matches!(self, Transport::Rc | Transport::Uet)
    }
}

/// On a UET data packet, in `Packet::deflections` (IOFD's deflection count, which runs with
/// UET do not use): a switch may trim it (`sim::mech::trimming`).
pub const UET_TRIMMABLE: u8 = 0x01;

/// On a UET data packet, beside [`UET_TRIMMABLE`]: the ACK-request flag (the PDS header's
/// AR bit). The sender sets it on the packet that fills its window, and the receiver ACKs
/// that packet at once instead of waiting for `ack_every` packets: a window smaller than the
/// coalescing count would otherwise wait for the retransmission timeout.
pub const UET_ACK_REQUEST: u8 = 0x02;
