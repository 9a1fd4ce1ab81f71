//! SimAI-Analytical's `-g_type` and `-nic_t`: a named profile of the catalog, not a second
//! description of the hardware. `-g_type` (A100, A800, H100, H800, H20) names the catalog's
//! accelerators of the same names and `-nic_t` (cx6, cx7, bf3) its NICs.
//!
//! SimAI computes in single precision and writes an NVLink bus bandwidth as NCCL's per-link
//! figure times the links (aliyun/SimAI `astra-sim/system/calbusbw.cc`: 20.6 GB/s × 18 on H100,
//! from NCCL's `topo.h`): the profile takes the per-link figure from the catalog's
//! `nvlink_busbw / nvlink_links` and multiplies in `f32` as SimAI does, so that its outputs stay
//! byte-identical (20.6 × 18 in `f32` is 370.80002, not the 370.79999 of 370.8 written in `f32`).

use super::{Arch, Catalog};
use crate::error::{InputError, Result};

/// The accelerators `-g_type` accepts, in SimAI's spelling.
pub const GPU_TYPES: [&str; 5] = ["A100", "A800", "H100", "H800", "H20"];
/// The NICs `-nic_t` accepts.
pub const NIC_TYPES: [&str; 3] = ["cx6", "cx7", "bf3"];

/// A `-g_type`: the figures SimAI's analytical model prices a server's scale-up domain with.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuType {
    /// SimAI's spelling (upper case).
    pub name: &'static str,
    /// NVLink bus bandwidth per GPU (GB/s): per-link figure × links, in `f32`.
    pub nvlink_busbw: f32,
    /// NVLS all-reduce bus bandwidth (GB/s), where the NVSwitch reduces.
    pub nvls_busbw: Option<f32>,
    pub arch: Option<Arch>,
}

impl GpuType {
    pub fn parse(name: &str) -> Result<GpuType> {
        let simai = spelling(&GPU_TYPES, "g_type", "GPU", name)?;
        let acc = Catalog::shipped()
            .accelerator(simai)
            .ok_or_else(|| InputError::internal("catalog", format!("SimAI's {simai} is not an entry")))?;
        let links = acc.nvlink_links.ok_or_else(|| {
            InputError::internal("catalog", format!("{}: SimAI's profile needs nvlink_links", acc.name))
        })?;
        let per_link = (acc.nvlink_busbw / f64::from(links)) as f32;
        Ok(GpuType {
            name: simai,
            nvlink_busbw: per_link * links as f32,
            nvls_busbw: acc.nvls_busbw.map(|x| x as f32),
            arch: acc.arch,
        })
    }
}

/// A `-nic_t`: the bus bandwidth per NIC (GB/s) SimAI's analytical model prices the scale-out
/// network with.
#[derive(Debug, Clone, PartialEq)]
pub struct NicType {
    pub name: &'static str,
    pub busbw: f32,
}

impl NicType {
    pub fn parse(name: &str) -> Result<NicType> {
        let simai = spelling(&NIC_TYPES, "nic_t", "NIC", name)?;
        let nic = Catalog::shipped()
            .nic(simai)
            .ok_or_else(|| InputError::internal("catalog", format!("SimAI's {simai} is not a NIC")))?;
        Ok(NicType { name: simai, busbw: nic.busbw as f32 })
    }
}

/// SimAI's spelling of `name` among `names` (case-insensitive), or an error naming the flag.
fn spelling(names: &[&'static str], flag: &str, what: &str, name: &str) -> Result<&'static str> {
    names.iter().copied().find(|t| t.eq_ignore_ascii_case(name)).ok_or_else(|| {
        InputError::field("command line", flag, format!("unknown {what} type '{name}' (valid: {})", names.join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_gives_simai_figures_to_the_bit() {
        // calbusbw.cc's figures, as SimAI computes them in f32.
        let expected: [(&str, f32, Option<f32>, Arch); 5] = [
            ("A100", 20.0 * 12.0, None, Arch::Ampere),
            ("A800", 20.0 * 8.0, None, Arch::Ampere),
            ("H100", 20.6 * 18.0, Some(475.0), Arch::Hopper),
            ("H800", 20.6 * 8.0, Some(215.0), Arch::Hopper),
            ("H20", 20.6 * 18.0, Some(475.0), Arch::Hopper),
        ];
        for (name, nvlink, nvls, arch) in expected {
            let g = GpuType::parse(&name.to_lowercase()).unwrap();
            assert_eq!(
                (g.name, g.nvlink_busbw.to_bits(), g.nvls_busbw, g.arch),
                (name, nvlink.to_bits(), nvls, Some(arch))
            );
        }
        let nics: Vec<f32> = NIC_TYPES.iter().map(|n| NicType::parse(n).unwrap().busbw).collect();
        assert_eq!(nics, [23.5, 48.5, 48.5]);
        assert_eq!(
            GpuType::parse("B200").unwrap_err().to_string(),
            "command line: g_type: unknown GPU type 'B200' (valid: A100, A800, H100, H800, H20)"
        );
        assert_eq!(
            NicType::parse("cx5").unwrap_err().to_string(),
            "command line: nic_t: unknown NIC type 'cx5' (valid: cx6, cx7, bf3)"
        );
    }
}
