//! SimAI-Analytical's collective prices, reproduced with their quirks (`--compat simai`).
//!
//! [`SimaiBuiltin`] follows the built-in bandwidth model of SimAI 1.6/1.7
//! (`workload/Layer.cc: compute_time, cal_ratio`, `system/calbusbw.cc`); [`SimaiBusbwFile`]
//! follows the busbw.yaml pricing of SimAI at d44c48b. Arithmetic is done in the same
//! precisions (f32 bandwidths, f64 times truncated to whole ns) so the numbers agree to the
//! nanosecond. Quirks kept on purpose: bandwidths in GB/s used as GiB/s; a fixed table for
//! 1 B < S < 1 MiB (0 for group sizes outside it); ratios only for TP all-gather/reduce-scatter
//! and all-to-all; all-reduce always priced as ring; sizes above the ratio table are an error.

use super::busbw_file::BusbwTable;
use super::ratio::RatioTables;
use super::server_spec::ServerSpec;
use super::{CollectiveCost, GroupShape};
use crate::error::InputError;
use crate::workload::Collective;

/// ns for S bytes at `busbw` "GB/s" (really GiB/s) with the nccl-tests factor, truncated to ns.
fn simai_ns(c: Collective, bytes: u64, bw: f64, n: u32) -> f64 {
    let gib = bytes as f64 * (1.0 / 1073741824.0);
    let steps = if c == Collective::AllReduce { 2.0 } else { 1.0 };
    let t = gib / bw * 1e9 * steps * (n as f64 - 1.0) / n as f64;
    t.trunc()
}

/// SimAI's fixed cost of a small message (1 B < S < 1 MiB) by group size, in ns.
fn small_message_ns(n: u32) -> f64 {
    match n {
        2 => 10000.0,
        4 => 12000.0,
        8 => 15000.0,
        16 => 66000.0,
        32 => 135000.0,
        64 => 200000.0,
        128 => 320000.0,
        _ => 0.0,
    }
}

pub struct SimaiBuiltin {
    pub platform: ServerSpec,
    pub ratios: RatioTables,
}

/// Result of SimAI's `cal_busbw`: bus bandwidth and whether NVLink was the bottleneck.
struct BusBw {
    busbw: f32,
    is_nvlink: bool,
}

impl SimaiBuiltin {
    /// SimAI's `calculateBusBw` for Ring (the only algorithm its analytical path asks for).
    fn cal_busbw(&self, c: Collective, node_count: u32, gpus_per_node: u32, nics_per_node: f32) -> Option<BusBw> {
        let nvlink = self.platform.nvlink();
        let nic = self.platform.nic_bw();
        if gpus_per_node * node_count == 1 || gpus_per_node < 1 || (nics_per_node as i32) < 1 || node_count < 1 {
            return None;
        }
        let g = gpus_per_node as f32;
        let cross_nic = nics_per_node * nic > nvlink;
        let mut is_nvlink = false;
        let ring = if node_count == 1 {
            nvlink
        } else if gpus_per_node == 1 {
            nic * nics_per_node
        } else if cross_nic {
            let nv = nvlink * g / (g - 1.0);
            if nv < nic * nics_per_node {
                is_nvlink = true;
                nv
            } else {
                nic * nics_per_node
            }
        } else if nvlink < nic * nics_per_node {
            is_nvlink = true;
            nvlink
        } else {
            nic * nics_per_node
        };
        let busbw = match c {
            Collective::AllToAll if node_count == 1 => {
                is_nvlink = true;
                nvlink
            }
            Collective::AllToAll => {
                let nranks = (node_count * gpus_per_node) as f32;
                nic * nics_per_node / g * (nranks - 1.0) / ((node_count - 1) as f32 * g)
            }
            _ => ring,
        };
        Some(BusBw { busbw, is_nvlink })
    }

    /// SimAI's `cal_ratio`.
    fn ratio(&self, c: Collective, g: &GroupShape, bytes: u64, is_nvlink: bool) -> Result<f32, InputError> {
        let gps = self.platform.gpus_per_server;
        let (t, n) = (g.tp, g.size);
        let b = bytes as f64;
        match (c, g.name.as_str()) {
            (Collective::AllGather | Collective::ReduceScatter, "TP") => {
                let table = if is_nvlink { &self.ratios.nvlink } else { &self.ratios.nic };
                table.simai_value(b, if t < gps { 1 } else { t / gps })
            }
            (Collective::AllToAll, "EP") => {
                let nodes = if t * n <= gps {
                    1
                } else if t >= gps {
                    9
                } else {
                    t * n / gps
                };
                self.ratios.all_to_all.simai_value(b, nodes)
            }
            (Collective::AllToAll, "TP") => self.ratios.all_to_all.simai_value(b, if t <= gps { 1 } else { t / gps }),
            _ => Ok(1.0),
        }
    }
}

impl CollectiveCost for SimaiBuiltin {
    fn collective_ns(&self, c: Collective, g: &GroupShape, bytes: u64) -> Result<f64, InputError> {
        if matches!(c, Collective::Broadcast | Collective::Reduce) {
            return Ok(0.0); // SimAI workloads cannot express them; v1 BROADCAST rows are dropped earlier.
        }
        let n = g.size;
        if 1 < bytes && bytes < 1048576 {
            return Ok(small_message_ns(n));
        }
        let gps = self.platform.gpus_per_server;
        let r = self.platform.nics_per_server;
        let (t, e) = (g.tp, g.ep);
        let shape = match g.name.as_str() {
            "TP" if t <= gps => (1, t, r as f32),
            "TP" => (t / gps, gps, r as f32),
            "EP" if n > 1 && t * n <= gps => (1, gps / t, r as f32),
            "EP" if n > 1 => {
                let nics = if t > gps { r / gps } else { r / t };
                (t * n / gps, (gps / t).max(1), nics as f32)
            }
            "DP" if n > 1 && t <= gps => (n, gps / t, (r / t) as f32),
            "DP" if n > 1 => (n, 1, (r / gps) as f32),
            "DP_EP" if n > 1 && t * e <= gps => (n, gps / (t * e), (r / (t * e)) as f32),
            "DP_EP" if n > 1 => (n, 1, (r / gps) as f32),
            _ => return Ok(0.0),
        };
        let bw = self.cal_busbw(c, shape.0, shape.1, shape.2).ok_or_else(|| {
            InputError::field(
                "command line",
                "n_p_s",
                format!(
                    "SimAI's model has no bandwidth for a {} group of {n} ranks ({} node(s) × {} GPU(s), {} NIC(s)); give more NICs per server",
                    g.name, shape.0, shape.1, shape.2
                ),
            )
        })?;
        let ratio = self.ratio(c, g, bytes, bw.is_nvlink)?;
        Ok(simai_ns(c, bytes, (ratio * bw.busbw) as f64, n))
    }

    fn transfer_ns(&self, _same_server: bool, _bytes: u64) -> Result<f64, InputError> {
        Ok(0.0) // SimAI never simulates point-to-point traffic.
    }
}

/// busbw.yaml pricing as SimAI at d44c48b did it, quirks included: TP reduce-scatter read from
/// TP.allgather; EP all-gather/reduce-scatter and all-reduce of EP or DP groups inside one
/// server priced by TP rules or at 0; DP_EP read from the EP section.
pub struct SimaiBusbwFile {
    pub gpus_per_server: u32,
    pub world: u32,
    pub table: BusbwTable,
}

impl CollectiveCost for SimaiBusbwFile {
    fn collective_ns(&self, c: Collective, g: &GroupShape, bytes: u64) -> Result<f64, InputError> {
        let gps = self.gpus_per_server;
        let n = g.size;
        let tp_inside = matches!(g.name.as_str(), "TP" | "EP") && g.tp <= gps;
        let dp_inside = matches!(g.name.as_str(), "DP" | "DP_EP") && self.world == gps && g.tp <= gps;
        use Collective::*;
        let key = match (g.name.as_str(), c) {
            _ if tp_inside || dp_inside => match (g.name.as_str(), c) {
                (_, AllReduce) => Some(("TP", "allreduce")),
                ("TP", AllGather | ReduceScatter) => Some(("TP", "allgather")),
                ("TP", AllToAll) => Some(("TP", "alltoall")),
                ("EP", AllToAll) => Some(("EP", "alltoall")),
                _ => None,
            },
            ("TP", AllReduce) => Some(("TP", "allreduce")),
            ("TP", AllGather | ReduceScatter) => Some(("TP", "allgather")),
            ("TP", AllToAll) => Some(("TP", "alltoall")),
            ("DP", AllReduce) => Some(("DP", "allreduce")),
            ("DP", AllGather | ReduceScatter | AllToAll) => Some(("DP", "allgather")),
            ("DP_EP", AllReduce) => Some(("EP", "allreduce")),
            ("DP_EP", AllGather | ReduceScatter | AllToAll) => Some(("EP", "allgather")),
            _ => None,
        };
        match key {
            None => Ok(0.0),
            Some((section, k)) => {
                let bw = self.table.get(section, k)?;
                Ok(simai_ns(c, bytes, bw as f64, n))
            }
        }
    }

    fn transfer_ns(&self, _same_server: bool, _bytes: u64) -> Result<f64, InputError> {
        Ok(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Placement;
    use std::rc::Rc;
    use Collective::*;

    const GIB: u64 = 1 << 30;

    fn shape(name: &str, size: u32) -> GroupShape {
        // Layout of the tests: t = 2, e = 4, 64 GPUs in servers of 8 → DP 32, DP_EP 8.
        let placement = Rc::new(Placement::servers(size, 8));
        GroupShape {
            name: name.into(),
            size,
            nodes: 0,
            per_node: 0,
            tp: 2,
            ep: 4,
            ranks: (0..size).collect(),
            placement,
        }
    }

    fn builtin() -> SimaiBuiltin {
        let platform = ServerSpec::new(8, 8, "A100", "cx7").unwrap();
        SimaiBuiltin { platform, ratios: RatioTables::builtin() }
    }

    /// SimAI's closed form: S/2^30 / busbw · 1e9 · (2 for all-reduce) · (n−1)/n, in whole ns.
    fn closed(c: Collective, bytes: u64, busbw: f64, n: f64) -> f64 {
        let k = if c == AllReduce { 2.0 } else { 1.0 };
        (bytes as f64 / GIB as f64 / busbw * 1e9 * k * (n - 1.0) / n).trunc()
    }

    fn check(c: Collective, group: &str, n: u32, busbw: f64) {
        let got = builtin().collective_ns(c, &shape(group, n), GIB).unwrap();
        let want = closed(c, GIB, busbw, n as f64);
        assert!((got - want).abs() <= 1.0, "{c:?} in {group}: {got} vs {want}");
    }

    #[test]
    fn tp_inside_a_server_uses_nvlink() {
        // A100: 20 GB/s × 12 links = 240; all-gather/reduce-scatter take the NIC table's 1-node
        // ratio (0.77/0.81 at 1 GiB), all-to-all the all-to-all table's (0.74/0.78).
        check(AllReduce, "TP", 2, 240.0);
        check(AllGather, "TP", 2, 240.0 * 0.77 / 0.81);
        check(ReduceScatter, "TP", 2, 240.0 * 0.77 / 0.81);
        check(AllToAll, "TP", 2, 240.0 * 0.74 / 0.78);
    }

    #[test]
    fn ep_inside_a_server() {
        // t·e = 8 ≤ 8 GPUs: one node, NVLink; all-to-all with the 1-node all-to-all ratio.
        check(AllReduce, "EP", 4, 240.0);
        check(AllGather, "EP", 4, 240.0);
        check(AllToAll, "EP", 4, 240.0 * 0.74 / 0.78);
    }

    #[test]
    fn dp_across_servers() {
        // 32 "nodes" of 8/2 = 4 GPUs with 8/2 = 4 NICs: min(240, 4 × 48.5 = 194) = 194.
        check(AllReduce, "DP", 32, 194.0);
        check(AllGather, "DP", 32, 194.0);
        check(ReduceScatter, "DP", 32, 194.0);
        // All-to-all: B_nic·r/g · (n−1)/((N−1)·g) with N = 32, g = 4, n = 128.
        check(AllToAll, "DP", 32, 48.5 * 4.0 / 4.0 * 127.0 / (31.0 * 4.0));
    }

    #[test]
    fn dp_ep_one_gpu_per_node() {
        // t·e = 8: 8 nodes of 8/8 = 1 GPU with 8/8 = 1 NIC → 48.5.
        check(AllReduce, "DP_EP", 8, 48.5);
        check(AllGather, "DP_EP", 8, 48.5);
        check(ReduceScatter, "DP_EP", 8, 48.5);
        check(AllToAll, "DP_EP", 8, 48.5);
    }

    #[test]
    fn small_messages_cost_a_fixed_time() {
        let m = builtin();
        assert_eq!(m.collective_ns(AllReduce, &shape("TP", 2), 65536).unwrap(), 10000.0);
        assert_eq!(m.collective_ns(AllGather, &shape("DP", 32), 4096).unwrap(), 135000.0);
        assert_eq!(m.collective_ns(AllGather, &shape("DP", 24), 4096).unwrap(), 0.0);
        assert_eq!(m.collective_ns(AllReduce, &shape("TP", 2), 0).unwrap(), 0.0);
    }

    #[test]
    fn sizes_above_the_ratio_table_are_an_error() {
        assert!(builtin().collective_ns(AllGather, &shape("TP", 2), 32 * GIB).is_err());
        // DP collectives take no ratio, so any size is priced.
        assert!(builtin().collective_ns(AllGather, &shape("DP", 32), 32 * GIB).is_ok());
    }

    #[test]
    fn busbw_file_pricing() {
        let text = "x\nTP:\nallreduce,: 300\nallgather,: 280\nreducescatter,: 1\nalltoall,: 230\nDP:\nallreduce,: null\nallgather,: 380\nEP:\nallgather,: 45\nalltoall,: 80\n";
        let m = SimaiBusbwFile { gpus_per_server: 8, world: 64, table: BusbwTable::parse("b.yaml", text).unwrap() };
        let ns = |c, g: &str, n| m.collective_ns(c, &shape(g, n), GIB).unwrap();
        assert_eq!(ns(AllReduce, "TP", 2), closed(AllReduce, GIB, 300.0, 2.0));
        // TP reduce-scatter is read from TP.allgather (SimAI never reads TP.reducescatter).
        assert_eq!(ns(ReduceScatter, "TP", 2), closed(ReduceScatter, GIB, 280.0, 2.0));
        assert_eq!(ns(AllToAll, "TP", 2), closed(AllToAll, GIB, 230.0, 2.0));
        assert_eq!(ns(AllToAll, "EP", 4), closed(AllToAll, GIB, 80.0, 4.0));
        assert_eq!(ns(AllGather, "EP", 4), 0.0);
        assert_eq!(ns(ReduceScatter, "DP", 32), closed(ReduceScatter, GIB, 380.0, 32.0));
        assert_eq!(ns(AllGather, "DP_EP", 8), closed(AllGather, GIB, 45.0, 8.0));
        let e = m.collective_ns(AllReduce, &shape("DP", 32), GIB).unwrap_err();
        assert!(e.to_string().contains("DP.allreduce: is null"), "{e}");
    }
}
