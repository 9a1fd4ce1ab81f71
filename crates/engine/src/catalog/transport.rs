//! The wire format of RDMA transports: how many bytes a link carries for each payload byte.
//!
//! One definition for every model that needs it: the NCCL cost model's achieved NIC bandwidth,
//! the packet-level backend's packet sizes. A packet of `payload` bytes occupies
//! `payload + header_bytes + gap_bytes` of the link's time.
//!
//! Sources (header layouts from the specifications, sizes in bytes):
//! - RoCEv2 (InfiniBand Architecture Specification Vol. 1, Annex A17): Ethernet header 14 + FCS 4,
//!   IPv4 20, UDP 8, IB Base Transport Header 12, ICRC 4 = 62 in the frame; preamble + start
//!   delimiter 8 and the minimum inter-frame gap 12 (IEEE 802.3) = 20 more of line time. RDMA
//!   WRITE's first packet adds a 16-byte RETH, not counted here (one packet in a message).
//! - InfiniBand (IBA Vol. 1 §5, §9): Local Route Header 8, BTH 12, ICRC 4, VCRC 2 = 26; no Global
//!   Route Header inside one subnet. IB's quoted rates (HDR 200, NDR 400 Gbit/s) are data rates,
//!   after line coding, and links carry no inter-frame gap.
//! - Path MTU 4096 bytes: the largest RDMA MTU and what NCCL uses on both (`NCCL_IB_MTU`'s
//!   default is the port's active MTU, 4096 on InfiniBand and on RoCE ports with jumbo frames).

/// An RDMA transport's framing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transport {
    pub name: &'static str,
    /// Payload bytes per packet (the path MTU).
    pub mtu_bytes: u32,
    /// Header and trailer bytes in each packet.
    pub header_bytes: u32,
    /// Line time between packets, in bytes (preamble and inter-frame gap on Ethernet).
    pub gap_bytes: u32,
}

pub const ROCE_V2: Transport = Transport { name: "RoCEv2", mtu_bytes: 4096, header_bytes: 62, gap_bytes: 20 };
pub const INFINIBAND: Transport = Transport { name: "InfiniBand", mtu_bytes: 4096, header_bytes: 26, gap_bytes: 0 };

impl Transport {
    /// Line bytes per packet of `payload` bytes.
    pub fn wire_bytes(&self, payload: u32) -> u32 {
        payload + self.header_bytes + self.gap_bytes
    }

    /// Payload share of the line rate for full-MTU packets: the most a single message can reach.
    pub fn efficiency(&self) -> f64 {
        f64::from(self.mtu_bytes) / f64::from(self.wire_bytes(self.mtu_bytes))
    }

    /// Line bytes for a message of `bytes`, cut into MTU packets (the last one short).
    pub fn message_wire_bytes(&self, bytes: u64) -> u64 {
        let mtu = u64::from(self.mtu_bytes);
        let packets = bytes.div_ceil(mtu).max(1);
        bytes + packets * u64::from(self.header_bytes + self.gap_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_mtu_efficiency_by_hand() {
        // 4096 / (4096 + 82) and 4096 / (4096 + 26).
        assert!((ROCE_V2.efficiency() - 0.980_373_4).abs() < 1e-6);
        assert!((INFINIBAND.efficiency() - 0.993_692_4).abs() < 1e-6);
        // NDR: 50 GB/s of line rate carries 49.68 GB/s of payload at most.
        assert!((50.0 * INFINIBAND.efficiency() - 49.684_6).abs() < 1e-3);
    }

    #[test]
    fn a_message_is_cut_into_mtu_packets() {
        assert_eq!(ROCE_V2.message_wire_bytes(4096), 4096 + 82);
        assert_eq!(ROCE_V2.message_wire_bytes(4097), 4097 + 2 * 82);
        assert_eq!(INFINIBAND.message_wire_bytes(0), 26);
        assert_eq!(INFINIBAND.message_wire_bytes(1 << 20), (1 << 20) + 256 * 26);
    }
}
