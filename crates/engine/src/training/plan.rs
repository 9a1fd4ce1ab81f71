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

    /// How ranks map to parallel coordinates: Megatron-Core's tp-cp-ep-dp-pp.
    pub fn layout(&self) -> crate::layout::Layout {
        crate::layout::Layout::megatron(self.tp, self.cp, self.ep, self.dp_size() / self.ep, self.pp)
    }

    /// Data-parallel size.
    pub fn dp_size(&self) -> u32 {
        self.gpus / (self.tp * self.pp * self.cp)
    }

    /// Layers of model chunk `chunk` on pipeline stage `stage`. Chunk c of every stage comes
    /// before chunk c + 1 of any stage (Megatron-Core's `get_transformer_layer_offset`); with
    /// uneven stages each stage's layers split evenly over its chunks.
    pub fn chunk_layers(&self, layers: u32, stage: u32, chunk: u32) -> std::ops::Range<u32> {
        let v = self.vpp;
        let (first, middle, last) = match (self.first_stage_layers, self.last_stage_layers) {
            (None, None) => {
                let n = layers / (self.pp * v);
                (n * v, n * v, n * v)
            }
            (f, l) => {
                let (f, l) = (f.unwrap_or(0), l.unwrap_or(0));
                (f, (layers - f - l) / (self.pp - 2).max(1), l)
            }
        };
        // Layers of one chunk of the first, a middle and the last stage.
        let (f, k, l) = (first / v, middle / v, last / v);
        let start = chunk * (layers / v)
            + match stage {
                0 => 0,
                s => f + (s - 1) * k,
            };
        let len = match stage {
            0 => f,
            s if s == self.pp - 1 => l,
            _ => k,
        };
        start..start + len
    }

    /// Layers on pipeline stage `stage`, all chunks.
    pub fn stage_layers(&self, layers: u32, stage: u32) -> u32 {
        (0..self.vpp).map(|c| self.chunk_layers(layers, stage, c).len() as u32).sum()
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
        if self.first_stage_layers.is_some() || self.last_stage_layers.is_some() {
            let (f, l) = (self.first_stage_layers.unwrap_or(0), self.last_stage_layers.unwrap_or(0));
            let rest = m.layers.checked_sub(f + l);
            let middle = self.pp.saturating_sub(2);
            let ok = self.pp >= 2
                && f >= 1
                && l >= 1
                && rest.is_some_and(|r| if middle == 0 { r == 0 } else { r.is_multiple_of(middle) && r > 0 });
            if !ok {
                return bad("first_stage_layers", &|| {
                    format!(
                        "uneven stages need PP ≥ 2 and the {} layers minus first ({f}) and last ({l}) to split evenly over the {middle} middle stages",
                        m.layers
                    )
                });
            }
            // Megatron-Core's TransformerConfig: each stage's layers split evenly over its chunks.
            let per_middle = rest.unwrap_or(0) / middle.max(1);
            let v = self.vpp;
            if let Some((what, n)) = [("first stage", f), ("last stage", l), ("each middle stage", per_middle)]
                .into_iter()
                .find(|&(what, n)| !n.is_multiple_of(v) && (middle > 0 || what != "each middle stage"))
            {
                return bad("vpp", &|| {
                    format!("VPP {v} must divide the layers of the {what} ({n}), as Megatron-Core requires with uneven stages")
                });
            }
        } else {
            let chunks = self.pp * self.vpp;
            if !m.layers.is_multiple_of(chunks) {
                let what = if self.vpp > 1 {
                    format!("PP×VPP = {}×{} = {chunks}", self.pp, self.vpp)
                } else {
                    format!("PP {}", self.pp)
                };
                return bad("pp", &|| {
                    format!(
                        "{what} must divide the {} layers (valid PP×VPP: {}; or give the first and last stage's layers)",
                        m.layers,
                        divisors_text(m.layers as u64)
                    )
                });
            }
        }
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
    use crate::training::model::Family;

    fn model(layers: u32, ffn: u64) -> Model {
        Model {
            name: "m".into(),
            family: Family::Llama,
            layers,
            hidden: 4096,
            heads: 32,
            kv_heads: 8,
            head_dim: None,
            ffn,
            vocab: 32000,
            seq_len: 4096,
            moe: None,
            mla: None,
        }
    }

    fn plan(gpus: u32, tp: u32, pp: u32, vpp: u32, first_last: Option<(u32, u32)>) -> Plan {
        Plan {
            gpus,
            gpus_per_server: 8,
            tp,
            pp,
            vpp,
            ep: 1,
            cp: 1,
            mbs: 1,
            gbs: 8 * gpus / (tp * pp),
            seq: 4096,
            sp: tp > 1,
            dp: DataParallel::Ddp,
            recompute: Recompute::None,
            first_stage_layers: first_last.map(|f| f.0),
            last_stage_layers: first_last.map(|f| f.1),
        }
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
    fn uneven_stages_need_layers_divisible_by_vpp() {
        let e = plan(32, 8, 4, 2, Some((3, 5))).validate(&model(28, 14336)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "plan: vpp: VPP 2 must divide the layers of the first stage (3), as Megatron-Core requires with uneven stages"
        );
        let e = plan(32, 8, 4, 2, Some((4, 6))).validate(&model(28, 14336)).unwrap_err();
        assert!(e.to_string().contains("each middle stage (9)"), "{e}");
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
