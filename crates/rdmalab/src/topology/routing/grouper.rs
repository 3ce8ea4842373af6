//! Merging the columns of consecutive destination classes into groups (see [`Grouper`]).

use super::{GROUP_BITS, INDIRECT, MAX_SPANS};
use crate::error::{Error, Result};

/// `(start, len)` into the next-hop lists.
type Span = (u32, u32);

/// Most classes in one group (a slot's index has `GROUP_BITS`).
const GROUP_MAX: usize = 1 << GROUP_BITS;
const UNIFORM: u32 = u32::MAX;

/// Merges the columns of consecutive classes into groups. A class joins the open group
/// when the rows where its column differs from the group's (made `INDIRECT`, with one span
/// per class) cost less than a column of its own would: `rows` spans. In a fat tree the
/// classes of one pod differ only at the pod's edge and aggregation switches (an edge's
/// own class is `ATTACH`, an aggregation's list is its port down to the class's edge), so
/// a group is a pod; a class of another pod differs at every core and starts a new group.
/// Which span a (row, class) gets is never changed, only where it is stored.
pub(super) struct Grouper {
    rows: usize,
    /// Every class its own group (a table small enough to be dense).
    dense: bool,
    /// The open group's column (its first class's).
    base: Vec<(u32, u32)>,
    /// Classes in the open group (0: none open).
    members: usize,
    /// Rows that differ within the open group, and per row its index there (`UNIFORM`).
    irregular: Vec<u32>,
    index_of: Vec<u32>,
    /// Per irregular row, its span for each class of the open group.
    spans: Vec<Vec<(u32, u32)>>,
    n_groups: usize,
    /// The closed groups' cells, one column of `rows` after another.
    by_group: Vec<(u32, u32)>,
    sub: Vec<(u32, u32)>,
}

impl Grouper {
    pub(super) fn new(rows: usize, dense: bool) -> Grouper {
        Grouper {
            rows,
            dense,
            base: vec![(0, 0); rows],
            members: 0,
            irregular: Vec::new(),
            index_of: vec![UNIFORM; rows],
            spans: Vec::new(),
            n_groups: 0,
            by_group: Vec::new(),
            sub: Vec::new(),
        }
    }

    /// Takes the next class's column; returns the class's slot (group and index).
    pub(super) fn add(&mut self, column: &[(u32, u32)]) -> Result<u32> {
        if self.members > 0 && self.members < GROUP_MAX && !self.dense && self.joins(column) {
            for (r, &span) in column.iter().enumerate() {
                match self.index_of[r] {
                    UNIFORM if span == self.base[r] => {}
                    UNIFORM => {
                        self.index_of[r] = self.spans.len() as u32;
                        self.irregular.push(r as u32);
                        let mut each = vec![self.base[r]; self.members];
                        each.push(span);
                        self.spans.push(each);
                    }
                    i => self.spans[i as usize].push(span),
                }
            }
            self.members += 1;
            return Ok(((self.n_groups - 1) << GROUP_BITS | (self.members - 1)) as u32);
        }
        self.close();
        let size = (self.n_groups + 1).saturating_mul(self.rows).saturating_add(self.sub.len());
        if self.n_groups >= 1 << (32 - GROUP_BITS) || size > MAX_SPANS {
            return Err(Error::Topology(format!(
                "{} switches x {} destination groups (hosts on distinct switches) is too large for the routing \
                 table (limit {} entries)",
                self.rows,
                self.n_groups + 1,
                MAX_SPANS
            )));
        }
        self.base.copy_from_slice(column);
        self.members = 1;
        self.n_groups += 1;
        Ok(((self.n_groups - 1) << GROUP_BITS) as u32)
    }

    /// `add` for a column that differs from the previous one (the last passed to `add` or
    /// here, in the same buffer) at most in the rows `changed` (ascending, no repeats):
    /// the same slot and the same table as `add(column)`, in time that grows with the
    /// changed and irregular rows instead of all rows, since a row outside `changed` that
    /// is uniform in the open group still equals its base.
    pub(super) fn add_changed(&mut self, column: &[(u32, u32)], changed: &[u32]) -> Result<u32> {
        debug_assert!(changed.windows(2).all(|w| w[0] < w[1]));
        let newly = changed
            .iter()
            .filter(|&&r| self.index_of[r as usize] == UNIFORM && column[r as usize] != self.base[r as usize])
            .count();
        let joins = newly * (self.members + 1) + self.irregular.len() < self.rows;
        if self.members == 0 || self.members >= GROUP_MAX || self.dense || !joins {
            return self.add(column);
        }
        for (&r, each) in self.irregular.iter().zip(&mut self.spans) {
            each.push(column[r as usize]);
        }
        for &r in changed {
            let (r, span) = (r as usize, column[r as usize]);
            if self.index_of[r] == UNIFORM && span != self.base[r] {
                self.index_of[r] = self.spans.len() as u32;
                self.irregular.push(r as u32);
                let mut each = vec![self.base[r]; self.members];
                each.push(span);
                self.spans.push(each);
            }
        }
        self.members += 1;
        Ok(((self.n_groups - 1) << GROUP_BITS | (self.members - 1)) as u32)
    }

    /// Whether joining the open group costs fewer spans than a column of its own.
    fn joins(&self, column: &[(u32, u32)]) -> bool {
        let newly = column
            .iter()
            .zip(&self.base)
            .zip(&self.index_of)
            .filter(|&((span, base), &i)| i == UNIFORM && span != base)
            .count();
        newly * (self.members + 1) + self.irregular.len() < self.rows
    }

    /// Stores the open group's column: its uniform rows' spans, `INDIRECT` for the others.
    pub(super) fn close(&mut self) {
        if self.members == 0 {
            return;
        }
        let at = self.by_group.len();
        self.by_group.extend_from_slice(&self.base);
        for (&r, each) in self.irregular.iter().zip(&self.spans) {
            self.by_group[at + r as usize] = (self.sub.len() as u32, INDIRECT);
            self.sub.extend_from_slice(each);
            self.index_of[r as usize] = UNIFORM;
        }
        self.irregular.clear();
        self.spans.clear();
        self.members = 0;
    }

    /// `(groups, cells row-major, sub)`.
    pub(super) fn into_table(self) -> (usize, Vec<Span>, Vec<Span>) {
        let (rows, ng) = (self.rows, self.n_groups);
        let mut cells = vec![(0, 0); rows * ng];
        for (g, column) in self.by_group.chunks_exact(rows.max(1)).enumerate() {
            for (r, &span) in column.iter().enumerate() {
                cells[r * ng + g] = span;
            }
        }
        (ng, cells, self.sub)
    }
}
