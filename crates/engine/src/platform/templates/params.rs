//! gen_Topo_Template.py's parameters: names, short flags, defaults per template, and which
//! structure flags a template forces — defined here once; the Python API and the CLI read them
//! from the engine.
//!
//! The names are the script's own (`gpu`, `nics_per_aswitch`, …); rates and delays stay text, as
//! the script takes them, because they also appear in the output file name. Defaults are the
//! script's code values (formats.md §3.3), not its README table's.

use crate::error::{InputError, Result};
use crate::platform::simai::{parse_rate, parse_time};

/// gen_Topo_Template.py's named templates; no `-topo` is the custom fabric shaped by --ro, --dt
/// and --dp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimaiTemplate {
    SpectrumX,
    AlibabaHpn,
    DcnPlus,
}

impl SimaiTemplate {
    pub const ALL: [SimaiTemplate; 3] = [SimaiTemplate::SpectrumX, SimaiTemplate::AlibabaHpn, SimaiTemplate::DcnPlus];

    pub fn name(self) -> &'static str {
        match self {
            SimaiTemplate::SpectrumX => "Spectrum-X",
            SimaiTemplate::AlibabaHpn => "AlibabaHPN",
            SimaiTemplate::DcnPlus => "DCN+",
        }
    }

    /// The template of this exact name (the script's spelling).
    pub fn parse(name: &str) -> Option<SimaiTemplate> {
        SimaiTemplate::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What a parameter's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A whole number ≥ 1.
    Count,
    /// A whole number ≥ 0.
    Whole,
    /// An ns-3 DataRate (`400Gbps`).
    Rate,
    /// An ns-3 Time (`0.0005ms`).
    Delay,
    /// A per-packet drop probability from 0 to 1.
    Probability,
    Text,
}

impl ParamKind {
    pub fn name(self) -> &'static str {
        match self {
            ParamKind::Count => "count",
            ParamKind::Whole => "whole",
            ParamKind::Rate => "rate",
            ParamKind::Delay => "delay",
            ParamKind::Probability => "probability",
            ParamKind::Text => "text",
        }
    }

    /// The least value of a whole-number kind.
    pub fn least(self) -> Option<i64> {
        match self {
            ParamKind::Count => Some(1),
            ParamKind::Whole => Some(0),
            _ => None,
        }
    }
}

/// One knob of gen_Topo_Template.py.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    /// The script's short flag.
    pub flag: &'static str,
    pub kind: ParamKind,
    pub doc: &'static str,
}

/// Every parameter, in the script's order.
pub const PARAMS: [Param; 14] = [
    Param { name: "gpu", flag: "-g", kind: ParamKind::Count, doc: "GPUs per pod" },
    Param { name: "error_rate", flag: "-er", kind: ParamKind::Probability, doc: "per-packet error rate of every link" },
    Param { name: "gpu_per_server", flag: "-gps", kind: ParamKind::Count, doc: "GPUs per server" },
    Param { name: "gpu_type", flag: "-gt", kind: ParamKind::Text, doc: "GPU type in the header" },
    Param { name: "nv_switch_per_server", flag: "-nsps", kind: ParamKind::Whole, doc: "NVSwitches per server" },
    Param { name: "nvlink_bw", flag: "-nvbw", kind: ParamKind::Rate, doc: "GPU-NVSwitch rate" },
    Param { name: "nv_latency", flag: "-nl", kind: ParamKind::Delay, doc: "GPU-NVSwitch delay" },
    Param { name: "latency", flag: "-l", kind: ParamKind::Delay, doc: "NIC and switch-switch delay" },
    Param { name: "bandwidth", flag: "-bw", kind: ParamKind::Rate, doc: "NIC-ASW rate" },
    Param {
        name: "asw_switch_num",
        flag: "-asn",
        kind: ParamKind::Whole,
        doc: "ASW count, recomputed from the GPU count",
    },
    Param { name: "nics_per_aswitch", flag: "-npa", kind: ParamKind::Count, doc: "NICs per ASW" },
    Param { name: "psw_switch_num", flag: "-psn", kind: ParamKind::Whole, doc: "PSW count per pod" },
    Param { name: "ap_bandwidth", flag: "-apbw", kind: ParamKind::Rate, doc: "switch-switch rate" },
    Param { name: "asw_per_psw", flag: "-app", kind: ParamKind::Count, doc: "ASWs one pod can hold" },
];

/// The parameter named `name`.
pub fn param(name: &str) -> Option<&'static Param> {
    PARAMS.iter().find(|p| p.name == name)
}

/// `name (flag)`, as messages name a parameter.
pub fn label(name: &str) -> String {
    param(name).map_or_else(|| name.to_string(), |p| format!("{name} ({})", p.flag))
}

/// The message for a value that is not a whole number in range (`got` as the caller spells it).
pub fn not_whole(kind: ParamKind, got: &str) -> String {
    format!("must be a whole number ≥ {}, got {got}", kind.least().unwrap_or(0))
}

/// A parameter's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Text(String),
}

/// A parameter's field.
enum Slot<'a> {
    Int(&'a mut i64),
    Text(&'a mut String),
}

/// Every knob of gen_Topo_Template.py for one fabric, resolved ([`TemplateParams::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateParams {
    pub topology: Option<SimaiTemplate>,
    pub rail_optimized: bool,
    pub dual_tor: bool,
    pub dual_plane: bool,
    pub gpu: i64,
    pub error_rate: String,
    pub gpu_per_server: i64,
    pub gpu_type: String,
    pub nv_switch_per_server: i64,
    pub nvlink_bw: String,
    pub nv_latency: String,
    pub latency: String,
    pub bandwidth: String,
    pub asw_switch_num: i64,
    pub nics_per_aswitch: i64,
    pub psw_switch_num: i64,
    pub ap_bandwidth: String,
    pub asw_per_psw: i64,
    /// Whether `asw_switch_num` was given (`-asn`), not the template's default: only a count the
    /// user gave is worth a warning when the GPU count corrects it.
    pub asw_switch_num_given: bool,
}

impl Default for TemplateParams {
    /// The base defaults: the custom fabric's.
    fn default() -> Self {
        TemplateParams {
            topology: None,
            rail_optimized: false,
            dual_tor: false,
            dual_plane: false,
            gpu: 32,
            error_rate: "0".into(),
            gpu_per_server: 8,
            gpu_type: "H100".into(),
            nv_switch_per_server: 1,
            nvlink_bw: "2880Gbps".into(),
            nv_latency: "0.000025ms".into(),
            latency: "0.0005ms".into(),
            bandwidth: "400Gbps".into(),
            asw_switch_num: 8,
            nics_per_aswitch: 64,
            psw_switch_num: 64,
            ap_bandwidth: "400Gbps".into(),
            asw_per_psw: 64,
            asw_switch_num_given: false,
        }
    }
}

/// Link parameters in the engine's units: rates in GB/s (bytes/ns), delays in ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkRates {
    pub nvlink: f64,
    pub nv_latency: f64,
    pub nic: f64,
    pub latency: f64,
    pub ap: f64,
    pub error_rate: f64,
}

/// `text` as a rate in GB/s, or why not.
pub fn read_rate(text: &str) -> std::result::Result<f64, String> {
    parse_rate(text).ok_or_else(|| format!("'{text}' is not a data rate (e.g. 400Gbps, 2880Gbps, 100GBps)"))
}

/// `text` as a delay in ns, or why not.
pub fn read_delay(text: &str) -> std::result::Result<f64, String> {
    parse_time(text).ok_or_else(|| format!("'{text}' is not a delay (e.g. 0.0005ms, 500ns, 1us)"))
}

/// `text` as a per-packet drop probability, or why not.
pub fn read_probability(text: &str) -> std::result::Result<f64, String> {
    let value: f64 = text.trim().parse().map_err(|_| format!("'{text}' is not a number"))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(format!("'{text}': an error rate is a probability from 0 to 1"));
    }
    Ok(value)
}

impl TemplateParams {
    /// Resolve a template's parameters as gen_Topo_Template.py does: `ro`, `dt`, `dp` are the
    /// --ro/--dt/--dp flags; they shape the custom fabric (`topology` None); the named templates
    /// force their structure (AlibabaHPN honours --dp, DCN+ honours --dt, the rest are ignored,
    /// as in the script). `overrides` are parameters by name.
    pub fn resolve(
        topology: Option<&str>,
        ro: bool,
        dt: bool,
        dp: bool,
        overrides: &[(String, Value)],
    ) -> Result<TemplateParams> {
        let template = match topology {
            None => None,
            Some(name) => Some(SimaiTemplate::parse(name).ok_or_else(|| {
                let names: Vec<&str> = SimaiTemplate::ALL.iter().map(|t| t.name()).collect();
                InputError::field(
                    "template",
                    "topology",
                    format!("unknown template '{name}' (valid: {}, or none for a custom fabric)", names.join(", ")),
                )
            })?),
        };
        if let Some((name, _)) = overrides.iter().find(|(name, _)| param(name).is_none()) {
            let names: Vec<&str> = PARAMS.iter().map(|p| p.name).collect();
            return Err(InputError::field("template", name, format!("not a parameter (valid: {})", names.join(", "))));
        }
        let mut p = TemplateParams { rail_optimized: ro, dual_tor: dt, dual_plane: dp, ..TemplateParams::default() };
        p.topology = template;
        match template {
            None => {}
            Some(SimaiTemplate::SpectrumX) => {
                p.gpu = 4096;
                (p.rail_optimized, p.dual_tor, p.dual_plane) = (true, false, false);
            }
            Some(SimaiTemplate::AlibabaHpn) => {
                p.gpu = 15360;
                p.bandwidth = "200Gbps".into();
                (p.asw_switch_num, p.nics_per_aswitch, p.psw_switch_num) = (240, 128, 120);
                p.asw_per_psw = if dp { 120 } else { 240 };
                (p.rail_optimized, p.dual_tor, p.dual_plane) = (true, true, dp);
            }
            Some(SimaiTemplate::DcnPlus) => {
                p.gpu = 512;
                (p.asw_switch_num, p.asw_per_psw, p.psw_switch_num) = (8, 8, 8);
                if dt {
                    p.bandwidth = "200Gbps".into();
                    p.nics_per_aswitch = 128;
                }
                (p.rail_optimized, p.dual_tor, p.dual_plane) = (false, dt, false);
            }
        }
        for (name, value) in overrides {
            p.set(name, value.clone())?;
        }
        p.asw_switch_num_given = overrides.iter().any(|(name, _)| name == "asw_switch_num");
        Ok(p)
    }

    /// The value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<Value> {
        let mut copy = self.clone();
        copy.slot(name).map(|slot| match slot {
            Slot::Int(v) => Value::Int(*v),
            Slot::Text(t) => Value::Text(std::mem::take(t)),
        })
    }

    /// Set parameter `name`: a whole number for whole-number kinds, text for the others.
    pub fn set(&mut self, name: &str, value: Value) -> Result<()> {
        let kind = param(name).map(|p| p.kind);
        match (self.slot(name), value) {
            (Some(Slot::Int(slot)), Value::Int(v)) => *slot = v,
            (Some(Slot::Text(slot)), Value::Text(t)) => *slot = t,
            (Some(Slot::Text(slot)), Value::Int(v)) => *slot = v.to_string(),
            (Some(Slot::Int(_)), Value::Text(t)) => {
                let kind = kind.unwrap_or(ParamKind::Count);
                return Err(InputError::field("template", &label(name), not_whole(kind, &format!("'{t}'"))));
            }
            (None, _) => return Err(InputError::field("template", name, "not a parameter")),
        }
        Ok(())
    }

    /// The field of parameter `name`.
    fn slot(&mut self, name: &str) -> Option<Slot<'_>> {
        Some(match name {
            "gpu" => Slot::Int(&mut self.gpu),
            "error_rate" => Slot::Text(&mut self.error_rate),
            "gpu_per_server" => Slot::Int(&mut self.gpu_per_server),
            "gpu_type" => Slot::Text(&mut self.gpu_type),
            "nv_switch_per_server" => Slot::Int(&mut self.nv_switch_per_server),
            "nvlink_bw" => Slot::Text(&mut self.nvlink_bw),
            "nv_latency" => Slot::Text(&mut self.nv_latency),
            "latency" => Slot::Text(&mut self.latency),
            "bandwidth" => Slot::Text(&mut self.bandwidth),
            "asw_switch_num" => Slot::Int(&mut self.asw_switch_num),
            "nics_per_aswitch" => Slot::Int(&mut self.nics_per_aswitch),
            "psw_switch_num" => Slot::Int(&mut self.psw_switch_num),
            "ap_bandwidth" => Slot::Text(&mut self.ap_bandwidth),
            "asw_per_psw" => Slot::Int(&mut self.asw_per_psw),
            _ => return None,
        })
    }

    /// Whole-number parameter `name` checked to be from its least value to u32::MAX.
    pub fn whole(&self, source: &str, name: &str) -> Result<u64> {
        let kind = param(name).map_or(ParamKind::Count, |p| p.kind);
        let v = match self.get(name) {
            Some(Value::Int(v)) => v,
            _ => return Err(InputError::internal("templates", format!("{name} is not a whole-number parameter"))),
        };
        if v < kind.least().unwrap_or(0) {
            return Err(InputError::field(source, &label(name), not_whole(kind, &v.to_string())));
        }
        if v > u32::MAX as i64 {
            return Err(InputError::field(source, &label(name), format!("{v} is more than {}", u32::MAX)));
        }
        Ok(v as u64)
    }

    /// The link parameters read into the engine's units.
    pub fn link_rates(&self) -> Result<LinkRates> {
        let field = |name: &str, r: std::result::Result<f64, String>| {
            r.map_err(|m| InputError::field("template", &label(name), m))
        };
        Ok(LinkRates {
            nvlink: field("nvlink_bw", read_rate(&self.nvlink_bw))?,
            nv_latency: field("nv_latency", read_delay(&self.nv_latency))?,
            nic: field("bandwidth", read_rate(&self.bandwidth))?,
            latency: field("latency", read_delay(&self.latency))?,
            ap: field("ap_bandwidth", read_rate(&self.ap_bandwidth))?,
            error_rate: field("error_rate", read_probability(&self.error_rate))?,
        })
    }

    /// The file name gen_Topo_Template.py gives these parameters (one pod).
    pub fn file_name(&self) -> String {
        let tail = format!("{}g_{}gps_", self.gpu, self.gpu_per_server);
        let end = format!("{}_{}", self.bandwidth, self.gpu_type);
        let is = |t: SimaiTemplate| self.topology == Some(t);
        if self.rail_optimized && !self.dual_tor {
            let prefix = if is(SimaiTemplate::SpectrumX) { "Spectrum-X_" } else { "Rail_Opti_SingleToR_" };
            return format!("{prefix}{tail}{end}");
        }
        if self.rail_optimized {
            let prefix = if is(SimaiTemplate::AlibabaHpn) { "AlibabaHPN_" } else { "Rail_Opti_" };
            let plane = if self.dual_plane { "DualPlane_" } else { "SinglePlane_" };
            return format!("{prefix}{tail}DualToR_{plane}{end}");
        }
        if is(SimaiTemplate::DcnPlus) {
            let prefix = if self.dual_tor { "DCN+DualToR_" } else { "DCN+SingleToR_" };
            return format!("{prefix}{tail}{end}");
        }
        let tor = if self.dual_tor { "DualToR_" } else { "SingleToR_" };
        format!("No_Rail_Opti_{tail}{tor}{end}")
    }
}

impl Param {
    /// One line of help: what it is, its base default and where a template's differs, e.g.
    /// `NIC-ASW rate (default 400Gbps; 200Gbps AlibabaHPN, DCN+ --dt)`.
    pub fn help(&self) -> String {
        let show = |v: Value| match v {
            Value::Int(i) => i.to_string(),
            Value::Text(t) => t,
        };
        let base = TemplateParams::default().get(self.name).map(show).unwrap_or_default();
        let variants = [
            ("Spectrum-X", "Spectrum-X", false, false),
            ("AlibabaHPN", "AlibabaHPN", false, false),
            ("AlibabaHPN", "AlibabaHPN --dp", false, true),
            ("DCN+", "DCN+", false, false),
            ("DCN+", "DCN+ --dt", true, false),
        ];
        let value_of = |template: &str, dt: bool, dp: bool| {
            let resolved = TemplateParams::resolve(Some(template), false, dt, dp, &[]).expect("a named template");
            resolved.get(self.name).map(show).unwrap_or_default()
        };
        let mut by_value: Vec<(String, Vec<&str>)> = Vec::new();
        for (template, label, dt, dp) in variants {
            let v = value_of(template, dt, dp);
            // Nothing to say where it is the base default, or where a flag changes nothing.
            if v == base || ((dt || dp) && v == value_of(template, false, false)) {
                continue;
            }
            match by_value.iter_mut().find(|(value, _)| *value == v) {
                Some((_, labels)) => labels.push(label),
                None => by_value.push((v, vec![label])),
            }
        }
        let others: Vec<String> = by_value.iter().map(|(v, ls)| format!("{v} {}", ls.join(", "))).collect();
        if others.is_empty() {
            format!("{} (default {base})", self.doc)
        } else {
            format!("{} (default {base}; {})", self.doc, others.join("; "))
        }
    }
}
