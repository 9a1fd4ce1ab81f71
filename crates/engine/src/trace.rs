//! A simulated iteration as a Chrome / Perfetto trace (the JSON "Trace Event Format").
//!
//! One process per rank class (its lowest rank names it), one thread per stream: compute, each
//! communicator group, and point-to-point traffic. Every op is a complete ("X") event, times in
//! µs as the format requires. Open the file at <https://ui.perfetto.dev> or chrome://tracing.

use std::fmt::Write;

use crate::executor::Execution;
use crate::workload::{OpKind, Phase, Workload};

/// JSON string literal of `s` (quotes, backslashes and control characters escaped).
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// The trace of `exec` (a run of `w`), as JSON text.
pub fn chrome_trace(w: &Workload, exec: &Execution) -> String {
    let reps = w.class_representatives();
    let groups = w.groups.len();
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let mut first = true;
    let mut event = |out: &mut String, text: String| {
        if !first {
            out.push_str(",\n");
        }
        first = false;
        out.push_str(&text);
    };
    for (class, tl) in exec.timelines.iter().enumerate() {
        let pid = class;
        let name = format!("class {class} (rank {})", reps[class]);
        event(
            &mut out,
            format!(
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{pid},\"args\":{{\"name\":{}}}}}",
                json_str(&name)
            ),
        );
        // Threads: 0 compute, 1 + g per group, 1 + groups for point-to-point.
        let mut thread_names = vec!["compute".to_string()];
        thread_names.extend(w.groups.iter().map(|g| format!("{} comm", g.name)));
        thread_names.push("send/recv".into());
        for (tid, n) in thread_names.iter().enumerate() {
            event(
                &mut out,
                format!(
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                    json_str(n)
                ),
            );
        }
        let prog = &w.programs[w.class_program[class] as usize];
        for (i, op) in prog.ops.iter().enumerate() {
            let (s, e) = (tl.start[i], tl.end[i]);
            if !(s.is_finite() && e.is_finite()) {
                continue;
            }
            let (tid, what) = match op.kind {
                OpKind::Compute { .. } => (0, "compute".to_string()),
                OpKind::Collective { collective, group, bytes } => {
                    (1 + group as usize, format!("{} {bytes} B", collective.name()))
                }
                OpKind::Send { bytes, .. } => (1 + groups, format!("send {bytes} B")),
                OpKind::Recv { bytes, .. } => (1 + groups, format!("recv {bytes} B")),
            };
            let phase = match op.phase {
                Phase::Forward => "fwd",
                Phase::InputGrad => "ig",
                Phase::WeightGrad => "wg",
                Phase::Other => "other",
            };
            let row = w.rows.get(op.row as usize).map_or("", String::as_str);
            let mut text = String::new();
            let _ = write!(
                text,
                "{{\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{:.3},\"dur\":{:.3},\"name\":{},\"cat\":\"{phase}\",\"args\":{{\"op\":{i},\"issued_us\":{:.3}}}}}",
                s / 1e3,
                (e - s) / 1e3,
                json_str(&format!("{row} {what}")),
                tl.issued[i] / 1e3
            );
            event(&mut out, text);
        }
    }
    out.push_str("\n]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::Timeline;
    use crate::layout::Layout;
    use crate::workload::{Collective, Group, Membership, Op, Program};

    #[test]
    fn every_op_becomes_a_complete_event_in_microseconds() {
        let mut p = Program::default();
        p.push(Op::new(OpKind::Compute { ns: 1000.0, work: None }, vec![], 0, Phase::Forward));
        p.push(Op::new(
            OpKind::Collective { collective: Collective::AllReduce, group: 0, bytes: 8 },
            vec![0],
            0,
            Phase::Forward,
        ));
        let w = Workload {
            layout: Layout::megatron(2, 1, 1, 1, 1),
            groups: vec![Group { name: "TP".into(), members: Membership::Dims(1) }],
            programs: vec![p],
            class_program: vec![0],
            rank_class: vec![0, 0],
            rows: vec!["layer \"1\"".into()],
        };
        let exec = Execution {
            timelines: vec![Timeline {
                issued: vec![0.0, 1000.0],
                start: vec![0.0, 1000.0],
                end: vec![1000.0, 3500.0],
            }],
            end_ns: 3500.0,
            events: 2,
        };
        let doc: serde_json::Value = serde_json::from_str(&chrome_trace(&w, &exec)).expect("valid JSON");
        let xs: Vec<&serde_json::Value> =
            doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(xs.len(), 2);
        assert_eq!(xs[1]["ts"].as_f64(), Some(1.0));
        assert_eq!(xs[1]["dur"].as_f64(), Some(2.5));
        assert_eq!(xs[1]["tid"].as_u64(), Some(1));
        assert_eq!(xs[1]["name"].as_str(), Some("layer \"1\" allreduce 8 B"));
    }
}
