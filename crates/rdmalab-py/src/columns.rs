//! Records as a dict of columns, the one shape every table takes on its way to Python:
//! numbers become NumPy arrays (u64, i64 or f64), text and flags plain lists.

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Columns over `rows`, written into one dict.
pub struct Columns<'py, 'r, T> {
    dict: Bound<'py, PyDict>,
    rows: &'r [T],
}

impl<'py, 'r, T> Columns<'py, 'r, T> {
    /// Columns into a new dict.
    pub fn new(py: Python<'py>, rows: &'r [T]) -> Self {
        Columns { dict: PyDict::new(py), rows }
    }

    /// Columns added to `dict` (beside what it already holds).
    pub fn onto(dict: &Bound<'py, PyDict>, rows: &'r [T]) -> Self {
        Columns { dict: dict.clone(), rows }
    }

    /// A uint64 array.
    pub fn u64(&self, name: &str, f: impl Fn(&T) -> u64) -> PyResult<&Self> {
        self.array(name, f)
    }

    /// An int64 array.
    pub fn i64(&self, name: &str, f: impl Fn(&T) -> i64) -> PyResult<&Self> {
        self.array(name, f)
    }

    /// A float64 array.
    pub fn f64(&self, name: &str, f: impl Fn(&T) -> f64) -> PyResult<&Self> {
        self.array(name, f)
    }

    /// A list (strings, bools).
    pub fn list<V: for<'a> IntoPyObject<'a>>(&self, name: &str, f: impl Fn(&T) -> V) -> PyResult<&Self> {
        self.dict.set_item(name, self.rows.iter().map(f).collect::<Vec<V>>())?;
        Ok(self)
    }

    /// An array of any NumPy element type (bool included).
    pub fn array<V: numpy::Element>(&self, name: &str, f: impl Fn(&T) -> V) -> PyResult<&Self> {
        let col: Vec<V> = self.rows.iter().map(f).collect();
        self.dict.set_item(name, col.into_pyarray(self.dict.py()))?;
        Ok(self)
    }

    /// The dict.
    pub fn dict(&self) -> Bound<'py, PyDict> {
        self.dict.clone()
    }
}
