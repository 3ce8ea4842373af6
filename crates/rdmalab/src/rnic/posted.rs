//! A QP's posted messages (send WQEs) not yet completed, head first.
//!
//! The packet path asks two questions of them: where the packet being cut must stop (the
//! end of the message holding `snd_nxt`, nearly always the head) and whether an ACK ends
//! the head. Both need only the head's end, so it is kept beside the list, inline in the
//! QP: the list's buffer lies elsewhere in memory, one more cache miss per packet sent and
//! per ACK when a host's QPs outgrow the cache (a Virtuoso run holds some 2,000 a host).
//! The messages themselves are read when a packet ends one or when it completes.

use std::collections::vec_deque::{Drain, VecDeque};
use std::ops::Deref;

use super::qp::Message;

/// Posted messages in stream order; read as a `VecDeque`, changed through the methods
/// below, which keep the head's end.
#[derive(Clone, Debug, Default)]
pub struct PostedMessages {
    list: VecDeque<Message>,
    /// `end` of the first message (meaningless while `list` is empty).
    head_end: u64,
}

impl PostedMessages {
    /// The first message's end (one past its last byte in the stream), without reading the
    /// list's buffer; `None` when nothing is posted.
    #[inline(always)]
    pub fn head_end(&self) -> Option<u64> {
        (!self.list.is_empty()).then_some(self.head_end)
    }

    /// Appends `m` (its `end` already set).
    #[inline]
    pub fn push_back(&mut self, m: Message) {
        if self.list.is_empty() {
            self.head_end = m.end;
        }
        self.list.push_back(m);
    }

    /// Removes and returns the first message.
    #[inline]
    pub fn pop_front(&mut self) -> Option<Message> {
        let m = self.list.pop_front();
        if let Some(next) = self.list.front() {
            self.head_end = next.end;
        }
        m
    }

    /// Removes every message, head first.
    pub fn drain_all(&mut self) -> Drain<'_, Message> {
        self.list.drain(..)
    }

    /// Removes every message, keeping the buffer (a QP slot reused).
    pub fn clear(&mut self) {
        self.list.clear();
    }
}

impl Deref for PostedMessages {
    type Target = VecDeque<Message>;

    #[inline(always)]
    fn deref(&self) -> &VecDeque<Message> {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FlowId;
    use crate::units::Time;

    fn message(end: u64) -> Message {
        Message { end, ..Message::plain(FlowId(0), 10, Time::ZERO) }
    }

    #[test]
    fn the_head_end_follows_the_first_message_through_pushes_pops_and_drains() {
        let mut q = PostedMessages::default();
        assert_eq!(q.head_end(), None);
        for end in [10, 25, 40] {
            q.push_back(message(end));
            assert_eq!(q.head_end(), q.front().map(|m| m.end));
        }
        assert_eq!(q.head_end(), Some(10));
        while q.pop_front().is_some() {
            assert_eq!(q.head_end(), q.front().map(|m| m.end));
        }
        assert_eq!(q.head_end(), None);
        q.push_back(message(0)); // an empty message at the stream's start still has a head
        assert_eq!(q.head_end(), Some(0));
        q.push_back(message(7));
        assert_eq!(q.drain_all().count(), 2);
        assert_eq!(q.head_end(), None);
        q.push_back(message(9));
        assert_eq!(q.head_end(), Some(9));
        q.clear();
        assert_eq!(q.head_end(), None);
    }
}
