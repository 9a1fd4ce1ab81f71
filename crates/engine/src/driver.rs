//! The one driver: a workload on a network model gives an execution. Every front end
//! (`analytical` and `run` for SimAI files, `train` for Megatron plans, `collective` for
//! nccl-tests sweeps, and the Python API through them) picks its [`Backend`] and calls
//! [`simulate`]; nothing else runs the executor.

use crate::error::Result;
use crate::executor::{Execution, Executor};
use crate::network::analytical::{Analytical, CollectiveCost};
use crate::network::flow::network::{FlowNetwork, Tuning};
use crate::network::packet::PacketConfig;
use crate::network::NetworkModel;
use crate::platform::fault::Fault;
use crate::platform::routing::Routes;
use crate::platform::{Placement, Platform};
use crate::workload::Workload;

/// The flow or packet backend: a fabric, how collectives become transfers on it, and what moves
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConfig {
    pub topology: Platform,
    pub tuning: Tuning,
    pub routes: Routes,
    /// Move the transfers as packets with this configuration (the packet backend) instead of as
    /// max-min fair flows.
    pub packet: Option<PacketConfig>,
    /// Links down or slower from a time on ([`crate::platform::fault`]).
    pub faults: Vec<Fault>,
}

impl FlowConfig {
    /// A fresh flow network on this fabric.
    pub fn network(&self) -> Result<FlowNetwork> {
        let mut net = FlowNetwork::tuned(self.topology.clone(), &self.tuning, |s| s)?;
        net.set_routes(self.routes.clone());
        if let Some(config) = &self.packet {
            net.use_packets(config.clone())?;
        }
        net.set_faults(self.faults.clone())?;
        Ok(net)
    }
}

/// What moves a fabric's transfers, by the name `--backend` (and the API's `backend=`) gives:
/// "flow" (max-min fair flows, the default) is None, "packet" the packet model with SimAI 1.6's
/// shipped `SimAI.conf` settings ([`PacketConfig::default`]). "analytical" prices collectives
/// without a fabric and is a front end's own choice, not a fabric's.
pub fn fabric_backend(name: &str) -> Result<Option<PacketConfig>> {
    match name {
        "flow" => Ok(None),
        "packet" => Ok(Some(PacketConfig::default())),
        other => Err(crate::error::InputError::field(
            "command line",
            "backend",
            format!("a fabric runs on the flow or packet backend, got {other:?}"),
        )),
    }
}

/// Which network model prices the communication.
pub enum Backend<'a> {
    /// Closed-form prices ([`Analytical`]) with ranks placed by `placement`.
    Analytical { cost: Box<dyn CollectiveCost>, placement: Placement },
    /// Max-min fair flows on a fabric.
    Flow(&'a FlowConfig),
    /// A flow network built by the caller (a sweep that watches the tuner's choices).
    FlowNetwork(Box<FlowNetwork>),
    /// A network model the caller built and keeps (a workload graph's flow network, which also
    /// moves reads of remote memory); what it carried is read off it afterwards.
    Model(&'a mut dyn NetworkModel),
}

/// An execution, and the bytes each directed link of the fabric carried (flow backends only).
pub struct Simulation {
    pub execution: Execution,
    pub link_bytes: Vec<f64>,
}

/// Run `w` on `backend`; `progress(fraction)` returning false stops the run.
pub fn simulate(w: &Workload, backend: Backend<'_>, progress: &mut dyn FnMut(f64) -> bool) -> Result<Simulation> {
    let executor = Executor::new(w)?;
    match backend {
        Backend::Analytical { cost, placement } => {
            let execution = executor.run(&mut Analytical::new(cost, placement), progress)?;
            Ok(Simulation { execution, link_bytes: Vec::new() })
        }
        Backend::Flow(config) => run_flow(&executor, config.network()?, progress),
        Backend::FlowNetwork(net) => run_flow(&executor, *net, progress),
        Backend::Model(model) => {
            let execution = executor.run(model, progress)?;
            Ok(Simulation { execution, link_bytes: Vec::new() })
        }
    }
}

fn run_flow(executor: &Executor, mut net: FlowNetwork, progress: &mut dyn FnMut(f64) -> bool) -> Result<Simulation> {
    let execution = executor.run(&mut net, progress)?;
    Ok(Simulation { execution, link_bytes: net.carried_bytes().to_vec() })
}
