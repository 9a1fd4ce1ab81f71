//! A training iteration as a SimAI workload file: one pipeline stage, in AICB's row layout.
//!
//! Two flavours:
//!
//! - [`Flavor::Megatron`]: the collectives Megatron-Core issues, derived from the generator's
//!   ops (rows_from_ops.rs): they are defined once, in generate.rs.
//! - [`Flavor::Aicb`]: exactly the rows AICB writes (shared/reference/megatron.md §9), quirks
//!   included, so results can be compared with SimAI runs on AICB's files. AICB differs from
//!   Megatron's collectives nearly everywhere (its parameter counting: word embedding ×4, no
//!   SwiGLU gate, no GQA, position embedding always, LM head only with SP; ig NONE without SP;
//!   RS of 0 B for column rows; a `layernorm` AR of 2·P; cross-entropy once per iteration; one
//!   FFN width for dense and MoE layers; `vpp` = layers per stage; FP8 dispatch in the
//!   DeepSeek frame; the data-parallel reductions as one collective each, run last), so its
//!   rows are written here from AICB's own module list rather than as a transformation of the
//!   derived rows. The 5 AICB reference files hold it row for row.
//!
//! Compute times come from this project's roofline ([`Costs`]), not from AICB's measurements:
//! each block's time is split evenly over the rows that stand for it.

use serde::Deserialize;

use super::costs::{BlockTimes, Costs};
use super::model::Model;
use super::plan::Plan;
use super::rows_from_ops::megatron_workload;
use crate::compute::Device;
use crate::error::{InputError, Result};
use crate::simai::file::{Comm, CommType, Header, HeaderVariant, Policy, Row, Scope, WorkloadFile};
use crate::workload::Collective;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    Megatron,
    Aicb,
}

/// AICB's DeepEP frame sends the forward dispatch in FP8 with one fp32 scale per 128 values.
const FP8_FACTOR: f64 = (1.0 + 4.0 / 128.0) / 2.0;

/// What a row stands for: the kind of module and the compute it carries.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Embedding,
    /// Column-parallel linear (AG before it with SP).
    Column,
    /// Row-parallel linear (RS / AR after it).
    Row,
    /// Replicated linear (MLA down-projections): no communication.
    Linear,
    /// A whole attention or MLP block without SP: one AR after it.
    Block,
    /// MoE block (dispatch, expert-TP gather/scatter, combine).
    Moe,
    /// LM head (column-parallel over the vocabulary).
    Head,
}

struct Module {
    name: &'static str,
    kind: Kind,
    /// AICB's parameter count of the module on one TP rank (0 for modules AICB does not count).
    params: u64,
    /// Compute (forward, backward data, backward weight) in ns.
    ns: (f64, f64, f64),
}

const NONE: Comm = Comm { kind: CommType::None, bytes: 0 };

fn comm(c: Collective, scope: Scope, bytes: u64) -> Comm {
    Comm { kind: CommType::Collective(c, scope), bytes }
}

fn row(name: &str, ns: (f64, f64, f64), fwd: Comm, ig: Comm, wg: Comm) -> Row {
    let t = |x: f64| x.round() as u64;
    Row {
        name: name.to_string(),
        depen: -1,
        fwd_ns: t(ns.0),
        fwd,
        ig_ns: t(ns.1),
        ig,
        wg_ns: t(ns.2),
        wg,
        wg_update_ns: 100,
        line: 0,
    }
}

fn split(ns: (f64, f64, f64), parts: f64) -> (f64, f64, f64) {
    (ns.0 / parts, ns.1 / parts, ns.2 / parts)
}

/// Vocabulary padded as Megatron pads it: to a multiple of 128·t.
fn padded_vocab(vocab: u64, tp: u64) -> u64 {
    vocab.div_ceil(128 * tp) * 128 * tp
}

/// The modules of one stage in AICB's traversal order, with AICB's parameter counts.
fn modules(model: &Model, plan: &Plan, sp: bool, layers: &[u32], costs: &Costs) -> Result<Vec<Module>> {
    let t = plan.tp as u64;
    let h = model.hidden;
    // AICB has one FFN width; for MoE models it is the experts'.
    let f = model.moe.as_ref().map_or(model.ffn, |m| m.expert_ffn);
    let v = padded_vocab(model.vocab, t);
    let q = h / model.heads * model.heads;
    let mut out = Vec::new();
    let (emb_f, emb_b) = costs.embedding();
    out.push(Module {
        name: "embedding_layer",
        kind: Kind::Embedding,
        params: 4 * (v / t) * h + plan.seq * h,
        ns: (emb_f.ns, 0.0, emb_b.ns),
    });
    for &l in layers {
        // AICB's DeepSeek frame makes the first dense_layers layers of every stage dense; the
        // Megatron frame makes every layer an MoE layer when the model has experts.
        let moe_layer = model.moe.as_ref().is_some_and(|m| model.mla.is_none() || l >= m.dense_layers);
        let bt: BlockTimes = costs.layer(moe_layer);
        let attn = (bt.attn_fwd.ns, bt.attn_bwd_data.ns, bt.attn_bwd_weight.ns);
        let mlp = (bt.mlp_fwd.ns, bt.mlp_bwd_data.ns, bt.mlp_bwd_weight.ns);
        let mut push = |name, kind, params, ns| out.push(Module { name, kind, params, ns });
        match (&model.mla, sp) {
            (Some(m), true) => {
                let a = model.heads;
                let part = split(attn, 5.0);
                push("attention_linear_q_lora", Kind::Linear, h * m.q_lora + 2 * m.q_lora, part);
                push("attention_q_column", Kind::Column, m.q_lora * a * (m.qk_nope + m.qk_rope) / t, part);
                push("attention_linear_kv_lora", Kind::Linear, h * (m.kv_lora + m.qk_rope) + 2 * m.kv_lora, part);
                push("attention_kv_column", Kind::Column, m.kv_lora * a * (m.qk_nope + m.v_head) / t, part);
                push("attention_o_row", Kind::Row, a * m.v_head / t * h, part);
            }
            (None, true) => {
                // The pre-MLP norm (2h) is counted with SP; it has no row of its own.
                push("attention_column", Kind::Column, h * 3 * q / t + 2 * h, split(attn, 2.0));
                push("attention_row", Kind::Row, q / t * h, split(attn, 2.0));
            }
            (_, false) => push("attention_layer", Kind::Block, h * 3 * q / t + q / t * h, attn),
        }
        if model.mla.is_some() && sp {
            // DeepSeek's pre-MLP norm, counted like the MLA norms above.
            out.last_mut().expect("attention rows").params += 2 * h;
        }
        let mut push = |name, kind, params, ns| out.push(Module { name, kind, params, ns });
        if moe_layer {
            let m = model.moe.as_ref().expect("moe layer");
            if !sp {
                return Err(InputError::field("plan", "sp", "AICB models MoE only with sequence parallelism (--sp)"));
            }
            let local = (m.experts / plan.ep) as u64;
            let deepseek = model.mla.is_some();
            let shared = if m.shared_experts > 0 { 2 * h * f / t } else { 0 };
            let weights = if deepseek { 3 } else { 2 };
            let params = weights * h * f * local / t + if deepseek { shared } else { 0 };
            push("mlp_moelayer", Kind::Moe, params, mlp);
            if deepseek && m.shared_experts > 0 {
                push("mlp_column", Kind::Column, h * f / t, (0.0, 0.0, 0.0));
                push("mlp_row", Kind::Row, h * f / t, (0.0, 0.0, 0.0));
            }
        } else if sp {
            push("mlp_column", Kind::Column, h * f / t, split(mlp, 2.0));
            push("mlp_row", Kind::Row, h * f / t, split(mlp, 2.0));
        } else {
            push("mlp_layer", Kind::Block, 2 * h * f / t, mlp);
        }
    }
    let head = costs.head();
    out.push(Module {
        name: "final_column",
        kind: Kind::Head,
        params: if sp { h * v / t } else { 0 },
        ns: (head.0.ns, head.1.ns, 0.0),
    });
    Ok(out)
}

/// The SimAI workload file of one iteration of `plan` (one pipeline stage).
pub fn simai_workload(model: &Model, plan: &Plan, acc: &Device, flash: bool, flavor: Flavor) -> Result<WorkloadFile> {
    plan.validate(model)?;
    acc.check()?;
    if plan.cp > 1 {
        return Err(InputError::field(
            "plan",
            "cp",
            "SimAI workload files cannot express context parallelism; simulate it with `clustersim train`",
        ));
    }
    match flavor {
        Flavor::Megatron => megatron_workload(model, plan, acc, flash),
        Flavor::Aicb => aicb_workload(model, plan, acc, flash),
    }
}

/// The rows AICB writes for `plan`.
fn aicb_workload(model: &Model, plan: &Plan, acc: &Device, flash: bool) -> Result<WorkloadFile> {
    let costs = Costs { acc, model, plan, flash_attention: flash };
    let (t, b, s, h) = (plan.tp as u64, plan.mbs as u64, plan.seq, model.hidden);
    let big_t = 2 * b * s * h;
    // AICB replaces the layer count by L/p and builds layers 0..L/p.
    let layers: Vec<u32> = (0..model.layers / plan.pp).collect();
    // AICB lays MoE models out as with SP (it requires SP for MoE; with TP 1 that changes no size).
    let sp = plan.sp || (plan.tp == 1 && model.moe.is_some());
    let mods = modules(model, plan, sp, &layers, &costs)?;
    let dp = plan.gpus / (plan.tp * plan.pp);
    // AICB's data-parallel size ignores CP (which it does not model).
    let ga = plan.gbs / (plan.mbs * dp);
    let tp_comm = |c: Collective, bytes: u64| if t > 1 { comm(c, Scope::Plain, bytes) } else { NONE };
    let mut rows = aicb_head_rows(&mods, plan, sp, big_t, dp, &costs);
    let zero = (0.0, 0.0, 0.0);
    let k = model.moe.as_ref().map_or(1, |m| m.topk as u64);
    let experts = model.moe.as_ref().map_or(1, |m| m.experts as u64);
    for _ in 0..ga {
        for m in &mods {
            let (fwd, ig) = match (m.kind, sp) {
                (Kind::Linear, _) => (NONE, NONE),
                (Kind::Embedding, _) | (Kind::Block, false) => (tp_comm(Collective::AllReduce, big_t), NONE),
                (Kind::Column, _) | (Kind::Head, true) => {
                    (tp_comm(Collective::AllGather, big_t), tp_comm(Collective::ReduceScatter, 0))
                }
                (Kind::Row, _) => (tp_comm(Collective::ReduceScatter, big_t), tp_comm(Collective::AllGather, big_t)),
                (Kind::Head, false) => continue,
                (Kind::Moe, _) => {
                    let ep = plan.ep as u64;
                    let a2a = big_t * k / t;
                    let a2a_fwd = if model.mla.is_some() { (a2a as f64 * FP8_FACTOR) as u64 } else { a2a };
                    let ep_comm = |bytes| if ep > 1 { comm(Collective::AllToAll, Scope::Ep, bytes) } else { NONE };
                    // Token counts per expert gathered across TP×EP (AICB: 2·e·E·t bytes in TP).
                    let counts = if t > 1 || ep > 1 {
                        comm(Collective::AllGather, Scope::Plain, 2 * ep * experts * t)
                    } else {
                        NONE
                    };
                    rows.push(row(m.name, m.ns, counts, NONE, NONE));
                    rows.push(row(m.name, zero, ep_comm(a2a_fwd), ep_comm(a2a), NONE));
                    // Expert-TP gather before the experts and scatter after; mirrored backward.
                    for (f, b) in [
                        (Collective::AllGather, Collective::ReduceScatter),
                        (Collective::ReduceScatter, Collective::AllGather),
                    ] {
                        rows.push(row(m.name, zero, tp_comm(f, big_t * k), tp_comm(b, big_t * k), NONE));
                    }
                    rows.push(row(m.name, zero, ep_comm(a2a), ep_comm(a2a), NONE));
                    continue;
                }
                (Kind::Block, true) => unreachable!("blocks are emitted only without SP"),
            };
            rows.push(row(m.name, m.ns, fwd, ig, NONE));
        }
    }
    let head = mods.last().expect("head module");
    let head_ns = if sp { zero } else { (head.ns.0 * ga as f64, head.ns.1 * ga as f64, 0.0) };
    for i in 1..=3 {
        let ns = if i == 1 { head_ns } else { zero };
        rows.push(row(
            &format!("cross_entropy{i}"),
            ns,
            comm(Collective::AllReduce, Scope::Plain, 4 * b * s),
            NONE,
            NONE,
        ));
    }
    for i in 1..=4 {
        rows.push(row(&format!("optimizer{i}"), zero, comm(Collective::AllReduce, Scope::Plain, 4), NONE, NONE));
    }
    let pp_bytes = if plan.sp { big_t / t } else { big_t };
    // AICB divides pp_comm by TP in Python (a float) whenever SP is on.
    let pp_comm = if plan.pp > 1 { pp_bytes } else { 0 };
    let header = stage_header(plan, model.layers / plan.pp, ga, pp_comm, plan.pp > 1 && plan.sp);
    Ok(WorkloadFile { path: String::new(), header, rows, warnings: Vec::new() })
}

/// AICB's data-parallel and bookkeeping rows, written before the layers (SimAI runs them last).
fn aicb_head_rows(mods: &[Module], plan: &Plan, sp: bool, big_t: u64, dp: u32, costs: &Costs) -> Vec<Row> {
    let total: u64 = mods.iter().map(|m| m.params).sum();
    let moe: u64 = mods.iter().filter(|m| m.kind == Kind::Moe).map(|m| m.params).sum();
    let dense = total - moe;
    let one = (1.0, 1.0, 1.0);
    let optimizer = costs.optimizer(total as f64).ns;
    let mut rows = vec![
        row("grad_gather", one, NONE, NONE, comm(Collective::AllGather, Scope::Plain, 2 * dense)),
        row("grad_param_comm", one, NONE, NONE, comm(Collective::ReduceScatter, Scope::Plain, 4 * dense)),
        row("grad_param_compute", (1.0, optimizer, 1.0), NONE, NONE, NONE),
    ];
    if !sp {
        rows.push(row("layernorm", one, NONE, comm(Collective::AllReduce, Scope::Plain, 2 * total), NONE));
    }
    let emb = if plan.tp > 1 { comm(Collective::AllReduce, Scope::Plain, big_t) } else { NONE };
    rows.push(row("embedding_grads", one, NONE, emb, NONE));
    if plan.ep != dp {
        rows.push(row("moe_grad_norm1", one, NONE, NONE, comm(Collective::AllGather, Scope::DpEp, 2 * moe)));
        rows.push(row("moe_grad_norm2", one, NONE, NONE, comm(Collective::ReduceScatter, Scope::DpEp, 4 * moe)));
    }
    rows
}

/// The header of a file holding one stage of `plan`.
pub(super) fn stage_header(plan: &Plan, vpp: u32, ga: u32, pp_comm: u64, pp_comm_decimal: bool) -> Header {
    Header {
        policy: Policy::HybridTransformerFwdInBckwd,
        variant: HeaderVariant::Current,
        tp: plan.tp,
        ep: plan.ep,
        pp: plan.pp,
        vpp,
        ga,
        all_gpus: Some(plan.gpus),
        checkpoints: Vec::new(),
        checkpoint_initiates: Vec::new(),
        pp_comm,
        pp_comm_decimal,
    }
}
