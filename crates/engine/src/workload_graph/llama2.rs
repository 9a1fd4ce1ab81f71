//! The HCSim paper's LLaMA2-13B data-parallel workload graph (§3.1 (2), Fig. 7), as a graph
//! document: `layers` decoders of hidden size h, sequence s, batch b per XPU, every vertex on every
//! XPU (`*`), each decoder's gradients all-reduced after its backward pass, and the loop closed
//! by `not_first` edges from each all-reduce to its decoder's first forward vertex. Like the paper
//! (Table 4) the decoder is GPT-shaped: a 4h MLP with GeLU, LayerNorm.
//!
//! Per layer, with e = `element_bytes` (FP32: 4), t = b·s tokens:
//! - linear h_in → h_out: forward 2·t·h_in·h_out FLOPs reading e·(h_in·h_out + t·h_in) bytes
//!   (weights, input); backward twice the FLOPs, reading 16 bytes per weight (FP32 weight,
//!   gradient, Adam's two moments) and e·2·t·(h_in + h_out) (saved input, output gradient,
//!   input gradient written, output read);
//! - self-attention (a = `heads`): forward 4·t·s·h FLOPs (QKᵀ and the weighted sum of V),
//!   reading e·(3·t·h + 2·b·a·s²) (Q, K, V; the score matrix written and read back); backward
//!   twice the FLOPs and the bytes;
//! - LayerNorm, dropout, GeLU, add: 5, 1, 8 and 1 FLOPs per element, reading their inputs (e per
//!   element; add two) forward and twice that backward (negligible FLOPs, as in Table 4).
//!
//! The all-reduce of decoder l carries its parameters' gradients: e·(12h² + 13h) bytes. With
//! [`Sync::Layer`], as the paper builds its graph (§3.1 (2): each neural layer's gradients in its
//! own communication vertex), every layer with parameters (LayerNorm 2h, linear h_in·h_out +
//! h_out) has its own all-reduce after its backward vertex instead: 8 per decoder, the same bytes.

use serde_json::{json, Value};

use crate::error::{InputError, Result};

/// Where gradients are all-reduced: once per decoder, or per layer with parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    Decoder,
    Layer,
}

impl Sync {
    pub const NAMES: [&'static str; 2] = ["decoder", "layer"];

    pub fn parse(text: &str) -> Result<Sync> {
        match text {
            "decoder" => Ok(Sync::Decoder),
            "layer" => Ok(Sync::Layer),
            _ => Err(InputError::field(
                "command line",
                "--sync",
                format!("'{text}' is not one of {}", Sync::NAMES.join(", ")),
            )),
        }
    }
}

/// The graph's sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Llama2 {
    pub batch: u64,
    pub layers: u64,
    pub hidden: u64,
    pub seq: u64,
    pub heads: u64,
    pub element_bytes: u64,
    pub iterations: u64,
    pub sync: Sync,
}

/// Forward FLOPs, forward bytes, backward FLOPs, backward bytes of one layer.
type Costs = [f64; 4];

impl Llama2 {
    /// The paper's model: 40 decoders, h = 5120, s = 4096, 40 heads, FP32, one iteration.
    pub fn paper(batch: u64) -> Llama2 {
        Llama2 {
            batch,
            layers: 40,
            hidden: 5120,
            seq: 4096,
            heads: 40,
            element_bytes: 4,
            iterations: 1,
            sync: Sync::Decoder,
        }
    }

    /// The graph document (module doc).
    pub fn document(&self) -> Result<Value> {
        let Llama2 { batch: b, layers, hidden: h, seq: s, heads: a, element_bytes: e, iterations, sync } = *self;
        if [b, layers, h, s, a, e, iterations].contains(&0) {
            return Err(InputError::field("command line", "llama2-13b", "every size must be at least 1"));
        }
        let dtype = match e {
            2 => "fp16",
            4 => "fp32",
            8 => "fp64",
            _ => return Err(InputError::field("command line", "--element-bytes", format!("{e} is not 2, 4 or 8"))),
        };
        let (bf, sf, hf, af, ef) = (b as f64, s as f64, h as f64, a as f64, e as f64);
        let t = bf * sf;
        let linear = |h_in: u64, h_out: u64| -> Costs {
            let (i, o) = (h_in as f64, h_out as f64);
            let fwd = 2.0 * t * i * o;
            [fwd, ef * (i * o + t * i), 2.0 * fwd, 16.0 * i * o + ef * 2.0 * t * (i + o)]
        };
        let elementwise = |flops_per: f64, n: u64, inputs: f64| -> Costs {
            let n = n as f64;
            [flops_per * t * n, ef * inputs * t * n, 2.0 * flops_per * t * n, 2.0 * ef * inputs * t * n]
        };
        let (attn_flops, attn_bytes) = (4.0 * t * sf * hf, ef * (3.0 * t * hf + 2.0 * bf * af * sf * sf));
        let parts: [(&str, Costs); 14] = [
            ("layernorm1", elementwise(5.0, h, 1.0)),
            ("linear_k", linear(h, h)),
            ("linear_q", linear(h, h)),
            ("linear_v", linear(h, h)),
            ("attention", [attn_flops, attn_bytes, 2.0 * attn_flops, 2.0 * attn_bytes]),
            ("linear_out", linear(h, h)),
            ("dropout1", elementwise(1.0, h, 1.0)),
            ("add1", elementwise(1.0, h, 2.0)),
            ("layernorm2", elementwise(5.0, h, 1.0)),
            ("linear_up", linear(h, 4 * h)),
            ("gelu", elementwise(8.0, 4 * h, 1.0)),
            ("linear_down", linear(4 * h, h)),
            ("dropout2", elementwise(1.0, h, 1.0)),
            ("add2", elementwise(1.0, h, 2.0)),
        ];
        // Parameters of the layers that have them (weights and biases; LayerNorm's scale and shift).
        let params = |name: &str| -> Option<u64> {
            Some(match name {
                "layernorm1" | "layernorm2" => 2 * h,
                "linear_k" | "linear_q" | "linear_v" | "linear_out" => h * h + h,
                "linear_up" => 4 * h * h + 4 * h,
                "linear_down" => 4 * h * h + h,
                _ => return None,
            })
        };
        let decoder_params: u64 = parts.iter().filter_map(|(n, _)| params(n)).sum();
        let mut nodes = Vec::new();
        let mut links = Vec::new();
        let compute = |nodes: &mut Vec<Value>, id: String, flops: f64, bytes: f64| {
            nodes.push(json!({"id": id, "kind": "compute", "xpu": "*", "flops": flops.round() as u64,
                              "dtype": dtype, "bytes": bytes.round() as u64}));
        };
        // Gradients all-reduced once `after` is done; `before` waits for them from iteration 2.
        let all_reduce =
            |nodes: &mut Vec<Value>, links: &mut Vec<Value>, id: String, after: &str, before: String, n: u64| {
                nodes.push(json!({"id": id, "kind": "communication", "pattern": "allreduce", "participants": "*",
                              "bytes": e * n}));
                links.push(json!({"source": after, "target": id}));
                links.push(json!({"source": id, "target": before, "not_first": true}));
            };
        let mut previous: Option<String> = None;
        for layer in 0..layers {
            for (name, c) in &parts {
                let id = format!("d{layer}.fwd.{name}");
                compute(&mut nodes, id.clone(), c[0], c[1]);
                if let Some(p) = previous {
                    links.push(json!({"source": p, "target": id}));
                }
                previous = Some(id);
            }
        }
        for layer in (0..layers).rev() {
            for (name, c) in parts.iter().rev() {
                let id = format!("d{layer}.bwd.{name}");
                compute(&mut nodes, id.clone(), c[2], c[3]);
                links.push(json!({"source": previous, "target": id}));
                if let (Sync::Layer, Some(n)) = (sync, params(name)) {
                    let before = format!("d{layer}.fwd.{name}");
                    all_reduce(&mut nodes, &mut links, format!("d{layer}.{name}.allreduce"), &id, before, n);
                }
                previous = Some(id);
            }
            if sync == Sync::Decoder {
                let (after, before) = (previous.clone().unwrap_or_default(), format!("d{layer}.fwd.{}", parts[0].0));
                all_reduce(&mut nodes, &mut links, format!("d{layer}.allreduce"), &after, before, decoder_params);
            }
        }
        let name = format!("llama2-13b b={b} (decoders {layers}, hidden {h}, seq {s}, {dtype})");
        Ok(json!({
            "directed": true,
            "multigraph": false,
            "graph": {"name": name, "iterations": iterations},
            "nodes": nodes,
            "links": links,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoder_has_the_layer_formulas() {
        let doc = Llama2 { layers: 2, ..Llama2::paper(2) }.document().unwrap();
        let nodes = doc["nodes"].as_array().unwrap();
        let node = |id: &str| nodes.iter().find(|n| n["id"] == id).unwrap();
        let (t, h, s) = (2.0 * 4096.0, 5120.0, 4096.0);
        assert_eq!(node("d0.fwd.linear_up")["flops"], (2.0 * t * h * 4.0 * h) as u64);
        assert_eq!(node("d1.bwd.linear_up")["bytes"], (16.0 * h * 4.0 * h + 4.0 * 2.0 * t * 5.0 * h) as u64);
        assert_eq!(node("d0.fwd.attention")["bytes"], (4.0 * (3.0 * t * h + 2.0 * 2.0 * 40.0 * s * s)) as u64);
        // 14 forward and 14 backward vertices and one all-reduce of 4·(12h² + 13h) bytes per decoder.
        assert_eq!(nodes.len(), 2 * 29);
        assert_eq!(node("d0.allreduce")["bytes"], 4 * (12 * 5120 * 5120 + 13 * 5120));
        let per_layer = Llama2 { layers: 1, sync: Sync::Layer, ..Llama2::paper(1) }.document().unwrap();
        let syncs: Vec<u64> = per_layer["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["kind"] == "communication")
            .map(|n| n["bytes"].as_u64().unwrap())
            .collect();
        assert_eq!((syncs.len(), syncs.iter().sum::<u64>()), (8, 4 * (12 * 5120 * 5120 + 13 * 5120)));
        assert!(Llama2 { element_bytes: 3, ..Llama2::paper(1) }
            .document()
            .unwrap_err()
            .message
            .contains("is not 2, 4 or 8"));
    }
}
