//! Typed errors. Every user-facing failure names its source: file, line and field for
//! input files; the offending field for scenarios.

use std::path::PathBuf;

/// Where in an input a problem was found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// File the input came from (`<memory>` when built in code).
    pub file: PathBuf,
    /// 1-based line number, 0 when not applicable.
    pub line: usize,
    /// The field (column name or config key).
    pub field: String,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: field `{}`", self.file.display(), self.line, self.field)
        } else {
            write!(f, "{}: field `{}`", self.file.display(), self.field)
        }
    }
}

/// Everything that can go wrong in rdmalab.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file or string could not be parsed or holds an invalid value.
    #[error("{loc}: {msg}")]
    Input {
        /// Where.
        loc: Location,
        /// What is wrong.
        msg: String,
    },
    /// An I/O error on a named file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A topology that cannot be simulated (disconnected, zero-rate link, ...).
    #[error("topology: {0}")]
    Topology(String),
    /// A scenario that is inconsistent (unknown host, flow to itself, ...).
    #[error("scenario: {field}: {msg}")]
    Scenario {
        /// The offending field.
        field: String,
        /// What is wrong.
        msg: String,
    },
    /// A physical invariant was violated during a run (a bug, reported loudly).
    #[error("invariant violated: {0}")]
    Invariant(String),
    /// An invalid input to the DRUM solver (shape, sign, NaN, unsupported model form).
    #[error("drum: {field}: {msg}")]
    Drum {
        /// The offending argument.
        field: String,
        /// What is wrong, and why it matters.
        msg: String,
    },
    /// A feature that exists in the input format but is not implemented yet.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl Error {
    /// Shorthand for an input error.
    pub fn input(file: impl Into<PathBuf>, line: usize, field: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Input { loc: Location { file: file.into(), line, field: field.into() }, msg: msg.into() }
    }
    /// Shorthand for a DRUM solver input error.
    pub fn drum(field: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Drum { field: field.into(), msg: msg.into() }
    }
    /// Shorthand for a scenario error.
    pub fn scenario(field: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Scenario { field: field.into(), msg: msg.into() }
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;
