//! Fabric templates: every fabric the engine builds from a handful of parameters, one file per
//! family, each giving a [`Platform`] (and, for SimAI's, the name and warnings that
//! gen_Topo_Template.py gives).
//!
//! - [`simai`]: SimAI's gen_Topo_Template.py templates (Spectrum-X, AlibabaHPN, DCN+ and the
//!   custom fabric: rail-optimised, dual ToR, dual plane), one pod or several joined by a core
//!   tier; their parameters in [`params`].
//! - [`fat_tree`]: the k-ary fat-tree of GPU servers.
//! - [`hcsim`]: the two systems of the HCSim paper (typed devices: CPUs, NICs, PCIe and CXL).
//!
//! Python and the CLI only pass parameters in; the numbering and wiring rules live here.

pub mod fat_tree;
pub mod hcsim;
pub mod params;
pub mod simai;

pub use params::{Param, ParamKind, SimaiTemplate, TemplateParams, Value, PARAMS};

use super::{Link, NodeKind, Platform};
use crate::error::{InputError, Result};

/// A built template: the platform, the name its generator gives it (gen_Topo_Template.py's
/// file name) and what the template adjusted in its parameters.
#[derive(Debug, Clone)]
pub struct Fabric {
    pub platform: Platform,
    pub name: String,
    pub warnings: Vec<String>,
}

/// Most links a template may have (each is two directed links of the engine).
const MAX_LINKS: u64 = 1 << 30;

/// Full-duplex links of a SimAI-convention fabric under construction (GPUs, then NVSwitches,
/// then switches), in file order; every link has the fabric's one error rate.
struct Links {
    error_rate: f64,
    links: Vec<Link>,
}

impl Links {
    /// Room for `count` full-duplex links, refused beyond [`MAX_LINKS`].
    fn with_capacity(source: &str, count: u64, error_rate: f64) -> Result<Links> {
        if count > MAX_LINKS {
            return Err(InputError::new(source, format!("{count} links is more than {MAX_LINKS}")));
        }
        Ok(Links { error_rate, links: Vec::with_capacity(2 * count as usize) })
    }

    fn add(&mut self, src: u64, dst: u64, bandwidth: f64, latency_ns: f64) {
        let (src, dst, error_rate) = (src as u32, dst as u32, self.error_rate);
        self.links.push(Link { src, dst, bandwidth, latency_ns, error_rate });
        self.links.push(Link { src: dst, dst: src, bandwidth, latency_ns, error_rate });
    }

    /// Full-duplex links in file order, as (src, dst, bandwidth).
    fn duplex(&self) -> impl Iterator<Item = (u32, u32, f64)> + '_ {
        self.links.iter().step_by(2).map(|l| (l.src, l.dst, l.bandwidth))
    }

    /// The platform of GPUs 0 … `gpus` − 1 (ranks, in servers of `gpus_per_server`), then
    /// `nvswitches` NVSwitches, then `switches` switches.
    fn platform(
        self,
        source: &str,
        (gpus, nvswitches, switches): (u64, u64, u64),
        gpus_per_server: u64,
        gpu_type: &str,
    ) -> Result<Platform> {
        if gpus + nvswitches + switches > (u32::MAX / 2) as u64 {
            return Err(InputError::new(source, format!("{} nodes is too many", gpus + nvswitches + switches)));
        }
        let kinds = [
            vec![NodeKind::Gpu; gpus as usize],
            vec![NodeKind::NvSwitch; nvswitches as usize],
            vec![NodeKind::Switch; switches as usize],
        ]
        .concat();
        Platform::from_parts(source, kinds, self.links, gpus_per_server as u32, gpu_type)
    }
}
