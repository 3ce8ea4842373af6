//! The NIC's marks: one bit per position of its arbitration ring (`Nic`'s "may have work"),
//! with a second level of one bit per word of marks that has any set.
//!
//! The round robin and `Nic::quiet` look for the next marked position. With one level that
//! search reads every word of marks between two marked positions: a host holding 10,000 QPs
//! of which 8 have work read some 157 words a search (and a packet sent costs at least two
//! searches: the walk's and `quiet`'s). The second level skips 64 empty words at a time, so
//! the search reads about `positions / 4096` words plus the ones it lands on (a
//! host with 10,000 QPs of which 8 are busy costs what a host with 8 costs).

/// A set of ring positions, searched in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Marks {
    /// Bit `i % 64` of word `i / 64`: position `i` is marked.
    words: Vec<u64>,
    /// Bit `w % 64` of word `w / 64`: `words[w]` is not zero.
    nonzero: Vec<u64>,
}

impl Marks {
    /// Room for positions `0..len` (new positions unmarked).
    #[inline]
    pub(crate) fn grow_to(&mut self, len: usize) {
        let words = len.div_ceil(64);
        if self.words.len() < words {
            self.words.resize(words, 0);
            self.nonzero.resize(words.div_ceil(64), 0);
        }
    }

    /// Marks position `i` (which must be within the room made).
    #[inline]
    pub(crate) fn set(&mut self, i: usize) {
        let w = i / 64;
        self.words[w] |= 1 << (i % 64);
        self.nonzero[w / 64] |= 1 << (w % 64);
    }

    /// Unmarks position `i`.
    #[inline]
    pub(crate) fn clear(&mut self, i: usize) {
        let w = i / 64;
        self.words[w] &= !(1 << (i % 64));
        if self.words[w] == 0 {
            self.nonzero[w / 64] &= !(1 << (w % 64));
        }
    }

    /// Whether position `i` is marked.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Sets position `i` to `on`.
    #[inline]
    pub(crate) fn put(&mut self, i: usize, on: bool) {
        if on {
            self.set(i)
        } else {
            self.clear(i)
        }
    }

    /// Room for positions `0..len` only; the marks past it are forgotten.
    pub(crate) fn truncate(&mut self, len: usize) {
        let words = len.div_ceil(64);
        self.words.truncate(words);
        if let (Some(last), 1..) = (self.words.last_mut(), len % 64) {
            *last &= (1 << (len % 64)) - 1;
        }
        self.nonzero.truncate(words.div_ceil(64));
        if let Some(top) = self.nonzero.len().checked_sub(1) {
            let first = top * 64;
            self.nonzero[top] = (first..words).filter(|&w| self.words[w] != 0).fold(0, |b, w| b | 1 << (w - first));
        }
    }

    /// The first marked position in `from..to`, if any.
    #[inline]
    pub(crate) fn next(&self, from: usize, to: usize) -> Option<usize> {
        if from >= to {
            return None;
        }
        let w = from / 64;
        let bits = self.words[w] & (!0u64 << (from % 64));
        let i = if bits != 0 {
            w * 64 + bits.trailing_zeros() as usize
        } else {
            let w = self.next_word_from(w + 1)?;
            w * 64 + self.words[w].trailing_zeros() as usize
        };
        (i < to).then_some(i)
    }

    /// The first word at or after `w` that has a mark.
    #[inline]
    fn next_word_from(&self, w: usize) -> Option<usize> {
        let mut s = w / 64;
        let mut bits = *self.nonzero.get(s)? & (!0u64 << (w % 64));
        loop {
            if bits != 0 {
                return Some(s * 64 + bits.trailing_zeros() as usize);
            }
            s += 1;
            bits = *self.nonzero.get(s)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the search must answer, checked position by position: the first marked one
    /// in `from..to`.
    fn scan(bits: &[bool], from: usize, to: usize) -> Option<usize> {
        (from..to.min(bits.len())).find(|&i| bits[i])
    }

    proptest! {
        /// Any sequence of marks and clears over up to 9,000 positions (three words of the
        /// second level), then a truncation, answers every search as a plain scan of the
        /// positions does.
        #[test]
        fn finds_what_a_scan_finds(
            len in 1usize..9000,
            ops in proptest::collection::vec((any::<bool>(), 0usize..9000), 0..400),
            queries in proptest::collection::vec((0usize..9100, 0usize..9100), 1..50),
        ) {
            let mut m = Marks::default();
            m.grow_to(len);
            let mut bits = vec![false; len];
            for (on, i) in ops {
                let i = i % len;
                m.put(i, on);
                bits[i] = on;
            }
            for &(a, b) in &queries {
                let (from, to) = (a.min(len), b.min(len));
                prop_assert_eq!(m.next(from, to), scan(&bits, from, to), "next({}, {})", from, to);
            }
            for (i, &b) in bits.iter().enumerate() {
                prop_assert_eq!(m.get(i), b);
            }
            // Cut to `cut` positions and grown back: the rest come back unmarked.
            let cut = queries[0].0 % (len + 1);
            m.truncate(cut);
            m.grow_to(len);
            bits[cut..].iter_mut().for_each(|b| *b = false);
            for (a, b) in queries {
                let (from, to) = (a.min(len), b.min(len));
                prop_assert_eq!(m.next(from, to), scan(&bits, from, to), "after truncate({}): next({}, {})", cut, from, to);
            }
        }
    }

    #[test]
    fn a_lone_mark_far_past_the_start_is_found_and_truncation_forgets_the_rest() {
        let mut m = Marks::default();
        m.grow_to(10_000);
        m.set(9_999);
        assert_eq!(m.next(0, 10_000), Some(9_999));
        assert_eq!(m.next(0, 9_999), None);
        m.set(70);
        m.set(99);
        m.set(100);
        m.set(4_200);
        m.truncate(100);
        assert_eq!(m.next(0, 100), Some(70));
        assert_eq!(m.next(71, 100), Some(99));
        m.grow_to(10_000);
        assert_eq!(m.next(100, 10_000), None, "positions past a truncation come back unmarked");
        assert_eq!(m.next(71, 10_000), Some(99));
    }
}
