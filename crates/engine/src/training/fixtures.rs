//! The plan and model the unit tests of this module start from; each test changes only the
//! fields it is about (`Plan { vpp: 2, ..fixtures::plan(16, 2, 2) }`).

use super::model::{Family, Model};
use super::plan::{DataParallel, Plan, Recompute};
use super::{Network, TrainingInput};
use crate::compute::Device;

/// `gpus` GPUs, 8 a server, in TP `tp` and PP `pp`, the rest data-parallel, at its plainest: no
/// VPP, EP or CP, one sequence per micro-batch and per batch, 2048 tokens, no SP, DDP, no
/// recompute, even stages.
pub(crate) fn plan(gpus: u32, tp: u32, pp: u32) -> Plan {
    Plan {
        gpus,
        gpus_per_server: 8,
        tp,
        pp,
        vpp: 1,
        ep: 1,
        cp: 1,
        mbs: 1,
        gbs: 1,
        seq: 2048,
        sp: false,
        dp: DataParallel::Ddp,
        recompute: Recompute::None,
        first_stage_layers: None,
        last_stage_layers: None,
        account_for: Default::default(),
    }
}

/// A dense LLaMA-style model "m" of `layers` layers, `hidden` wide, `heads` attention heads
/// (as many key/value heads), FFN `ffn`, a 32000-word vocabulary and 4096 tokens.
pub(crate) fn model(layers: u32, hidden: u64, heads: u64, ffn: u64) -> Model {
    Model {
        name: "m".into(),
        family: Family::Llama,
        layers,
        hidden,
        heads,
        kv_heads: heads,
        head_dim: None,
        ffn,
        vocab: 32000,
        seq_len: 4096,
        moe: None,
        mla: None,
        tie_embeddings: None,
    }
}

/// A GPT model "uniform" of `layers` identical layers with a negligible vocabulary (64 words),
/// 2048 tokens: every pipeline stage the same work.
pub(crate) fn uniform(layers: u32, hidden: u64, heads: u64, ffn: u64) -> Model {
    Model { name: "uniform".into(), family: Family::Gpt, vocab: 64, seq_len: 2048, ..model(layers, hidden, heads, ffn) }
}

/// `model` trained on `plan` on ideal GPUs and links fast enough (1e6 GB/s) to leave compute
/// setting the pace; flash attention, no overlap, no trace, over memory refused.
pub(crate) fn input(model: Model, plan: Plan) -> TrainingInput {
    TrainingInput {
        model,
        plan,
        accelerator: Device::ideal(),
        network: Network { nvlink_busbw: 1e6, nvls_busbw: None, nic_busbw: 1e6, nics_per_server: 8 },
        flash_attention: true,
        overlap: Default::default(),
        allow_oom: false,
        trace: false,
        fabric: None,
        mix: None,
        slow_gpus: None,
    }
}
