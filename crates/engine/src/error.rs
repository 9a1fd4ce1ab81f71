//! Input errors that name the file, line and field, so a user can fix the input at once.

use std::fmt;

/// A problem with user input. Displays as `file:line: field: message` (parts omitted when unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    pub file: String,
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(file: &str, message: impl Into<String>) -> Self {
        InputError { file: file.to_string(), line: None, field: None, message: message.into() }
    }

    pub fn at(file: &str, line: usize, field: &str, message: impl Into<String>) -> Self {
        InputError { file: file.to_string(), line: Some(line), field: Some(field.to_string()), message: message.into() }
    }

    pub fn field(file: &str, field: &str, message: impl Into<String>) -> Self {
        InputError { file: file.to_string(), line: None, field: Some(field.to_string()), message: message.into() }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

pub type Result<T> = std::result::Result<T, InputError>;
