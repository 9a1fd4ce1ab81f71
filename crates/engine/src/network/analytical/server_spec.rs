//! The server shape and link speeds the analytical models price collectives with.
//!
//! The GPU and NIC figures are SimAI's `-g_type` / `-nic_t` profile of the catalog
//! ([`crate::catalog::simai`]).

use crate::catalog::simai::{GpuType, NicType};
use crate::error::{InputError, Result};

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
    /// Servers of `gpus` GPUs of `-g_type` `gpu` and `nics` NICs of `-nic_t` `nic`, no bandwidth
    /// overrides.
    pub fn new(gpus: u32, nics: u32, gpu: &str, nic: &str) -> Result<ServerSpec> {
        let (gpu, nic) = (GpuType::parse(gpu)?, NicType::parse(nic)?);
        Ok(ServerSpec { gpus_per_server: gpus, nics_per_server: nics, gpu, nic, nvlink_busbw: None, nic_busbw: None })
    }

    pub fn nvlink(&self) -> f32 {
        self.nvlink_busbw.filter(|v| *v > 0.0).unwrap_or(self.gpu.nvlink_busbw)
    }

    pub fn nic_bw(&self) -> f32 {
        self.nic_busbw.filter(|v| *v > 0.0).unwrap_or(self.nic.busbw)
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
