//! Binding of the analytical model's servers (SimAI's `-g_p_s`, `-n_p_s`, `-g_type`, `-nic_t`,
//! `-nv`, `-nic`): one typed object every analytical binding takes.

use clustersim_engine::catalog::simai::{GpuType, NicType};
use clustersim_engine::network::analytical::server_spec::ServerSpec;
use pyo3::prelude::*;

use crate::engine_err;

/// Servers of `gpus_per_server` GPUs of SimAI `-g_type` `gpu_type` (a profile of the catalog) and
/// `nics_per_server` NICs (default: one per GPU) of `-nic_t` `nic_type`; `nvlink_busbw` and
/// `nic_busbw` (GB/s) override the built-in bus bandwidths. Checked as it is made.
#[pyclass(name = "ServerSpec", module = "clustersim._engine", frozen)]
pub struct PyServerSpec {
    pub(crate) inner: ServerSpec,
}

#[pymethods]
impl PyServerSpec {
    #[new]
    #[pyo3(signature = (*, gpus_per_server = 8, nics_per_server = None, gpu_type = "H100", nic_type = "cx7",
        nvlink_busbw = None, nic_busbw = None))]
    fn new(
        gpus_per_server: u32,
        nics_per_server: Option<u32>,
        gpu_type: &str,
        nic_type: &str,
        nvlink_busbw: Option<f32>,
        nic_busbw: Option<f32>,
    ) -> PyResult<Self> {
        let inner = ServerSpec {
            gpus_per_server,
            nics_per_server: nics_per_server.unwrap_or(gpus_per_server),
            gpu: GpuType::parse(gpu_type).map_err(engine_err)?,
            nic: NicType::parse(nic_type).map_err(engine_err)?,
            nvlink_busbw,
            nic_busbw,
        };
        inner.validate().map_err(engine_err)?;
        Ok(PyServerSpec { inner })
    }

    /// NVLink bus bandwidth per GPU, GB/s (the override, else the GPU type's).
    #[getter]
    fn nvlink_busbw(&self) -> f32 {
        self.inner.nvlink()
    }

    /// Bus bandwidth per NIC, GB/s (the override, else the NIC type's).
    #[getter]
    fn nic_busbw(&self) -> f32 {
        self.inner.nic_bw()
    }
}
