//! A mechanism's own result table: a name, typed columns and the key columns that order its
//! rows. One path carries every such table out of a run (`Mechanisms::tables` → `Results::
//! tables` → the bindings' `tables` dict → `res.<name>` in Python and `<name>.parquet` in a
//! sweep's store), so that a new mechanism adds a table without editing that path.
//!
//! A parallel run's partitions each emit their part of a table; `merge` joins the parts and
//! orders the rows by the key columns (stable: rows with equal keys keep the partitions'
//! order), which is the order one simulation writes them in.
//!
//! ```
//! use rdmalab::stats::table::Table;
//! let a = Table::new("occupancy", &["window_start_ps", "switch"])
//!     .u64("window_start_ps", vec![0, 100])
//!     .u64("switch", vec![3, 3])
//!     .f64("mean_bytes", vec![1.5, 2.0]);
//! let b = Table::new("occupancy", &["window_start_ps", "switch"])
//!     .u64("window_start_ps", vec![0])
//!     .u64("switch", vec![1])
//!     .f64("mean_bytes", vec![4.0]);
//! let m = Table::merge(vec![a, b]).expect("two parts").expect("same columns");
//! assert_eq!(m.column("switch").and_then(|c| c.as_u64()), Some(&[1, 3, 3][..]));
//! assert_eq!(m.column("mean_bytes").and_then(|c| c.as_f64()), Some(&[4.0, 1.5, 2.0][..]));
//! ```

use crate::error::{Error, Result};

/// How a schema column reaches Python: an integer of a given width, a float, or a time in
/// picoseconds (`<base>_ps` in the engine, read in Python as `<base>_ns`, a float).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnKind {
    /// An unsigned 16-bit integer.
    U16,
    /// An unsigned 32-bit integer (ids, counts that fit).
    U32,
    /// An unsigned 64-bit integer.
    U64,
    /// A 64-bit float.
    F64,
    /// A time in ps (the column's name ends in `_ps`).
    Ps,
}

impl ColumnKind {
    /// Its name in the bindings' schema list (`rdmalab._core.table_schemas()`).
    pub fn name(self) -> &'static str {
        match self {
            ColumnKind::U16 => "u16",
            ColumnKind::U32 => "u32",
            ColumnKind::U64 => "u64",
            ColumnKind::F64 => "f64",
            ColumnKind::Ps => "ps",
        }
    }
}

/// A mechanism table's fixed shape, known before any run: its name and its columns in the
/// order Python shows them. Python builds a run's empty frame from it when the mechanism is
/// off (`rdmalab._core.table_schemas()`), so a new table edits nothing on its way out.
#[derive(Clone, Copy, Debug)]
pub struct TableSchema {
    /// The table's name (`res.<name>`, `<name>.parquet`).
    pub name: &'static str,
    /// Its columns with their kinds, in Python's order.
    pub columns: &'static [(&'static str, ColumnKind)],
}

/// One typed column.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// Unsigned integers (counts, bytes, times in ps, ids).
    U64(Vec<u64>),
    /// Floating point values.
    F64(Vec<f64>),
    /// Text.
    Text(Vec<String>),
}

impl Column {
    /// Its number of rows.
    pub fn len(&self) -> usize {
        match self {
            Column::U64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Text(v) => v.len(),
        }
    }

    /// It has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values, when the column holds integers.
    pub fn as_u64(&self) -> Option<&[u64]> {
        if let Column::U64(v) = self {
            Some(v)
        } else {
            None
        }
    }

    /// The values, when the column holds floats.
    pub fn as_f64(&self) -> Option<&[f64]> {
        if let Column::F64(v) = self {
            Some(v)
        } else {
            None
        }
    }

    /// An empty column of the same type.
    fn empty_like(&self) -> Column {
        match self {
            Column::U64(_) => Column::U64(Vec::new()),
            Column::F64(_) => Column::F64(Vec::new()),
            Column::Text(_) => Column::Text(Vec::new()),
        }
    }

    /// Appends row `i` of `other` (of the same type).
    fn push_from(&mut self, other: &Column, i: usize) {
        match (self, other) {
            (Column::U64(a), Column::U64(b)) => a.push(b[i]),
            (Column::F64(a), Column::F64(b)) => a.push(b[i]),
            (Column::Text(a), Column::Text(b)) => a.push(b[i].clone()),
            _ => unreachable!("merge checks the types first"),
        }
    }

    fn type_name(&self) -> &'static str {
        match self {
            Column::U64(_) => "u64",
            Column::F64(_) => "f64",
            Column::Text(_) => "text",
        }
    }
}

/// A named table of typed columns, ordered by its key columns (u64 columns named in `keys`).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The table's name: `res.<name>` in Python, `<name>.parquet` in a store.
    pub name: String,
    /// The key columns, most significant first.
    pub keys: Vec<String>,
    /// The columns, in the order they were added.
    pub columns: Vec<(String, Column)>,
}

impl TableSchema {
    /// `t` is this table: the same name and the same column names (in any order).
    pub fn matches(&self, t: &Table) -> bool {
        let mut ours: Vec<&str> = self.columns.iter().map(|(n, _)| *n).collect();
        let mut theirs: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
        ours.sort_unstable();
        theirs.sort_unstable();
        self.name == t.name && ours == theirs
    }
}

impl Table {
    /// An empty table whose rows are ordered by `keys` (columns added later).
    pub fn new(name: &str, keys: &[&str]) -> Table {
        Table { name: name.into(), keys: keys.iter().map(|k| k.to_string()).collect(), columns: Vec::new() }
    }

    /// Adds an integer column.
    pub fn u64(self, name: &str, values: Vec<u64>) -> Table {
        self.with(name, Column::U64(values))
    }

    /// Adds a float column.
    pub fn f64(self, name: &str, values: Vec<f64>) -> Table {
        self.with(name, Column::F64(values))
    }

    /// Adds a text column.
    pub fn text(self, name: &str, values: Vec<String>) -> Table {
        self.with(name, Column::Text(values))
    }

    fn with(mut self, name: &str, column: Column) -> Table {
        self.columns.push((name.into(), column));
        self
    }

    /// The column named `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    /// Its number of rows (that of its first column).
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    /// Every column has as many rows as the first, and every key is a u64 column.
    pub fn check(&self) -> Result<()> {
        let n = self.rows();
        if let Some((name, c)) = self.columns.iter().find(|(_, c)| c.len() != n) {
            return Err(Error::Invariant(format!("table {}: column {name} has {} rows, not {n}", self.name, c.len())));
        }
        for k in &self.keys {
            if self.column(k).and_then(Column::as_u64).is_none() {
                return Err(Error::Invariant(format!("table {}: key {k} is not a u64 column", self.name)));
            }
        }
        Ok(())
    }

    /// The parts of one table (a parallel run's partitions, in partition order) as one,
    /// its rows ordered by the key columns; rows with equal keys keep the parts' order.
    /// `None` for no parts; an error when the parts' names or columns differ.
    pub fn merge(parts: Vec<Table>) -> Option<Result<Table>> {
        let mut parts = parts.into_iter();
        let first = parts.next()?;
        let rest: Vec<Table> = parts.collect();
        Some(Table::merge_into(first, rest))
    }

    fn merge_into(first: Table, rest: Vec<Table>) -> Result<Table> {
        first.check()?;
        let shape = |t: &Table| -> Vec<(String, &'static str)> {
            t.columns.iter().map(|(n, c)| (n.clone(), c.type_name())).collect()
        };
        for t in &rest {
            t.check()?;
            if t.name != first.name || t.keys != first.keys || shape(t) != shape(&first) {
                return Err(Error::Invariant(format!("table {}: partitions disagree on its columns", first.name)));
            }
        }
        let all: Vec<&Table> = std::iter::once(&first).chain(&rest).collect();
        // (part, row) of every row, sorted by the key columns (a stable sort).
        let mut order: Vec<(usize, usize)> =
            all.iter().enumerate().flat_map(|(p, t)| (0..t.rows()).map(move |i| (p, i))).collect();
        let key_cols: Vec<Vec<&[u64]>> = all
            .iter()
            .map(|t| t.keys.iter().map(|k| t.column(k).and_then(Column::as_u64).unwrap_or(&[])).collect())
            .collect();
        order.sort_by(|&(pa, a), &(pb, b)| {
            let ka = key_cols[pa].iter().map(|c| c[a]);
            let kb = key_cols[pb].iter().map(|c| c[b]);
            ka.cmp(kb)
        });
        let mut columns: Vec<(String, Column)> =
            first.columns.iter().map(|(n, c)| (n.clone(), c.empty_like())).collect();
        for &(p, i) in &order {
            for (k, (_, col)) in columns.iter_mut().enumerate() {
                col.push_from(&all[p].columns[k].1, i);
            }
        }
        Ok(Table { name: first.name, keys: first.keys, columns })
    }
}

/// Every table of a run's parts merged by name: `parts[p]` is partition `p`'s tables. The
/// result keeps the order in which the parts list them.
pub fn merge_by_name(parts: Vec<Vec<Table>>) -> Result<Vec<Table>> {
    // In the order the tables first appear: every partition emits them in the registry's
    // order (`Mechanisms::tables`), so the merged run lists them as one simulation does.
    let mut by_name: Vec<(String, Vec<Table>)> = Vec::new();
    for t in parts.into_iter().flatten() {
        match by_name.iter_mut().find(|(n, _)| *n == t.name) {
            Some((_, same)) => same.push(t),
            None => by_name.push((t.name.clone(), vec![t])),
        }
    }
    by_name.into_iter().filter_map(|(_, same)| Table::merge(same)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(windows: Vec<u64>, switches: Vec<u64>, bytes: Vec<u64>) -> Table {
        Table::new("t", &["w", "s"]).u64("w", windows).u64("s", switches).u64("bytes", bytes)
    }

    #[test]
    fn merge_orders_rows_by_the_keys_and_keeps_ties_in_part_order() {
        let a = part(vec![0, 0, 10], vec![2, 5, 2], vec![1, 2, 3]);
        let b = part(vec![0, 10, 10], vec![2, 1, 2], vec![4, 5, 6]);
        let m = Table::merge(vec![a, b]).unwrap().unwrap();
        let col = |n: &str| m.column(n).and_then(Column::as_u64).unwrap().to_vec();
        assert_eq!(col("w"), vec![0, 0, 0, 10, 10, 10]);
        assert_eq!(col("s"), vec![2, 2, 5, 1, 2, 2]);
        // The two (0, 2) rows and the two (10, 2) rows: part a's first.
        assert_eq!(col("bytes"), vec![1, 4, 2, 5, 3, 6]);
    }

    #[test]
    fn merge_refuses_parts_that_disagree_and_ragged_columns() {
        let a = part(vec![0], vec![1], vec![1]);
        let b = Table::new("t", &["w", "s"]).u64("w", vec![0]).u64("s", vec![1]).f64("bytes", vec![1.0]);
        assert!(Table::merge(vec![a.clone(), b]).unwrap().is_err());
        let ragged = part(vec![0, 1], vec![1], vec![1]);
        assert!(ragged.check().is_err());
        let float_key = Table::new("t", &["w"]).f64("w", vec![0.5]);
        assert!(float_key.check().is_err());
        assert!(Table::merge(Vec::new()).is_none());
    }

    #[test]
    fn merge_by_name_groups_each_table() {
        let x = |n: &str, v: u64| Table::new(n, &["k"]).u64("k", vec![v]);
        let m = merge_by_name(vec![vec![x("b", 2), x("a", 9)], vec![x("a", 1)]]).unwrap();
        let names: Vec<&str> = m.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["b", "a"], "in the order the parts list them, as one simulation does");
        assert_eq!(m[1].column("k").and_then(Column::as_u64), Some(&[1, 9][..]));
    }
}
