//! A workload of one collective per size on one group of n ranks, the sizes one after another
//! on the group's stream: what nccl-tests runs ([`crate::nccl_tests`]), and how tests time one
//! collective on a network model. Part of the IR so that every layer above it may build one.

use super::{Collective, Group, Membership, Op, OpKind, Phase, Program, Workload};
use crate::layout::{Axis, Layout};

/// A workload of one class whose single group spans `n` ranks, one collective per size in order.
pub(crate) fn sweep_workload(c: Collective, n: u32, sizes: &[u64]) -> Workload {
    let layout = Layout::megatron(n, 1, 1, 1, 1);
    let mask = layout.mask(&[Axis::Tp]);
    let mut program = Program::default();
    for &bytes in sizes {
        program.push(Op::new(OpKind::Collective { collective: c, group: 0, bytes }, Vec::new(), 0, Phase::Other));
    }
    Workload {
        layout,
        groups: vec![Group { name: "WORLD".into(), members: Membership::Dims(mask) }],
        programs: vec![program],
        class_program: vec![0],
        rank_class: vec![0; n as usize],
        rows: vec![c.name().into()],
    }
}
