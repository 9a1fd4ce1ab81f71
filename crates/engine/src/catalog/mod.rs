//! The catalog: accelerators and NICs, each described once, in one schema, for every part of the
//! engine — the compute model, training, the analytical model's SimAI profile and platforms.
//!
//! The shipped entries are `accelerators.yaml` and `nics.yaml` beside this file (each entry names
//! its sources), compiled into the engine and read once. Users add accelerators of their own as
//! mappings of the same schema ([`Accelerator::from_value`]). RDMA transports' wire framing
//! (RoCEv2, InfiniBand) is in [`transport`]; failure rates of a cluster's parts, with their
//! sources, in [`failures`].

mod accelerator;
mod arch;
pub mod failures;
mod nic;
pub mod simai;
pub mod transport;

use std::sync::OnceLock;

pub use accelerator::{Accelerator, Dtype};
pub use arch::Arch;
pub use nic::Nic;

use crate::error::{InputError, Result};

/// The shipped accelerators and NICs, by name (lower case), in file order.
#[derive(Debug)]
pub struct Catalog {
    pub accelerators: Vec<Accelerator>,
    pub nics: Vec<Nic>,
}

const ACCELERATORS: &str = include_str!("accelerators.yaml");
const NICS: &str = include_str!("nics.yaml");

impl Catalog {
    /// The catalog clustersim ships (parsed on first use).
    pub fn shipped() -> &'static Catalog {
        static SHIPPED: OnceLock<Catalog> = OnceLock::new();
        SHIPPED.get_or_init(|| {
            let nics: Vec<Nic> = entries(NICS)
                .into_iter()
                .map(|(name, v)| Nic::from_value(&name, &v).unwrap_or_else(|e| panic!("nics.yaml: {name}: {e:?}")))
                .collect();
            let accelerators = entries(ACCELERATORS)
                .into_iter()
                .map(|(name, v)| {
                    Accelerator::from_value(&name, &v, &nics)
                        .unwrap_or_else(|(field, problem)| panic!("accelerators.yaml: {name}: {field}: {problem}"))
                })
                .collect();
            Catalog { accelerators, nics }
        })
    }

    /// The accelerator `name` (case-insensitive).
    pub fn accelerator(&self, name: &str) -> Option<&Accelerator> {
        self.accelerators.iter().find(|a| a.name.eq_ignore_ascii_case(name))
    }

    /// The accelerator `name`, or an error naming `file` and `field` that lists the valid names.
    pub fn require_accelerator(&self, file: &str, field: &str, name: &str) -> Result<&Accelerator> {
        self.accelerator(name).ok_or_else(|| {
            InputError::field(
                file,
                field,
                format!("unknown accelerator type '{name}' (valid: {})", self.accelerator_names()),
            )
        })
    }

    /// The accelerators' names, comma-separated, in file order.
    pub fn accelerator_names(&self) -> String {
        self.accelerators.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
    }

    /// The NIC `name` (case-insensitive).
    pub fn nic(&self, name: &str) -> Option<&Nic> {
        self.nics.iter().find(|n| n.name.eq_ignore_ascii_case(name))
    }

    /// The bus bandwidth NCCL achieves (GB/s) through `line_gbps` Gbit/s of NIC line rate: a NIC
    /// of that rate's `busbw`, or k times the busbw of the fastest NIC whose rate goes k times
    /// into it (a port that stands for k NICs). None where no NIC of the catalog fits.
    pub fn nic_busbw_at(&self, line_gbps: f64) -> Option<f64> {
        let times = |n: &Nic| {
            let k = (line_gbps / n.gbps).round();
            (k >= 1.0 && (line_gbps - k * n.gbps).abs() <= 1e-6 * line_gbps).then_some(k)
        };
        let nic = self.nics.iter().filter(|n| times(n).is_some()).max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
        times(nic).map(|k| k * nic.busbw)
    }

    /// The generation of accelerator type `name`; None for a type the catalog does not know or
    /// gives no generation (NCCL has no figures for it).
    pub fn arch_of(name: &str) -> Option<Arch> {
        Catalog::shipped().accelerator(name).and_then(|a| a.arch)
    }
}

/// A shipped YAML file's entries, YAML merge keys applied, in file order; entries named `_…`
/// (anchors of shared defaults) left out.
fn entries(text: &str) -> Vec<(String, serde_json::Value)> {
    let mut doc: serde_norway::Value = serde_norway::from_str(text).expect("a shipped catalog file is valid YAML");
    // An anchor that merges another (`_hopper` merges `_defaults`) brings its own merge key
    // along: apply until none is left.
    for _ in 0..4 {
        doc.apply_merge().expect("a shipped catalog file's merge keys apply");
    }
    let serde_norway::Value::Mapping(map) = doc else { panic!("a shipped catalog file is a mapping") };
    map.into_iter()
        .filter_map(|(k, v)| {
            let name = k.as_str().expect("catalog names are strings").to_string();
            let value = serde_json::to_value(v).expect("catalog entries are JSON values");
            (!name.starts_with('_')).then_some((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_entry_reads_and_names_its_source() {
        let c = Catalog::shipped();
        assert_eq!(c.accelerator_names(), "v100, a100, a100-40gb, a800, h100, h200, h800, h20, b200, mi300x");
        for a in &c.accelerators {
            assert!(a.source.as_deref().is_some_and(|s| !s.is_empty()), "{}", a.name);
            a.check().unwrap();
        }
        for n in &c.nics {
            assert!(!n.source.is_empty(), "{}", n.name);
        }
        // NCCL's busbw through a NIC by line rate: ConnectX-7 400 Gb/s 48.5, ConnectX-6 200 Gb/s
        // 23.5, a port of two ConnectX-7 (800 Gb/s) is ConnectX-8's 97; 300 Gb/s is 3 × CX-5's 11.5.
        assert_eq!(c.nic_busbw_at(400.0), Some(48.5));
        assert_eq!(c.nic_busbw_at(200.0), Some(23.5));
        assert_eq!(c.nic_busbw_at(800.0), Some(97.0));
        assert_eq!(c.nic_busbw_at(300.0), Some(3.0 * 11.5));
        assert_eq!(c.nic_busbw_at(50.0), None);
        // The shared defaults of the `_defaults` and `_hopper` anchors reach their entries.
        let (a100, h100) = (c.accelerator("A100").unwrap(), c.accelerator("h100").unwrap());
        assert_eq!(
            (a100.gemm_efficiency, h100.gemm_efficiency, h100.attention_bwd_efficiency),
            (0.8, 0.74, Some(0.43))
        );
        assert_eq!((a100.matmul_tflops, a100.vector_tflops, h100.nic_busbw, a100.nic_busbw), (312.0, 19.5, 48.5, 23.5));
        assert_eq!(c.accelerator("v100").unwrap().matmul_tflops, 125.0, "no bf16: fp16's tensor peak");
    }

    #[test]
    fn generations_come_from_the_catalog() {
        assert_eq!(Catalog::arch_of("H800"), Some(Arch::Hopper));
        assert_eq!(Catalog::arch_of("a800"), Some(Arch::Ampere));
        assert_eq!(Catalog::arch_of("B200"), Some(Arch::Blackwell));
        assert_eq!(Catalog::arch_of("mi300x"), None);
        assert_eq!(Catalog::arch_of("tpu"), None);
    }
}
