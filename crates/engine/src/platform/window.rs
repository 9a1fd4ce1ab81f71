//! How many bytes a reader keeps in flight to a memory device: its read window W.
//!
//! A requester may have only so many read requests outstanding, each waiting for its
//! completion; so by Little's law it reads at most W / RTT, W = outstanding requests × request
//! size, RTT the time one request is outstanding: out over the path (α), served by the device
//! (its latency d), back over the path (α), RTT = 2α + d. The flow model holds each read to
//! that rate as a ceiling ([`crate::network::flow`]). The defaults, from the protocols' tag limits:
//!
//! - **DRAM behind a CPU, copied by a DMA engine over PCIe** (the non-coherent system): 768
//!   outstanding non-posted requests, the 10-bit tag space of PCIe 4.0+ less the 256 values
//!   whose Tag[9:8] = 00 (PCIe Base Specification 4.0, §2.2.6.2; Intel's R-Tile PCIe hard IP
//!   "supports up to 768 outstanding Non-Posted Requests", user guide 683501 §4.4.1.5), each
//!   a read of the Max_Read_Request_Size, which the specification allows from 128 to 4096 B
//!   (AMD PG156, "Maximum Request Size"); we take 512 B, a common setting. W = 768 × 512 B.
//! - **CXL Type-3 memory read in place** (CXL.mem, the coherent system): requests of one 64-byte
//!   cache line (CXL 2.0 §3.3); at most 16384 outstanding, the 14-bit tag space of PCIe 6.0's
//!   flit mode on which CXL 3.x runs. No published per-requester CXL.mem figure was found
//!   (Sun et al., MICRO'23, and Pond, ASPLOS'23, measure latency and bandwidth, not windows;
//!   Yang et al., 2025, report CXL devices' limited parallelism, which would only lower W).
//!   W = 16384 × 64 B = 1 MiB.
//!
//! At the HCSim systems' defaults neither bound binds: hcsim-cxl's read path (XPU–CXL
//! switch–device, 2 × 200 ns) has RTT 800 ns, so W / RTT = 1311 GB/s against 128 GB/s links;
//! hcsim-pcie's copy path (XPU–PCIe switch–CPU–DRAM, 250 + 250 + 100 ns) 1.2 µs, 328 GB/s.
//! The CXL bound reaches the 128 GB/s link at RTT = 8.2 µs (a CXL link latency of 2 µs).

use super::MemoryKind;

/// Outstanding non-posted requests of a PCIe requester with 10-bit tags.
pub const PCIE_TAGS: f64 = 768.0;
/// Max_Read_Request_Size of a DMA engine's reads, bytes.
pub const PCIE_READ_REQUEST: f64 = 512.0;
/// Outstanding CXL.mem reads: PCIe 6.0 flit mode's 14-bit tags.
pub const CXL_TAGS: f64 = 16384.0;
/// Bytes of one CXL.mem read: a cache line.
pub const CXL_LINE: f64 = 64.0;

impl MemoryKind {
    /// The read window of a device of this kind, bytes (module doc).
    pub fn default_window(self) -> f64 {
        match self {
            MemoryKind::Dram => PCIE_TAGS * PCIE_READ_REQUEST,
            MemoryKind::Cxl => CXL_TAGS * CXL_LINE,
        }
    }
}

/// The rate ceiling (bytes/ns) of a read with window `window` bytes over a one-way path
/// latency `path_ns` from a device of latency `device_ns`: W / (2α + d), ∞ when that is 0.
pub fn read_ceiling(window: f64, path_ns: f64, device_ns: f64) -> f64 {
    let rtt = 2.0 * path_ns + device_ns;
    if rtt > 0.0 {
        window / rtt
    } else {
        f64::INFINITY
    }
}

/// A read window from an input: positive bytes, or ∞ for no bound.
pub fn check_window(file: &str, field: &str, bytes: f64) -> crate::error::Result<f64> {
    if bytes.is_nan() || bytes <= 0.0 {
        return Err(crate::error::InputError::field(
            file,
            field,
            format!("read window {bytes} bytes must be positive (or inf for no bound)"),
        ));
    }
    Ok(bytes)
}
