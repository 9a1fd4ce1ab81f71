//! SimAI compatibility: workload files, their execution semantics, and the EndToEnd report.

pub mod build;
pub mod file;
pub mod report;
pub mod run;
