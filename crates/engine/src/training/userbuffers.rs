//! `--tp-comm-overlap`: Transformer Engine's userbuffers overlap of the sequence-parallel TP
//! communication with the GEMMs, as Megatron-LM (f2e5db4) configures it: `--tp-comm-overlap`
//! with no `--tp-comm-overlap-cfg`, so `initialize_ub(ub_cfgs=None)` and TE's default method per
//! GEMM; Megatron's defaults `tp_comm_overlap_ag`, `tp_comm_overlap_rs`, `tp_comm_bulk_dgrad`,
//! `tp_comm_bulk_wgrad` on, `tp_comm_overlap_rs_dgrad` off (`core/model_parallel_config.py`).
//! TE at v1.9 (e79d915): `pytorch/module/base.py` `initialize_ub` / `get_default_config`, and
//! `pytorch/csrc/comm_gemm_overlap.h`:
//!
//! - Ring exchange (`UbufP2PCommOverlap::split_overlap_ag`) for the all-gather feeding qkv and
//!   fc1 forward and the output-gradient gather feeding proj and fc2 data gradients: t = TP steps;
//!   step i runs the GEMM on the token chunk at hand (S/t bytes, this rank's own at step 0)
//!   while copying that chunk to the next rank and receiving the next from the previous
//!   (`userbuffers_send`/`recv`, `use_ce` on: the copy engine over NVLink, no SM and no NCCL
//!   call). Copy i waits for the receive of step i − 1, GEMM i for it too, so with chunk GEMM g
//!   and chunk copy c the gather and GEMM take g + (t − 1)·max(g, c).
//! - Pipeline (`UbufCommOverlap::split_overlap_rs`, `num_splits` 4) for the reduce-scatter after
//!   proj and fc2 forward: the GEMM in 4 splits of its output columns; each split's output is
//!   reduce-scattered (`reducescatter2_userbuff_stridedoutput`, 16 SMs) while the next computes,
//!   in order on one stream (split i's starts when split i and split i − 1's reduce-scatter are
//!   done): with split GEMM g and split reduce-scatter r, 4·g + r when r ≤ g, g + 4·r beyond.
//! - Bulk (`bulk_overlap`, 16 SMs) inside the backward of the qkv and fc1 layers
//!   (`pytorch/module/layernorm_linear.py`, `layernorm_mlp.py`): the layer copies its saved
//!   input into the `_dgrad` buffer and its data-gradient GEMM call (`BULK_OVERLAP_AG`) gathers
//!   it on the communication stream while the GEMM runs, the call's end waiting for the gather;
//!   the data gradient lands in the `_wgrad` buffer and the weight-gradient GEMM call
//!   (`BULK_OVERLAP_RS`) reduce-scatters it likewise. So the gather hides only under that
//!   layer's data-gradient GEMM and the reduce-scatter only under its weight-gradient GEMM,
//!   each exposed by max(0, comm − GEMM); nothing else of the block's backward (the proj / fc2
//!   layer, core attention, the activation) runs beside them.
//!
//! Each userbuffers communication is what the GPUs' NVLink carries, with no NCCL call: a ring
//! step is one shift (every TP rank copies to its next and receives from its previous, the
//! executor's send/recv pair inside one rank class, both ops marked `copy`); an SM-driven
//! all-gather or reduce-scatter of S bytes moves S/t to or from each of the t − 1 peers, t − 1
//! shifts (offsets 1 … t − 1) one after another, (t − 1)/t · S per GPU as NCCL's bus bandwidth
//! has it. Why ops, not a closed
//! form: the steps are priced by the network model, so the flow model shares NVLink with other
//! traffic and the exposure report shows what the copies leave exposed.
//! Not modelled: the 16 SMs the pipeline and bulk kernels take from a concurrent GEMM (TE's
//! `set_sm_margin` is off, so the GEMM keeps every SM and competes with them only while the
//! communication runs), as NCCL's SMs are not elsewhere in the model.

use super::{Builder, Model, Plan, TP};
use crate::compute::{Device, Kernel, Priced};
use crate::training::model::Family;
use crate::workload::{OpKind, Peer, Phase};

/// TE's `num_splits` for the pipeline method (`get_default_config`).
pub const PIPELINE_SPLITS: u32 = 4;

/// One GEMM and the pieces its overlap runs it in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub whole: Priced,
    pub pieces: u32,
}

impl Split {
    /// The same GEMM in `k` times its time (its work unchanged).
    pub fn scaled(self, k: f64) -> Split {
        Split { whole: self.whole.in_time(self.whole.ns * k), ..self }
    }

    fn piece(self) -> Priced {
        self.whole.share(self.pieces)
    }
}

/// Per block: the GEMM after the input all-gather (ring exchange), the GEMM before the output
/// reduce-scatter (pipeline) and that GEMM's data gradient (ring exchange of the output gradient);
/// the first GEMM's data and weight gradients (ns), which the bulk overlaps run under.
#[derive(Debug, Clone, Copy)]
pub struct Linears {
    pub first_fwd: Split,
    pub last_fwd: Split,
    pub last_dgrad: Split,
    pub first_dgrad: Priced,
    pub first_wgrad: Priced,
}

#[derive(Debug, Clone, Copy)]
pub struct TpLinears {
    pub attn: Linears,
    pub mlp: Linears,
}

/// The GEMM shapes of costs.rs's blocks (tokens n = b·s/cp; widths split by TP), timed as those
/// kernels are (measured where the run's kernel table has them). Ring-exchange pieces are n/t
/// tokens, pipeline splits a quarter of the output columns; each takes its share of the whole
/// GEMM's time: TE issues the pieces on up to 3 compute streams (`_NUM_MAX_UB_STREAMS`), so a
/// piece's last partial wave of tiles runs beside the next piece's first.
pub fn tp_linears(model: &Model, plan: &Plan, acc: &Device) -> TpLinears {
    let t = plan.tp as u64;
    let n = plan.mbs as u64 * (plan.seq / plan.cp as u64);
    let h = model.hidden;
    let (qkv_out, attn_width) = match &model.mla {
        // The down-projections consume the gathered input.
        Some(x) => (x.q_lora + x.kv_lora + x.qk_rope, model.heads / t * x.v_head),
        None => ((model.heads + 2 * model.kv_heads) * model.head_dim() / t, model.heads * model.head_dim() / t),
    };
    let f = model.ffn / t;
    let up = if model.family == Family::Llama { 2 * model.ffn / t } else { f };
    // C[m×n] = A[m×k]·B[k×n].
    let gemm = |m: u64, n: u64, k: u64| Kernel::Gemm { m, n, k, batch: 1 }.priced(acc);
    let ring = |out: u64, k: u64| Split { whole: gemm(n, out, k), pieces: plan.tp };
    let pipe = |k: u64| Split { whole: gemm(n, h, k), pieces: PIPELINE_SPLITS };
    // The block's first GEMM Y[n×out] = X[n×h]·W, its last Z[n×h] = A[n×k]·V; their gradients
    // dX = dY·Wᵀ (n×h over out), dW = dYᵀ·X (out×h over n), dA = dZ·Vᵀ (n×k over h).
    let block = |out: u64, k: u64| Linears {
        first_fwd: ring(out, h),
        last_fwd: pipe(k),
        last_dgrad: ring(k, h),
        first_dgrad: gemm(n, h, out),
        first_wgrad: gemm(out, h, n),
    };
    TpLinears { attn: block(qkv_out, attn_width), mlp: block(up, f) }
}

/// Two GEMMs scaled, if need be, to fit in their block's `total` ns.
pub fn within(a: Split, b: Split, total: Priced) -> (Split, Split) {
    let (both, total) = (a.whole.ns + b.whole.ns, total.ns);
    let k = if both > total { total / both } else { 1.0 };
    (a.scaled(k), b.scaled(k))
}

/// One shift of `bytes` along TP by `offset` after `deps`: (send, recv).
fn shift(bld: &mut Builder, offset: i32, bytes: u64, deps: Vec<u32>, row: u32, phase: Phase) -> [u32; 2] {
    let send = bld.push(OpKind::Send { peer: Peer { group: TP, offset }, bytes, copy: true }, deps.clone(), row, phase);
    let recv =
        bld.push(OpKind::Recv { peer: Peer { group: TP, offset: -offset }, bytes, copy: true }, deps, row, phase);
    [send, recv]
}

/// A userbuffers (SM-driven) all-gather or reduce-scatter of `bytes` over the `t` TP ranks after
/// `deps`: S/t to or from each peer in turn. Returns the ops that end it.
pub fn sm_collective(bld: &mut Builder, bytes: u64, t: u32, deps: Vec<u32>, row: u32, phase: Phase) -> Vec<u32> {
    (1..t as i32).fold(deps, |deps, offset| shift(bld, offset, bytes / t as u64, deps, row, phase).to_vec())
}

/// Ring exchange: the all-gather of `bytes` into `gemm`, after the gate; the gate becomes the
/// last GEMM piece.
pub fn ring_exchange(bld: &mut Builder, bytes: u64, gemm: Split, row: u32, phase: Phase) {
    let t = gemm.pieces;
    let mut arrived = bld.gate.clone();
    for i in 0..t {
        let here = std::mem::take(&mut arrived);
        if i + 1 < t {
            // The chunk at hand goes on to the next rank as the next arrives from the previous.
            arrived = vec![shift(bld, 1, bytes / t as u64, here.clone(), row, phase)[1]];
        }
        if i > 0 {
            bld.gate.extend(here);
        }
        bld.compute(gemm.piece(), row, phase);
    }
}

/// Pipeline: `gemm` in splits, each split's share of the `bytes` output reduce-scattered over the
/// `t` TP ranks as the next split computes; what follows waits for the last.
pub fn pipelined_scatter(bld: &mut Builder, gemm: Split, bytes: u64, t: u32, row: u32, phase: Phase) {
    let mut comm = Vec::new();
    for _ in 0..gemm.pieces {
        let g = bld.compute(gemm.piece(), row, phase);
        comm.push(g);
        comm = sm_collective(bld, bytes / gemm.pieces as u64, t, comm, row, phase);
    }
    bld.gate.extend(comm);
}
