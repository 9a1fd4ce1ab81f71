//! A parallel plan as Megatron-Core runs it, and the checks that make it runnable.

use serde::{Deserialize, Serialize};

use super::model::Model;
use crate::error::{InputError, Result};
use crate::layout::divisors_text;
use crate::platform::Placement;
use crate::simai::build::MAX_GPUS;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    None,
    Selective,
    Full,
}

/// How data parallelism keeps gradients and optimizer state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DataParallel {
    /// All-reduce of gradients, replicated optimizer (Megatron DDP).
    Ddp,
    /// Reduce-scatter of gradients, sharded optimizer, all-gather of parameters (Megatron
    /// `--use-distributed-optimizer`, ZeRO-1-like).
    DistributedOptimizer,
    /// DeepSpeed ZeRO stages 1–3.
    Zero1,
    Zero2,
    Zero3,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Plan {
    pub gpus: u32,
    pub gpus_per_server: u32,
    pub tp: u32,
    pub pp: u32,
    /// Virtual pipeline stages (model chunks) per device; 1 = plain 1F1B.
    pub vpp: u32,
    pub ep: u32,
    pub cp: u32,
    /// Micro-batch size (sequences).
    pub mbs: u32,
    /// Global batch size (sequences).
    pub gbs: u32,
    pub seq: u64,
    /// Sequence parallelism (with TP).
    pub sp: bool,
    pub dp: DataParallel,
    pub recompute: Recompute,
    /// Uneven pipelines (Megatron's `--decoder-first/last-pipeline-num-layers`): layers of the
    /// first and last stage; the middle stages share the rest evenly.
    #[serde(default)]
    pub first_stage_layers: Option<u32>,
    #[serde(default)]
    pub last_stage_layers: Option<u32>,
}

impl Plan {
    /// Ranks on servers of `gpus_per_server` consecutive ranks.
    pub fn placement(&self) -> Placement {
        Placement::servers(self.gpus, self.gpus_per_server)
    }

    /// Data-parallel size.
    pub fn dp_size(&self) -> u32 {
        self.gpus / (self.tp * self.pp * self.cp)
    }

    /// Layers of model chunk `chunk` on pipeline stage `stage`.
    pub fn chunk_layers(&self, layers: u32, stage: u32, chunk: u32) -> std::ops::Range<u32> {
        match (self.first_stage_layers, self.last_stage_layers) {
            (None, None) => {
                let n = layers / (self.pp * self.vpp);
                (chunk * self.pp + stage) * n..(chunk * self.pp + stage + 1) * n
            }
            (f, l) => {
                let (f, l) = (f.unwrap_or(0), l.unwrap_or(0));
                let k = (layers - f - l) / (self.pp - 2).max(1);
                match stage {
                    0 => 0..f,
                    s if s == self.pp - 1 => layers - l..layers,
                    s => f + (s - 1) * k..f + s * k,
                }
            }
        }
    }

    /// Micro-batches per iteration per pipeline.
    pub fn micro_batches(&self) -> u32 {
        self.gbs / (self.mbs * self.dp_size())
    }

    /// Check the plan against the model; errors list the valid choices.
    pub fn validate(&self, m: &Model) -> Result<()> {
        m.check()?;
        let bad = |field: &str, msg: String| Err(InputError::field("plan", field, msg));
        if self.gpus > MAX_GPUS {
            return bad("gpus", format!("{} GPUs are more than clustersim simulates (at most {MAX_GPUS})", self.gpus));
        }
        for (field, v) in [
            ("gpus", self.gpus),
            ("tp", self.tp),
            ("pp", self.pp),
            ("vpp", self.vpp),
            ("ep", self.ep),
            ("cp", self.cp),
            ("mbs", self.mbs),
            ("gbs", self.gbs),
            ("gpus_per_server", self.gpus_per_server),
        ] {
            if v == 0 {
                return bad(field, "must be at least 1".into());
            }
        }
        // Layout factors at most the GPUs, batch and sequence bounded: no product below
        // overflows, and an iteration has a bounded number of micro-batches.
        for (field, v) in [("tp", self.tp), ("pp", self.pp), ("ep", self.ep), ("cp", self.cp)] {
            if v > self.gpus {
                return bad(field, format!("{v} is more than the {} GPUs", self.gpus));
            }
        }
        for (field, v, max) in [
            ("gpus_per_server", self.gpus_per_server as u64, 1 << 16),
            ("vpp", self.vpp as u64, 1 << 12),
            ("mbs", self.mbs as u64, 1 << 16),
            ("gbs", self.gbs as u64, 1 << 24),
            ("seq", self.seq, 1 << 22),
        ] {
            if v > max {
                return bad(field, format!("{v} is more than clustersim simulates (at most {max})"));
            }
        }
        let mp = self.tp as u128 * self.pp as u128 * self.cp as u128;
        if mp > self.gpus as u128 {
            return bad("gpus", format!("{} GPUs are fewer than TP×PP×CP = {mp}", self.gpus));
        }
        if !m.heads.is_multiple_of(self.tp as u64) || !m.kv_heads.is_multiple_of(self.tp as u64) && m.mla.is_none() {
            return bad(
                "tp",
                format!(
                    "TP {} must divide the {} attention heads and {} KV heads (valid: {})",
                    self.tp,
                    m.heads,
                    m.kv_heads,
                    divisors_text(gcd(m.heads, m.kv_heads))
                ),
            );
        }
        let gps = self.gpus_per_server;
        if self.tp > gps && !self.tp.is_multiple_of(gps) || self.tp < gps && !gps.is_multiple_of(self.tp) {
            return bad("tp", format!("TP {} must divide the {gps} GPUs per server or be a multiple of it (valid: {} or multiples of {gps})", self.tp, divisors_text(gps as u64)));
        }
        let mp = self.tp * self.pp * self.cp;
        if !self.gpus.is_multiple_of(mp) {
            return bad(
                "gpus",
                format!("{} GPUs are not divisible by TP×PP×CP = {mp} (valid: multiples of {mp})", self.gpus),
            );
        }
        if self.gpus > gps && !self.gpus.is_multiple_of(gps) {
            return bad("gpus", format!("{} GPUs do not fill whole servers of {gps}", self.gpus));
        }
        if self.first_stage_layers.is_some() || self.last_stage_layers.is_some() {
            let (f, l) = (self.first_stage_layers.unwrap_or(0), self.last_stage_layers.unwrap_or(0));
            let rest = m.layers.checked_sub(f + l);
            let middle = self.pp.saturating_sub(2);
            let ok = self.pp >= 2
                && self.vpp == 1
                && f >= 1
                && l >= 1
                && rest.is_some_and(|r| if middle == 0 { r == 0 } else { r.is_multiple_of(middle) && r > 0 });
            if !ok {
                return bad(
                    "first_stage_layers",
                    format!(
                        "uneven stages need PP ≥ 2, no interleaving, and the {} layers minus first ({f}) and last ({l}) to split evenly over the {middle} middle stages",
                        m.layers
                    ),
                );
            }
        } else {
            let chunks = self.pp * self.vpp;
            if !m.layers.is_multiple_of(chunks) {
                let what = if self.vpp > 1 {
                    format!("PP×VPP = {}×{} = {chunks}", self.pp, self.vpp)
                } else {
                    format!("PP {}", self.pp)
                };
                return bad(
                    "pp",
                    format!(
                        "{what} must divide the {} layers (valid PP×VPP: {}; or give the first and last stage's layers)",
                        m.layers,
                        divisors_text(m.layers as u64)
                    ),
                );
            }
        }
        if m.moe.is_some() && self.tp > 1 && !self.sp {
            return bad("sp", "Megatron runs MoE with TP only with sequence parallelism (--sp)".into());
        }
        let dp = self.dp_size();
        let unit = self.mbs as u64 * dp as u64;
        if !(self.gbs as u64).is_multiple_of(unit) {
            return bad(
                "gbs",
                format!(
                    "global batch {} is not divisible by MBS×DP = {}×{dp} = {unit} (valid: multiples of {unit})",
                    self.gbs, self.mbs
                ),
            );
        }
        if self.gbs as u64 / unit > 1 << 16 {
            let mb = self.gbs as u64 / unit;
            return bad(
                "gbs",
                format!("{mb} micro-batches per iteration are more than clustersim simulates (at most 65536)"),
            );
        }
        let mb = self.micro_batches();
        if self.vpp > 1 && !mb.is_multiple_of(self.pp) {
            return bad(
                "vpp",
                format!("interleaved schedules need the {mb} micro-batches to be a multiple of PP {}", self.pp),
            );
        }
        if self.ep > 1 {
            let Some(moe) = &m.moe else {
                return bad(
                    "ep",
                    format!("EP {} needs a mixture-of-experts model; {} is dense (valid: 1)", self.ep, m.name),
                );
            };
            if moe.experts % self.ep != 0 {
                return bad(
                    "ep",
                    format!(
                        "EP {} must divide the {} experts (valid: {})",
                        self.ep,
                        moe.experts,
                        divisors_text(moe.experts as u64)
                    ),
                );
            }
            if !dp.is_multiple_of(self.ep) {
                return bad(
                    "ep",
                    format!(
                        "EP {} must divide DP = {dp} (valid: {})",
                        self.ep,
                        divisors_text(gcd(dp as u64, moe.experts as u64))
                    ),
                );
            }
        }
        if !self.seq.is_multiple_of(2 * self.cp as u64) && self.cp > 1 {
            return bad("cp", format!("CP {} needs the sequence {} to split into 2·CP chunks", self.cp, self.seq));
        }
        if self.sp && self.tp == 1 {
            return bad("sp", "sequence parallelism needs TP > 1".into());
        }
        Ok(())
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}
