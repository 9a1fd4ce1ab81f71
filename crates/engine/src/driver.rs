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
/// shipped `SimAI.conf` settings ([`PacketConfig::default`]). The packet model's settings follow
/// as `:key=value` parts, in this order: `:cc=NAME` (congestion control: none, dcqcn, hpcc, timely,
/// dctcp; over the conf's `CC_MODE`), then `:conf=PATH` (a SimAI.conf, read as SimAI reads it; the
/// path is the rest of the text). So `packet:cc=hpcc:conf=runs/SimAI.conf`. "analytical" prices
/// collectives without a fabric and is a front end's own choice, not a fabric's.
pub fn fabric_backend(name: &str) -> Result<Option<PacketConfig>> {
    let bad = |why: String| crate::error::InputError::field("command line", "backend", why);
    if name == "flow" {
        return Ok(None);
    }
    let Some(mut rest) = name.strip_prefix("packet") else {
        return Err(bad(format!("a fabric runs on the flow or packet backend, got {name:?}")));
    };
    let mut cc = None;
    if let Some(after) = rest.strip_prefix(":cc=") {
        let end = after.find(':').unwrap_or(after.len());
        let mode = &after[..end];
        cc = Some(crate::network::packet::CcMode::from_name(mode).ok_or_else(|| {
            crate::error::InputError::field(
                "command line",
                "cc",
                format!("expected none, dcqcn, hpcc, timely or dctcp, got {mode:?}"),
            )
        })?);
        rest = &after[end..];
    }
    let mut config = match rest.strip_prefix(":conf=") {
        Some("") => return Err(bad(format!("conf= needs the path of a SimAI.conf, got {name:?}"))),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| crate::error::InputError::new(path, format!("cannot read the SimAI.conf: {e}")))?;
            crate::network::packet::simai_conf::parse(path, &text)?
        }
        None if rest.is_empty() => PacketConfig::default(),
        None => {
            return Err(bad(format!("expected packet, then :cc=NAME and :conf=PATH (in that order), got {name:?}")))
        }
    };
    if let Some(cc) = cc {
        config.cc = cc;
    }
    Ok(Some(config))
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

#[cfg(test)]
mod backend_tests {
    use super::*;
    use crate::network::packet::CcMode;

    #[test]
    fn backend_names_with_the_packet_models_settings() {
        assert_eq!(fabric_backend("flow").unwrap(), None);
        assert_eq!(fabric_backend("packet").unwrap(), Some(PacketConfig::default()));
        assert_eq!(fabric_backend("packet:cc=timely").unwrap().unwrap().cc, CcMode::Timely);
        let conf = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/ns3/spx16_ar_16m_hpcc/SimAI.conf");
        let from_file = fabric_backend(&format!("packet:conf={conf}")).unwrap().unwrap();
        assert_eq!(from_file.cc, CcMode::Hpcc);
        // --cc over the conf's CC_MODE.
        assert_eq!(fabric_backend(&format!("packet:cc=dctcp:conf={conf}")).unwrap().unwrap().cc, CcMode::Dctcp);
        for (spec, want) in [
            ("packet:cc=bbr", "command line: cc: expected none, dcqcn, hpcc, timely or dctcp, got \"bbr\""),
            ("packets", "command line: backend: expected packet, then :cc=NAME and :conf=PATH"),
            ("packet:conf=/nonexistent/SimAI.conf", "/nonexistent/SimAI.conf: cannot read the SimAI.conf"),
            ("analytical", "command line: backend: a fabric runs on the flow or packet backend"),
        ] {
            let e = fabric_backend(spec).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_empty_conf_path_is_named_as_the_backend_field() {
        let e = super::fabric_backend("packet:conf=").unwrap_err().to_string();
        assert!(e.starts_with("command line: backend:"), "{e}");
    }
}
