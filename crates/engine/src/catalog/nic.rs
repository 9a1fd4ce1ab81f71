//! A NIC: its line rate and the bus bandwidth NCCL achieves through it.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Nic {
    pub name: String,
    /// Line rate, Gbit/s.
    pub gbps: f64,
    /// Achievable bus bandwidth, GB/s (1e9 B/s).
    pub busbw: f64,
    pub source: String,
}

impl Nic {
    /// A NIC entry of `nics.yaml`; the error is (field, problem).
    pub fn from_value(name: &str, v: &Value) -> std::result::Result<Nic, (String, String)> {
        let number = |field: &str| {
            v.get(field)
                .and_then(Value::as_f64)
                .filter(|x| *x > 0.0 && x.is_finite())
                .ok_or_else(|| (field.to_string(), format!("must be a positive number, got {:?}", v.get(field))))
        };
        Ok(Nic {
            name: name.to_string(),
            gbps: number("gbps")?,
            busbw: number("busbw")?,
            source: v.get("source").and_then(Value::as_str).unwrap_or_default().to_string(),
        })
    }
}
