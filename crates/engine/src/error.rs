//! Errors, split by whose fault they are.
//!
//! An *input* error is something the user can fix: it names the file, line and field. An
//! *internal* error is an engine invariant that broke (a schedule naming a rank outside its
//! group, an executor state that cannot happen): a bug in clustersim, never blamed on the input.
//! Front ends report them differently (exit 2 vs 70, EX_SOFTWARE).

use std::fmt;

/// Whose fault an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad user input.
    Input,
    /// A broken engine invariant: a bug.
    Internal,
}

/// An error of the engine. Input errors display as `file:line: field: message` (parts omitted
/// when unknown); internal ones as `internal error in <where>: message`.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: Kind,
    /// The input file (input errors), or the engine part whose invariant broke (internal).
    pub file: String,
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

/// The name most of the engine uses: every constructor below except [`Error::internal`] makes
/// an input error.
pub type InputError = Error;

impl Error {
    pub fn new(file: &str, message: impl Into<String>) -> Self {
        Error { kind: Kind::Input, file: file.to_string(), line: None, field: None, message: message.into() }
    }

    pub fn at(file: &str, line: usize, field: &str, message: impl Into<String>) -> Self {
        Error { line: Some(line), field: Some(field.to_string()), ..Error::new(file, message) }
    }

    pub fn field(file: &str, field: &str, message: impl Into<String>) -> Self {
        Error { field: Some(field.to_string()), ..Error::new(file, message) }
    }

    /// A broken invariant in engine part `place` (e.g. "executor"): a bug, not bad input.
    pub fn internal(place: &str, message: impl Into<String>) -> Self {
        Error { kind: Kind::Internal, ..Error::new(place, message) }
    }

    pub fn is_internal(&self) -> bool {
        self.kind == Kind::Internal
    }
}

/// Text on one line: control characters and Unicode line breaks (which a message may quote
/// from the input) escaped as `\r`, `\u{2028}`, ….
struct OneLine<'a>(&'a str);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_internal() {
            return write!(f, "internal error in {}: {}", OneLine(&self.file), OneLine(&self.message));
        }
        write!(f, "{}", OneLine(&self.file))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {}", OneLine(field))?;
        }
        write!(f, ": {}", OneLine(&self.message))
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_and_internal_errors_display_apart() {
        let e = InputError::at("w.txt", 3, "bytes", "must be a number");
        assert_eq!((e.to_string(), e.is_internal()), ("w.txt:3: bytes: must be a number".into(), false));
        let e = Error::internal("executor", "op 3 finished twice");
        assert_eq!((e.to_string(), e.is_internal()), ("internal error in executor: op 3 finished twice".into(), true));
    }

    #[test]
    fn a_message_quoting_line_breaks_stays_on_one_line() {
        // Found by fuzzing busbw.yaml: a lone CR inside a line was quoted as is.
        let e = InputError::at("b.yaml", 2, "t\r5", "expected 'key: value', got 'a\u{2028}b\u{85}'");
        assert_eq!(e.to_string(), "b.yaml:2: t\\r5: expected 'key: value', got 'a\\u{2028}b\\u{85}'");
    }
}
