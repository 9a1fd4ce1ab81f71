//! SimAI's ns-3 configuration (`SimAI.conf`), as the packet backend reads it.

use clustersim_engine::network::packet::simai_conf;

use crate::mutate::{mutate_text, Rng};
use crate::{campaign, refused, Outcome, Verdict};

const FILE: &str = "SimAI.conf";

/// The shipped file (DCQCN) and the same with HPCC, as the reference runs have them.
const CONFS: [&str; 2] = [
    include_str!("../../../../tests/data/ns3/spx16_ar_16m/SimAI.conf"),
    include_str!("../../../../tests/data/ns3/spx16_ar_16m_hpcc/SimAI.conf"),
];

const CONF_WORDS: &[&str] = &[
    "ENABLE_QCN",
    "USE_DYNAMIC_PFC_THRESHOLD",
    "PACKET_PAYLOAD_SIZE",
    "CC_MODE",
    "ALPHA_RESUME_INTERVAL",
    "RATE_DECREASE_INTERVAL",
    "RP_TIMER",
    "EWMA_GAIN",
    "FAST_RECOVERY_TIMES",
    "RATE_AI",
    "RATE_HAI",
    "MIN_RATE",
    "ERROR_RATE_PER_LINK",
    "L2_ACK_INTERVAL",
    "HAS_WIN",
    "LINK_DOWN",
    "KMAX_MAP",
    "KMIN_MAP",
    "PMAX_MAP",
    "BUFFER_SIZE",
    "U_TARGET",
    "MI_THRESH",
    "FAST_REACT",
    "MULTI_RATE",
    "SAMPLE_FEEDBACK",
    "DCTCP_RATE_AI",
    "VAR_WIN",
    "INT_MULTI",
    "CLAMP_TARGET_RATE",
    "8",
    "10",
    "0",
    "1",
    "3",
    "7",
    "1e308",
    "-1",
    "nan",
    "inf",
    "50Mb/s",
    "400Gbps",
    "100000000000",
    "0.0625",
];

/// An accepted file gives a configuration with no NaN or infinity in it; a refused one names the
/// file, the line and the key.
fn simai_conf(text: &str) -> Verdict {
    match simai_conf::parse(FILE, text) {
        Err(e) => refused(FILE, &e, |_| false),
        Ok(cfg) => {
            let shown = format!("{cfg:?}");
            if shown.contains("NaN") || shown.contains("inf") {
                return Err(format!("accepted a configuration that is not finite: {shown}"));
            }
            Ok(Outcome::Accepted)
        }
    }
}

#[test]
fn simai_conf_files() {
    campaign(
        "SimAI.conf",
        |rng: &mut Rng| {
            let seed = *rng.pick(&CONFS);
            mutate_text(rng, seed, CONF_WORDS)
        },
        simai_conf,
    );
}
