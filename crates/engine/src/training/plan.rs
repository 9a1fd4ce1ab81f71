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
    /// first and last stage; the stages not given share the rest evenly.
    #[serde(default)]
    pub first_stage_layers: Option<u32>,
    #[serde(default)]
    pub last_stage_layers: Option<u32>,
    /// Megatron-Core's `--account-for-embedding/loss-in-pipeline-split`.
    #[serde(default)]
    pub account_for: AccountFor,
}

/// Megatron-Core's `--account-for-embedding-in-pipeline-split` and
/// `--account-for-loss-in-pipeline-split`: the embedding (the loss) counts as one layer of the
/// even split, so the first stage's first chunk (the last stage's last chunk) builds one
/// transformer layer fewer. Llama 3 405B's set-up: 126 layers + 2 on PP 16 × VPP 8 chunks of one,
/// the first chunk holding only the embedding and the last only the output and loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct AccountFor {
    #[serde(default)]
    pub embedding: bool,
    #[serde(default)]
    pub loss: bool,
}

impl Plan {
    /// Ranks on servers of `gpus_per_server` consecutive ranks.
    pub fn placement(&self) -> Placement {
        Placement::servers(self.gpus, self.gpus_per_server)
    }

    /// How ranks map to parallel coordinates: Megatron-Core's tp-cp-ep-dp-pp.
    pub fn layout(&self) -> crate::layout::Layout {
        crate::layout::Layout::megatron(self.tp, self.cp, self.ep, self.dp_size() / self.ep, self.pp)
    }

    /// Data-parallel size.
    pub fn dp_size(&self) -> u32 {
        self.gpus / (self.tp * self.pp * self.cp)
    }

    /// Layers of model chunk `chunk` on pipeline stage `stage`: Megatron-Core's
    /// `get_transformer_layer_offset` and `get_num_layers_to_build`. Chunk c of every stage
    /// comes before chunk c + 1 of any stage, and each stage's layers split evenly over its
    /// chunks. In "split layers" (the transformer layers, preceded by the embedding and followed
    /// by the loss where they count, [`AccountFor`]) stage s's chunk c starts at c·n/v plus the
    /// chunks of the stages before s, and the layers are those split layers shifted by the
    /// embedding and clipped to the model.
    pub fn chunk_layers(&self, layers: u32, stage: u32, chunk: u32) -> std::ops::Range<u32> {
        let (first, middle, last) = self.stage_split(layers);
        let v = self.vpp;
        let size = match stage {
            0 => first,
            s if s + 1 == self.pp => last,
            _ => middle,
        } / v;
        let before = if stage == 0 { 0 } else { first / v + (stage - 1) * (middle / v) };
        let round = match self.pp {
            1 => first / v,
            p => first / v + (p - 2) * (middle / v) + last / v,
        };
        let start = chunk * round + before;
        let e = self.account_for.embedding as u32;
        let clip = |x: u32| x.saturating_sub(e).min(layers);
        clip(start)..clip(start + size)
    }

    /// Split layers (transformer layers, and the embedding and loss where they count) of the
    /// first, each middle and the last stage (at PP 1 the first).
    fn stage_split(&self, layers: u32) -> (u32, u32, u32) {
        let (f, l) = (self.first_stage_layers, self.last_stage_layers);
        if f.is_none() && l.is_none() {
            let n = (layers + self.account_for.embedding as u32 + self.account_for.loss as u32) / self.pp;
            return (n, n, n);
        }
        // The stages given are taken out; the others share the rest (Megatron-Core counts an
        // end stage not given as a middle one).
        let given = f.is_some() as u32 + l.is_some() as u32;
        let rest = layers.saturating_sub(f.unwrap_or(0).saturating_add(l.unwrap_or(0)));
        let middle = rest / self.pp.saturating_sub(given).max(1);
        (f.unwrap_or(middle), middle, l.unwrap_or(middle))
    }

    /// Layers on pipeline stage `stage`, all chunks.
    pub fn stage_layers(&self, layers: u32, stage: u32) -> u32 {
        (0..self.vpp).map(|c| self.chunk_layers(layers, stage, c).len() as u32).sum()
    }

    /// Tokens one iteration trains on (global batch × sequence): what tokens/s counts.
    pub fn tokens(&self) -> f64 {
        self.gbs as f64 * self.seq as f64
    }

    /// Micro-batches per iteration per pipeline.
    pub fn micro_batches(&self) -> u32 {
        self.gbs / (self.mbs * self.dp_size())
    }

    /// Check the plan against the model; errors list the valid choices.
    pub fn validate(&self, m: &Model) -> Result<()> {
        self.check(m, true)
    }

    /// Whether [`Plan::validate`] accepts the plan, without writing the message of a rejection:
    /// a search rejects most of the candidates it visits and never shows why (formatting those
    /// messages was a fifth of a search's time).
    pub fn is_valid(&self, m: &Model) -> bool {
        self.check(m, false).is_ok()
    }

    /// [`Plan::validate`]'s rules, one definition; a rejection's message is written only if
    /// `explain`.
    fn check(&self, m: &Model, explain: bool) -> Result<()> {
        m.check()?;
        let bad = |field: &str, msg: &dyn Fn() -> String| {
            Err(InputError::field("plan", field, if explain { msg() } else { String::new() }))
        };
        if self.gpus > MAX_GPUS {
            return bad("gpus", &|| {
                format!("{} GPUs are more than clustersim simulates (at most {MAX_GPUS})", self.gpus)
            });
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
                return bad(field, &|| "must be at least 1".into());
            }
        }
        // Layout factors at most the GPUs, batch and sequence bounded: no product below
        // overflows, and an iteration has a bounded number of micro-batches.
        for (field, v) in [("tp", self.tp), ("pp", self.pp), ("ep", self.ep), ("cp", self.cp)] {
            if v > self.gpus {
                return bad(field, &|| format!("{v} is more than the {} GPUs", self.gpus));
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
                return bad(field, &|| format!("{v} is more than clustersim simulates (at most {max})"));
            }
        }
        let mp = self.tp as u128 * self.pp as u128 * self.cp as u128;
        if mp > self.gpus as u128 {
            return bad("gpus", &|| format!("{} GPUs are fewer than TP×PP×CP = {mp}", self.gpus));
        }
        if !m.heads.is_multiple_of(self.tp as u64) || !m.kv_heads.is_multiple_of(self.tp as u64) && m.mla.is_none() {
            return bad("tp", &|| {
                format!(
                    "TP {} must divide the {} attention heads and {} KV heads (valid: {})",
                    self.tp,
                    m.heads,
                    m.kv_heads,
                    divisors_text(gcd(m.heads, m.kv_heads))
                )
            });
        }
        let gps = self.gpus_per_server;
        if self.tp > gps && !self.tp.is_multiple_of(gps) || self.tp < gps && !gps.is_multiple_of(self.tp) {
            return bad("tp", &|| {
                format!("TP {} must divide the {gps} GPUs per server or be a multiple of it (valid: {} or multiples of {gps})", self.tp, divisors_text(gps as u64))
            });
        }
        let mp = self.tp * self.pp * self.cp;
        if !self.gpus.is_multiple_of(mp) {
            return bad("gpus", &|| {
                format!("{} GPUs are not divisible by TP×PP×CP = {mp} (valid: multiples of {mp})", self.gpus)
            });
        }
        if self.gpus > gps && !self.gpus.is_multiple_of(gps) {
            return bad("gpus", &|| format!("{} GPUs do not fill whole servers of {gps}", self.gpus));
        }
        self.check_split(m, explain)?;
        // Megatron's ColumnParallelLinear splits the FFN width over TP (and Megatron-Core's
        // experts over expert TP, which defaults to TP).
        let widths = [("ffn", m.ffn), ("moe.expert_ffn", m.moe.as_ref().map_or(0, |e| e.expert_ffn))];
        if let Some((what, w)) = widths.into_iter().find(|&(_, w)| !w.is_multiple_of(self.tp as u64)) {
            return bad("tp", &|| {
                format!(
                    "TP {} must divide the model's {what} width {w} (Megatron splits it over TP; valid: {})",
                    self.tp,
                    divisors_text(gcd(gcd(m.heads, m.kv_heads), w))
                )
            });
        }
        if m.moe.is_some() && self.tp > 1 && !self.sp {
            return bad("sp", &|| "Megatron runs MoE with TP only with sequence parallelism (--sp)".into());
        }
        let dp = self.dp_size();
        let unit = self.mbs as u64 * dp as u64;
        if !(self.gbs as u64).is_multiple_of(unit) {
            return bad("gbs", &|| {
                format!(
                    "global batch {} is not divisible by MBS×DP = {}×{dp} = {unit} (valid: multiples of {unit})",
                    self.gbs, self.mbs
                )
            });
        }
        if self.gbs as u64 / unit > 1 << 16 {
            let mb = self.gbs as u64 / unit;
            return bad("gbs", &|| {
                format!("{mb} micro-batches per iteration are more than clustersim simulates (at most 65536)")
            });
        }
        let mb = self.micro_batches();
        if self.vpp > 1 && !mb.is_multiple_of(self.pp) {
            return bad("vpp", &|| {
                format!("interleaved schedules need the {mb} micro-batches to be a multiple of PP {}", self.pp)
            });
        }
        if self.ep > 1 {
            let Some(moe) = &m.moe else {
                return bad("ep", &|| {
                    format!("EP {} needs a mixture-of-experts model; {} is dense (valid: 1)", self.ep, m.name)
                });
            };
            if moe.experts % self.ep != 0 {
                return bad("ep", &|| {
                    format!(
                        "EP {} must divide the {} experts (valid: {})",
                        self.ep,
                        moe.experts,
                        divisors_text(moe.experts as u64)
                    )
                });
            }
            if !dp.is_multiple_of(self.ep) {
                return bad("ep", &|| {
                    format!(
                        "EP {} must divide DP = {dp} (valid: {})",
                        self.ep,
                        divisors_text(gcd(dp as u64, moe.experts as u64))
                    )
                });
            }
        }
        if !self.seq.is_multiple_of(2 * self.cp as u64) && self.cp > 1 {
            return bad("cp", &|| format!("CP {} needs the sequence {} to split into 2·CP chunks", self.cp, self.seq));
        }
        if self.sp && self.tp == 1 {
            // Megatron switches it off with a warning; clustersim's Python side does the same.
            return bad("sp", &|| "sequence parallelism needs TP > 1 (Megatron switches it off at TP 1)".into());
        }
        Ok(())
    }
}

impl Plan {
    /// Megatron-Core's rules for the layer split (TransformerConfig's uneven-pipeline and
    /// account-for checks, arguments.py's VPP checks), [`Plan::chunk_layers`]'s preconditions.
    fn check_split(&self, m: &Model, explain: bool) -> Result<()> {
        let bad = |field: &str, msg: &dyn Fn() -> String| {
            Err(InputError::field("plan", field, if explain { msg() } else { String::new() }))
        };
        let (p, v, layers) = (self.pp, self.vpp, m.layers);
        let (f, l) = (self.first_stage_layers, self.last_stage_layers);
        let AccountFor { embedding, loss } = self.account_for;
        if v > 1 && p == 1 {
            return bad("vpp", &|| format!("interleaving (VPP {v}) needs PP > 1, as in Megatron"));
        }
        if f.is_none() && l.is_none() {
            let n = layers + embedding as u32 + loss as u32;
            let chunks = p * v;
            if n.is_multiple_of(chunks) {
                return Ok(());
            }
            let what = if v > 1 { format!("PP×VPP = {p}×{v} = {chunks}") } else { format!("PP {p}") };
            return bad("pp", &|| {
                match (embedding, loss) {
                (false, false) => format!(
                    "{what} must divide the {layers} layers (valid PP×VPP: {}; or give the first and last stage's layers)",
                    divisors_text(layers as u64)
                ),
                _ => format!(
                    "{what} must divide the {layers} layers plus the {} counted by --account-for-*-in-pipeline-split ({n}; valid PP×VPP: {})",
                    if embedding && loss { "embedding and loss" } else if embedding { "embedding" } else { "loss" },
                    divisors_text(n as u64)
                ),
            }
            });
        }
        if embedding || loss {
            return bad("account_for", &|| {
                "--account-for-embedding/loss-in-pipeline-split cannot be combined with --first-stage-layers / --last-stage-layers (Megatron-Core refuses it)".into()
            });
        }
        if p < 2 {
            return bad("first_stage_layers", &|| {
                format!("--first-stage-layers / --last-stage-layers need PP ≥ 2, not {p}")
            });
        }
        for (field, flag, n) in
            [("first_stage_layers", "--first-stage-layers", f), ("last_stage_layers", "--last-stage-layers", l)]
        {
            match n {
                Some(0) => return bad(field, &|| format!("{flag} must be at least 1, as Megatron-Core requires")),
                Some(n) if !n.is_multiple_of(v) => {
                    return bad("vpp", &|| {
                        format!("VPP {v} must divide the {n} layers of {flag}, as Megatron-Core requires with uneven stages")
                    })
                }
                _ => {}
            }
        }
        let ends = f.unwrap_or(0).saturating_add(l.unwrap_or(0));
        let middle = p - f.is_some() as u32 - l.is_some() as u32;
        let flags = match (f, l) {
            (Some(_), Some(_)) => "--first-stage-layers and --last-stage-layers",
            (Some(_), None) => "--first-stage-layers",
            _ => "--last-stage-layers",
        };
        let Some(rest) = layers.checked_sub(ends) else {
            return bad("first_stage_layers", &|| {
                format!("{flags} give {ends} layers, more than the model's {layers}")
            });
        };
        if (rest == 0) != (middle == 0) {
            return bad("first_stage_layers", &|| {
                format!(
                    "{flags} ({ends} layers) leave {rest} of the {layers} layers for {middle} other stages (each needs at least one, and no layer may be left over)"
                )
            });
        }
        if middle > 0 && !rest.is_multiple_of(middle) {
            return bad("first_stage_layers", &|| {
                format!("the {rest} layers left by {flags} must split evenly over the {middle} other stages")
            });
        }
        let each = rest / middle.max(1);
        if middle > 0 && !each.is_multiple_of(v) {
            return bad("vpp", &|| {
                format!("VPP {v} must divide the {each} layers of each other stage (after {flags}), as Megatron-Core requires")
            });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::training::fixtures;

    fn model(layers: u32, ffn: u64) -> Model {
        Model { kv_heads: 8, ..fixtures::model(layers, 4096, 32, ffn) }
    }

    fn plan(gpus: u32, tp: u32, pp: u32, vpp: u32, first_last: Option<(u32, u32)>) -> Plan {
        Plan {
            vpp,
            gbs: 8 * gpus / (tp * pp),
            seq: 4096,
            sp: tp > 1,
            first_stage_layers: first_last.map(|f| f.0),
            last_stage_layers: first_last.map(|f| f.1),
            ..fixtures::plan(gpus, tp, pp)
        }
    }

    /// Each chunk's first layer, stage by stage, chunk by chunk; and the layers per stage.
    fn offsets(p: &Plan, layers: u32) -> (Vec<Vec<u32>>, Vec<u32>) {
        let starts = (0..p.pp).map(|s| (0..p.vpp).map(|c| p.chunk_layers(layers, s, c).start).collect()).collect();
        (starts, (0..p.pp).map(|s| p.stage_layers(layers, s)).collect())
    }

    /// The layers of every chunk, sorted: each layer exactly once if the split is right.
    fn all_layers(p: &Plan, layers: u32) -> Vec<u32> {
        let mut all: Vec<u32> =
            (0..p.pp).flat_map(|s| (0..p.vpp).flat_map(move |c| p.chunk_layers(layers, s, c))).collect();
        all.sort();
        all
    }

    #[test]
    fn uneven_stages_interleave_as_megatron_core_places_layers() {
        // 28 layers as 4 + 10 + 10 + 4 over 2 chunks: chunks of 2, 5, 5, 2 layers; chunk c of
        // stage s starts at c·L/v plus the first stage's chunk and s − 1 middle chunks.
        let p = plan(32, 8, 4, 2, Some((4, 4)));
        assert_eq!(p.validate(&model(28, 14336)), Ok(()));
        let got: Vec<_> =
            (0..2).flat_map(|c| (0..4).map(move |s| (s, c))).map(|(s, c)| p.chunk_layers(28, s, c)).collect();
        assert_eq!(got, [0..2, 2..7, 7..12, 12..14, 14..16, 16..21, 21..26, 26..28]);
        assert_eq!((0..4).map(|s| p.stage_layers(28, s)).collect::<Vec<_>>(), [4, 10, 10, 4]);
        // Even stages: chunk c of stage s holds layers (c·p + s)·n …
        let q = plan(32, 8, 4, 2, None);
        assert_eq!(q.chunk_layers(32, 1, 1), 20..24);
    }

    #[test]
    fn megatron_core_offsets_by_hand() {
        // PP 4, VPP 2. 30 layers as 8 + 6 + 6 + 10: chunks of 4, 3, 3, 5 = 15 per round.
        let p = plan(32, 8, 4, 2, Some((8, 10)));
        assert_eq!(p.validate(&model(30, 14336)), Ok(()));
        assert_eq!(offsets(&p, 30), (vec![vec![0, 15], vec![4, 19], vec![7, 22], vec![10, 25]], vec![8, 6, 6, 10]));
        // Only the first stage given: the last is a middle stage, 26 = 8 + 3 × 6.
        let p = Plan { last_stage_layers: None, ..plan(32, 8, 4, 2, Some((8, 0))) };
        assert_eq!(p.validate(&model(26, 14336)), Ok(()));
        assert_eq!(offsets(&p, 26), (vec![vec![0, 13], vec![4, 17], vec![7, 20], vec![10, 23]], vec![8, 6, 6, 6]));
        // Only the last: 26 = 3 × 6 + 8.
        let p = Plan { first_stage_layers: None, ..plan(32, 8, 4, 2, Some((0, 8))) };
        assert_eq!(p.validate(&model(26, 14336)), Ok(()));
        assert_eq!(offsets(&p, 26), (vec![vec![0, 13], vec![3, 16], vec![6, 19], vec![9, 22]], vec![6, 6, 6, 8]));
        // Even: 24 layers, chunks of 3.
        let p = plan(32, 8, 4, 2, None);
        assert_eq!(offsets(&p, 24), (vec![vec![0, 12], vec![3, 15], vec![6, 18], vec![9, 21]], vec![6; 4]));
    }

    #[test]
    fn llama3_405b_counts_embedding_and_loss_as_layers() {
        // The Llama 3 paper (§3.3.2): 126 layers on PP 16, interleaved, one layer fewer on the
        // first and last stage, the first chunk of the first stage holding only the embedding and
        // the last chunk of the last only the output and loss: 128 split layers, VPP 8 chunks of 1.
        let m = Model { layers: 126, hidden: 16384, heads: 128, ffn: 53248, ..model(126, 53248) };
        // 16384 GPUs, TP 8: DP 128, 2048 sequences of one = 16 micro-batches.
        let account_for = AccountFor { embedding: true, loss: true };
        let p = Plan { account_for, gbs: 2048, ..plan(16384, 8, 16, 8, None) };
        assert_eq!(p.validate(&m), Ok(()));
        let per_stage: Vec<u32> = (0..16).map(|s| p.stage_layers(126, s)).collect();
        assert_eq!(per_stage, [[7].as_slice(), &[8; 14], &[7]].concat());
        assert_eq!(p.chunk_layers(126, 0, 0), 0..0);
        assert_eq!(p.chunk_layers(126, 15, 7), 126..126);
        // Split layer c·16 + s is transformer layer c·16 + s − 1.
        for (s, c) in (0..16).flat_map(|s| (0..8).map(move |c| (s, c))).filter(|&sc| sc != (0, 0) && sc != (15, 7)) {
            assert_eq!(p.chunk_layers(126, s, c), c * 16 + s - 1..c * 16 + s, "stage {s} chunk {c}");
        }
        assert_eq!(all_layers(&p, 126), (0..126).collect::<Vec<_>>());
        // The first and last stage's 7 layers cannot be split into 8 chunks with
        // --first-stage-layers / --last-stage-layers.
        let q =
            Plan { account_for: AccountFor::default(), first_stage_layers: Some(7), last_stage_layers: Some(7), ..p };
        assert_eq!(
            q.validate(&m).unwrap_err().to_string(),
            "plan: vpp: VPP 8 must divide the 7 layers of --first-stage-layers, as Megatron-Core requires with uneven stages"
        );
    }

    #[test]
    fn layer_splits_megatron_core_accepts_and_refuses() {
        // Megatron-Core's TransformerBlock cases: (layers, PP, VPP, embedding, loss, first, last, ok).
        let cases = [
            (60, 5, 1, false, false, None, Some(4), true),
            (60, 8, 1, false, false, Some(6), Some(6), true),
            (64, 4, 1, false, false, None, None, true),
            (64, 4, 2, false, false, None, None, true),
            (60, 6, 1, false, false, Some(5), None, true),
            (101, 8, 1, false, false, Some(13), Some(13), false),
            (63, 4, 1, true, false, None, None, true),
            (63, 4, 1, false, true, None, None, true),
            (62, 4, 1, true, true, None, None, true),
            (62, 4, 2, true, true, None, None, true),
            (65, 4, 1, false, false, None, None, false),
            (65, 4, 1, true, true, None, None, false),
            (61, 4, 1, false, false, Some(12), None, false),
            (2, 4, 1, false, false, None, None, false),
            (60, 6, 1, true, false, Some(5), Some(5), false),
            (50, 2, 4, false, false, None, None, false),
            (4, 4, 4, false, false, None, None, false),
        ];
        for (layers, pp, vpp, embedding, loss, first, last, ok) in cases {
            let p = Plan {
                first_stage_layers: first,
                last_stage_layers: last,
                account_for: AccountFor { embedding, loss },
                ..plan(8 * pp, 8, pp, vpp, None)
            };
            let m = model(layers, 14336);
            assert_eq!(p.validate(&m).is_ok(), ok, "{layers} layers, PP {pp} VPP {vpp}: {:?}", p.validate(&m));
            if ok {
                assert_eq!(all_layers(&p, layers), (0..layers).collect::<Vec<_>>(), "{layers} layers, PP {pp}");
            }
        }
    }

    #[test]
    fn impossible_splits_name_the_flags() {
        let m = model(28, 14336);
        let err = |p: Plan| p.validate(&m).unwrap_err().to_string();
        assert_eq!(
            err(plan(32, 8, 4, 2, Some((3, 5)))),
            "plan: vpp: VPP 2 must divide the 3 layers of --first-stage-layers, as Megatron-Core requires with uneven stages"
        );
        assert_eq!(
            err(plan(32, 8, 4, 2, Some((4, 6)))),
            "plan: vpp: VPP 2 must divide the 9 layers of each other stage (after --first-stage-layers and --last-stage-layers), as Megatron-Core requires"
        );
        assert_eq!(
            err(plan(32, 8, 4, 1, Some((14, 14)))),
            "plan: first_stage_layers: --first-stage-layers and --last-stage-layers (28 layers) leave 0 of the 28 layers for 2 other stages (each needs at least one, and no layer may be left over)"
        );
        assert_eq!(
            err(plan(16, 8, 2, 1, Some((10, 10)))),
            "plan: first_stage_layers: --first-stage-layers and --last-stage-layers (20 layers) leave 8 of the 28 layers for 0 other stages (each needs at least one, and no layer may be left over)"
        );
        assert_eq!(
            err(Plan { last_stage_layers: None, ..plan(32, 8, 4, 1, Some((3, 0))) }),
            "plan: first_stage_layers: the 25 layers left by --first-stage-layers must split evenly over the 3 other stages"
        );
        assert_eq!(
            err(plan(32, 8, 4, 1, Some((0, 4)))),
            "plan: first_stage_layers: --first-stage-layers must be at least 1, as Megatron-Core requires"
        );
        assert_eq!(
            err(plan(32, 8, 4, 1, Some((20, 20)))),
            "plan: first_stage_layers: --first-stage-layers and --last-stage-layers give 40 layers, more than the model's 28"
        );
        assert_eq!(
            err(plan(8, 8, 1, 1, Some((28, 28)))),
            "plan: first_stage_layers: --first-stage-layers / --last-stage-layers need PP ≥ 2, not 1"
        );
        let both = Plan { account_for: AccountFor { embedding: true, loss: false }, ..plan(32, 8, 4, 1, Some((7, 7))) };
        assert_eq!(
            err(both),
            "plan: account_for: --account-for-embedding/loss-in-pipeline-split cannot be combined with --first-stage-layers / --last-stage-layers (Megatron-Core refuses it)"
        );
        assert_eq!(err(plan(8, 8, 1, 2, None)), "plan: vpp: interleaving (VPP 2) needs PP > 1, as in Megatron");
        // 28 + embedding + loss = 30 split layers on 4 × 2 chunks.
        let p = Plan { account_for: AccountFor { embedding: true, loss: true }, ..plan(32, 8, 4, 2, None) };
        assert_eq!(
            err(p.clone()),
            "plan: pp: PP×VPP = 4×2 = 8 must divide the 28 layers plus the embedding and loss counted by --account-for-*-in-pipeline-split (30; valid PP×VPP: 1, 2, 3, 5, 6, 10, 15, 30)"
        );
    }

    #[test]
    fn is_valid_is_validate_without_the_message() {
        // Every rule hit, and passed: odd and even sizes, uneven stages, MoE and dense.
        let moe = super::super::model::Moe {
            experts: 8,
            topk: 2,
            expert_ffn: 14336,
            shared_experts: 0,
            shared_ffn: 0,
            dense_layers: 0,
        };
        let models = [model(28, 14336), Model { moe: Some(moe), ..model(28, 14336) }];
        let sizes = [1, 2, 3, 4, 8];
        let options =
            [(1, 48, true, None), (2, 48, false, Some((4, 4))), (3, 32, true, Some((1, 2))), (1, 0, false, None)];
        let (mut valid, mut invalid) = (0, 0);
        for (m, gpus, tp, pp, vpp, ep, cp, (mbs, gbs, sp, stages)) in iproduct(&models, &sizes, &options) {
            let p = Plan {
                tp,
                pp,
                vpp,
                ep,
                cp,
                mbs,
                gbs,
                sp,
                first_stage_layers: stages.map(|s: (u32, u32)| s.0),
                last_stage_layers: stages.map(|s| s.1),
                ..plan(gpus, 1, 1, 1, None)
            };
            let checked = p.validate(m);
            assert_eq!(p.is_valid(m), checked.is_ok(), "{p:?}: {checked:?}");
            *if checked.is_ok() { &mut valid } else { &mut invalid } += 1;
        }
        assert!(valid > 50 && invalid > 1000, "{valid} valid, {invalid} invalid");
    }

    type Case<'a, O> = (&'a Model, u32, u32, u32, u32, u32, u32, O);

    /// Each model on 8, 12 and 16 GPUs with every TP, PP, VPP, EP and CP of `sizes` and each of
    /// `options`.
    fn iproduct<'a, O: Copy>(models: &'a [Model], sizes: &[u32], options: &[O]) -> Vec<Case<'a, O>> {
        let mut out = Vec::new();
        for m in models {
            for gpus in [8, 12, 16] {
                for &tp in sizes {
                    for &pp in sizes {
                        for &vpp in sizes {
                            for &ep in sizes {
                                for &cp in sizes {
                                    out.extend(options.iter().map(|&o| (m, gpus, tp, pp, vpp, ep, cp, o)));
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn tp_must_divide_the_ffn() {
        let e = plan(8, 8, 1, 1, None).validate(&model(32, 14002)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "plan: tp: TP 8 must divide the model's ffn width 14002 (Megatron splits it over TP; valid: 1, 2)"
        );
    }
}
