//! The server shape and link speeds the analytical models price collectives with.
//!
//! Constants are those of SimAI-Analytical's built-in model (aliyun/SimAI
//! `astra-sim/system/calbusbw.h`), which took them from NCCL's `src/graph/topo.h`
//! (NVLink per-link 20 GB/s on SM80, 20.6 on SM90) and from achievable ConnectX rates.

use crate::collective::nccl::Arch;
use crate::error::{InputError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuType {
    A100,
    A800,
    H100,
    H800,
    H20,
}

impl GpuType {
    pub const NAMES: &'static str = "A100, A800, H100, H800, H20";

    pub fn parse(name: &str) -> Result<GpuType> {
        match name.to_ascii_uppercase().as_str() {
            "A100" => Ok(GpuType::A100),
            "A800" => Ok(GpuType::A800),
            "H100" => Ok(GpuType::H100),
            "H800" => Ok(GpuType::H800),
            "H20" => Ok(GpuType::H20),
            _ => Err(InputError::field(
                "command line",
                "g_type",
                format!("unknown GPU type '{name}' (valid: {})", GpuType::NAMES),
            )),
        }
    }

    /// NVLink bus bandwidth per GPU (GB/s): NCCL's per-link figure × links.
    pub fn nvlink_busbw(self) -> f32 {
        match self {
            GpuType::H100 | GpuType::H20 => 20.6 * 18.0,
            GpuType::H800 => 20.6 * 8.0,
            GpuType::A100 => 20.0 * 12.0,
            GpuType::A800 => 20.0 * 8.0,
        }
    }

    /// Its generation.
    pub fn arch(self) -> Arch {
        match self {
            GpuType::A100 | GpuType::A800 => Arch::Ampere,
            GpuType::H100 | GpuType::H800 | GpuType::H20 => Arch::Hopper,
        }
    }

    /// NVLS (NVLink SHARP) all-reduce bus bandwidth (GB/s), Hopper NVSwitch only.
    pub fn nvls_busbw(self) -> Option<f32> {
        match self {
            GpuType::H100 | GpuType::H20 => Some(475.0),
            GpuType::H800 => Some(215.0),
            GpuType::A100 | GpuType::A800 => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicType {
    Cx6,
    Cx7,
    Bf3,
}

impl NicType {
    pub fn parse(name: &str) -> Result<NicType> {
        match name.to_ascii_lowercase().as_str() {
            "cx6" => Ok(NicType::Cx6),
            "cx7" => Ok(NicType::Cx7),
            "bf3" => Ok(NicType::Bf3),
            _ => Err(InputError::field(
                "command line",
                "nic_t",
                format!("unknown NIC type '{name}' (valid: cx6, cx7, bf3)"),
            )),
        }
    }

    /// Achievable bus bandwidth per NIC (GB/s): CX6 200 Gb/s line rate 25 → 23.5; CX7/BF3 400 Gb/s 50 → 48.5.
    pub fn busbw(self) -> f32 {
        match self {
            NicType::Cx6 => 23.5,
            NicType::Cx7 | NicType::Bf3 => 48.5,
        }
    }
}

/// What the analytical models need to know about the servers.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub gpus_per_server: u32,
    pub nics_per_server: u32,
    pub gpu: GpuType,
    pub nic: NicType,
    /// Override of the NVLink bus bandwidth per GPU (GB/s), SimAI's `-nv`.
    pub nvlink_busbw: Option<f32>,
    /// Override of the per-NIC bus bandwidth (GB/s), SimAI's `-nic`.
    pub nic_busbw: Option<f32>,
}

impl ServerSpec {
    /// Servers of `gpus` GPUs of type `gpu` and `nics` NICs of type `nic`, no bandwidth overrides.
    pub fn new(gpus: u32, nics: u32, gpu: GpuType, nic: NicType) -> ServerSpec {
        ServerSpec { gpus_per_server: gpus, nics_per_server: nics, gpu, nic, nvlink_busbw: None, nic_busbw: None }
    }

    pub fn nvlink(&self) -> f32 {
        self.nvlink_busbw.filter(|v| *v > 0.0).unwrap_or_else(|| self.gpu.nvlink_busbw())
    }

    pub fn nic_bw(&self) -> f32 {
        self.nic_busbw.filter(|v| *v > 0.0).unwrap_or_else(|| self.nic.busbw())
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(InputError::field("command line", field, msg));
        if self.gpus_per_server == 0 {
            return bad("g_p_s", "GPUs per server must be at least 1".into());
        }
        if self.nics_per_server == 0 {
            return bad("n_p_s", "NICs per server must be at least 1".into());
        }
        for (field, v) in [("nv", self.nvlink_busbw), ("nic", self.nic_busbw)] {
            if let Some(v) = v {
                if !(v > 0.0 && v.is_finite()) {
                    return bad(field, format!("bandwidth must be a positive number of GB/s, got {v}"));
                }
            }
        }
        Ok(())
    }
}
