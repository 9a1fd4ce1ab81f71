//! GPU generations, for NCCL's per-generation limits (the collective layer's tuning tables).

use serde::{Deserialize, Serialize};

/// GPU generations, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    Volta,
    Ampere,
    Hopper,
    Blackwell,
}

impl Arch {
    pub const NAMES: &'static str = "volta, ampere, hopper, blackwell";

    pub fn parse(text: &str) -> Option<Arch> {
        match text.to_ascii_lowercase().as_str() {
            "volta" => Some(Arch::Volta),
            "ampere" => Some(Arch::Ampere),
            "hopper" => Some(Arch::Hopper),
            "blackwell" => Some(Arch::Blackwell),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Arch::Volta => "volta",
            Arch::Ampere => "ampere",
            Arch::Hopper => "hopper",
            Arch::Blackwell => "blackwell",
        }
    }
}
