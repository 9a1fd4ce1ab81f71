//! Routes: shortest paths by hop count with deterministic per-flow ECMP, per-packet spraying,
//! or user routes.
//!
//! Per-flow ECMP: among the equal-cost next hops at a node, a flow takes the one picked by a
//! hash of (seed, flow id, src, dst, node): the same inputs give the same routes bit for bit,
//! another seed gives another spread. A flow is one queue pair (the flow model gives each QP of
//! a connection its own id, as RoCE gives each QP its own UDP source port). Spraying
//! ([`Router::spray`]) instead splits the flow evenly at every node over all its equal-cost next
//! hops. Dual-ToR and dual-plane fabrics need nothing special: a GPU with
//! two ToR links has two equal-cost first hops. GPUs of one server talk over their NVSwitches
//! (NVLink before the NIC, as NCCL does), even where a ToR path is as short.
//!
//! Distances are kept only towards switches, one `u16` per switch, computed by a reverse BFS the
//! first time a route needs them; the distance to a GPU is one more than to the nearest switch
//! that links to it. A 16k-GPU fabric therefore stores a few thousand small arrays at most.

use crate::random::mix;
use std::collections::HashMap;

use crate::error::{InputError, Result};
use crate::platform::Platform;

const FAR: u16 = u16::MAX;

pub struct Router {
    seed: u64,
    /// Dense index of each switch node (u32::MAX for GPUs).
    sw_index: Vec<u32>,
    switches: usize,
    /// Hop counts from every switch to the key switch, through switches only.
    to_switch: HashMap<u32, Box<[u16]>>,
}

/// Deterministic choice among `n` equal-cost options.
pub fn ecmp_pick(seed: u64, flow: u64, src: u32, dst: u32, node: u32, n: usize) -> usize {
    let h = mix(mix(mix(seed ^ mix(flow)) ^ ((src as u64) << 32 | dst as u64)) ^ node as u64);
    (h % n as u64) as usize
}

impl Router {
    pub fn new(topo: &Platform, seed: u64) -> Router {
        let mut sw_index = vec![u32::MAX; topo.node_count() as usize];
        let mut switches = 0;
        for (v, idx) in sw_index.iter_mut().enumerate() {
            if topo.is_transit(v as u32) {
                *idx = switches as u32;
                switches += 1;
            }
        }
        Router { seed, sw_index, switches, to_switch: HashMap::new() }
    }

    fn ensure(&mut self, topo: &Platform, target: u32) {
        if self.to_switch.contains_key(&target) {
            return;
        }
        let mut d = vec![FAR; self.switches].into_boxed_slice();
        d[self.sw_index[target as usize] as usize] = 0;
        let mut queue = std::collections::VecDeque::from([target]);
        while let Some(u) = queue.pop_front() {
            let du = d[self.sw_index[u as usize] as usize];
            for &l in topo.in_links(u) {
                let x = topo.links[l as usize].src;
                let xi = self.sw_index[x as usize];
                if xi != u32::MAX && d[xi as usize] == FAR {
                    d[xi as usize] = du.saturating_add(1);
                    queue.push_back(x);
                }
            }
        }
        self.to_switch.insert(target, d);
    }

    /// Distances toward `dst` (building the tables it needs).
    fn toward<'a>(&'a mut self, topo: &'a Platform, dst: u32) -> Toward<'a> {
        // Switches that end the path: dst itself, or those linking to the GPU dst.
        let ends: Vec<u32> = if topo.is_transit(dst) {
            vec![dst]
        } else {
            let mut e: Vec<u32> = topo
                .in_links(dst)
                .iter()
                .map(|&l| topo.links[l as usize].src)
                .filter(|&w| topo.is_transit(w))
                .collect();
            e.sort_unstable();
            e.dedup();
            e
        };
        for &w in &ends {
            self.ensure(topo, w);
        }
        let tables = ends.iter().map(|w| &self.to_switch[w][..]).collect();
        Toward { topo, dst, sw_index: &self.sw_index, tables, extra: u16::from(!topo.is_transit(dst)) }
    }

    /// Check `src` and `dst`; the NVSwitch links of a same-server pair (NVLink before the NIC),
    /// or None when the pair talks over the network.
    fn scale_up(topo: &Platform, src: u32, dst: u32) -> Result<Option<Vec<(u32, u32)>>> {
        let n = topo.node_count();
        for (v, what) in [(src, "src"), (dst, "dst")] {
            if v >= n {
                return Err(InputError::field("flows", what, format!("node {v} is not in the topology (0..{n})")));
            }
        }
        if let Some(domain) = topo.domain_of(src).filter(|&d| topo.domain_of(dst) == Some(d)) {
            let via: Vec<(u32, u32)> = topo
                .nvswitches(domain)
                .iter()
                .filter_map(|&s| Some((link_between(topo, src, s)?, link_between(topo, s, dst)?)))
                .collect();
            if !via.is_empty() {
                return Ok(Some(via));
            }
        }
        Ok(None)
    }

    /// Append to `out` the directed links of flow `flow`'s path from `src` to `dst`.
    pub fn route(&mut self, topo: &Platform, src: u32, dst: u32, flow: u64, out: &mut Vec<u32>) -> Result<()> {
        let via = Self::scale_up(topo, src, dst)?;
        if src == dst {
            return Ok(());
        }
        if let Some(via) = via {
            let (a, b) = via[ecmp_pick(self.seed, flow, src, dst, src, via.len())];
            out.extend([a, b]);
            return Ok(());
        }
        let seed = self.seed;
        let tw = self.toward(topo, dst);
        let mut u = src;
        let mut cands: Vec<u32> = Vec::new();
        for _ in 0..topo.node_count() {
            tw.next_links(src, u, &mut cands)?;
            let l = cands[ecmp_pick(seed, flow, src, dst, u, cands.len())];
            out.push(l);
            u = topo.links[l as usize].dst;
            if u == dst {
                return Ok(());
            }
        }
        Err(InputError::field("flows", "route", format!("no loop-free path from node {src} to node {dst}")))
    }

    /// Per-packet spraying ([`crate::platform::Routing::Spray`]): every shortest path from
    /// `src` to `dst` with the share of the flow it carries, appended to `out`. Each node splits
    /// what reaches it evenly over its equal-cost next hops, so the shares sum to 1 and a path's
    /// share is the product of 1/k over its hops (on a symmetric Clos: 1 / the path count). Two
    /// GPUs of one server split evenly over their NVSwitches, as NVLink traffic does.
    pub fn spray(&mut self, topo: &Platform, src: u32, dst: u32, out: &mut Vec<(Vec<u32>, f64)>) -> Result<()> {
        let via = Self::scale_up(topo, src, dst)?;
        if src == dst {
            return Ok(());
        }
        if let Some(via) = via {
            let share = 1.0 / via.len() as f64;
            out.extend(via.into_iter().map(|(a, b)| (vec![a, b], share)));
            return Ok(());
        }
        let tw = self.toward(topo, dst);
        // Depth-first over (path so far, share): a path ends when it reaches dst.
        let mut stack = vec![(Vec::new(), src, 1.0)];
        let mut cands = Vec::new();
        while let Some((path, u, share)) = stack.pop() {
            if path.len() >= topo.node_count() as usize {
                return Err(InputError::field(
                    "flows",
                    "route",
                    format!("no loop-free path from node {src} to node {dst}"),
                ));
            }
            tw.next_links(src, u, &mut cands)?;
            let part = share / cands.len() as f64;
            for &l in cands.iter().rev() {
                let mut p: Vec<u32> = path.clone();
                p.push(l);
                let v = topo.links[l as usize].dst;
                if v == dst {
                    out.push((p, part));
                } else {
                    stack.push((p, v, part));
                }
            }
            if out.len() + stack.len() > MAX_SPRAY_PATHS {
                return Err(InputError::field(
                    "flows",
                    "route",
                    format!("spraying node {src} to node {dst} takes more than {MAX_SPRAY_PATHS} paths"),
                ));
            }
        }
        Ok(())
    }
}

/// Most paths one sprayed flow may take (a two-tier Clos with 64 spines needs 64; dual ToR 128).
pub const MAX_SPRAY_PATHS: usize = 4096;

/// Hop counts toward one destination.
struct Toward<'a> {
    topo: &'a Platform,
    dst: u32,
    sw_index: &'a [u32],
    /// Hop counts from every switch to each switch that ends a path.
    tables: Vec<&'a [u16]>,
    /// One more hop when dst is a GPU.
    extra: u16,
}

impl Toward<'_> {
    fn dist(&self, v: u32) -> u16 {
        if v == self.dst {
            return 0;
        }
        let i = self.sw_index[v as usize];
        if i == u32::MAX {
            return FAR;
        }
        self.tables.iter().map(|t| t[i as usize]).min().unwrap_or(FAR).saturating_add(self.extra)
    }

    /// The links out of `u` that start a shortest path to dst (a flow from `src`), into `out`.
    fn next_links(&self, src: u32, u: u32, out: &mut Vec<u32>) -> Result<()> {
        let mut best = FAR;
        out.clear();
        for &l in self.topo.out_links(u) {
            let d = self.dist(self.topo.links[l as usize].dst);
            if d < best {
                best = d;
                out.clear();
            }
            if d == best && d != FAR {
                out.push(l);
            }
        }
        if out.is_empty() {
            return Err(InputError::field(
                "flows",
                "route",
                format!("no path from node {src} to node {} (stuck at node {u}; GPUs do not forward)", self.dst),
            ));
        }
        Ok(())
    }
}

/// The first directed link from `a` to `b`, if any.
pub fn link_between(topo: &Platform, a: u32, b: u32) -> Option<u32> {
    topo.out_links(a).iter().copied().find(|&l| topo.links[l as usize].dst == b)
}

/// Links of a user-given node path; a hop without a link is an error naming it.
pub fn links_of_path(topo: &Platform, nodes: &[u32], src: u32, dst: u32, out: &mut Vec<u32>) -> Result<()> {
    if nodes.first() != Some(&src) || nodes.last() != Some(&dst) {
        return Err(InputError::field(
            "routes",
            "route",
            format!("route {nodes:?} must start at node {src} and end at node {dst}"),
        ));
    }
    for hop in nodes.windows(2) {
        let l = if hop[0] < topo.node_count() { link_between(topo, hop[0], hop[1]) } else { None };
        out.push(l.ok_or_else(|| {
            InputError::field("routes", "route", format!("hop {} -> {} of route {nodes:?} has no link", hop[0], hop[1]))
        })?);
    }
    Ok(())
}

/// User routes, read from a routes file: every flow from a route's first node to its last takes
/// it (over ECMP and over the NVSwitch split inside a server).
///
/// ```text
/// # comment
/// 0 1152 1160 1153 9      one route per line: its nodes, source first, destination last
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Routes(HashMap<(u32, u32), Vec<u32>>);

impl Routes {
    /// Parse routes file `text` (named `path` in messages) against `topo`: every hop must be a
    /// link, every pair routed once.
    pub fn parse(path: &str, text: &str, topo: &Platform) -> Result<Routes> {
        let mut routes = HashMap::new();
        let mut first_line = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let body = raw.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            let nodes = body
                .split_whitespace()
                .enumerate()
                .map(|(k, w)| {
                    let v: u32 = w.parse().map_err(|_| {
                        InputError::at(path, line, &format!("node {}", k + 1), format!("'{w}' is not a node number"))
                    })?;
                    if v >= topo.node_count() {
                        return Err(InputError::at(
                            path,
                            line,
                            &format!("node {}", k + 1),
                            format!("node {v} is not in the topology (0..{})", topo.node_count()),
                        ));
                    }
                    Ok(v)
                })
                .collect::<Result<Vec<u32>>>()?;
            let (src, dst) = (nodes[0], nodes[nodes.len() - 1]);
            if nodes.len() < 2 || src == dst {
                return Err(InputError::at(path, line, "route", "a route needs two distinct end nodes"));
            }
            let inner = &nodes[1..nodes.len() - 1];
            if let Some(v) = inner.iter().find(|&&v| !topo.is_transit(v)) {
                return Err(InputError::at(path, line, "route", format!("node {v} is a GPU, which does not forward")));
            }
            if let Some(k) = (1..nodes.len()).find(|&k| nodes[..k].contains(&nodes[k])) {
                return Err(InputError::at(path, line, "route", format!("node {} comes twice", nodes[k])));
            }
            let mut links = Vec::new();
            links_of_path(topo, &nodes, src, dst, &mut links)
                .map_err(|e| InputError::at(path, line, "route", e.message))?;
            if let Some(before) = first_line.insert((src, dst), line) {
                return Err(InputError::at(
                    path,
                    line,
                    "route",
                    format!("a second route from {src} to {dst} (the first is on line {before})"),
                ));
            }
            routes.insert((src, dst), links);
        }
        Ok(Routes(routes))
    }

    /// The links of the user route from `src` to `dst`, if one was given.
    pub fn get(&self, src: u32, dst: u32) -> Option<&[u32]> {
        self.0.get(&(src, dst)).map(Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Link, NodeKind};

    /// `gpus` single-GPU servers, `tors` ToRs, every GPU on every ToR, each ToR on `spines`
    /// spines (a dual-ToR, multi-spine toy fabric).
    fn fabric(gpus: u32, tors: u32, spines: u32) -> Platform {
        let kinds = [vec![NodeKind::Gpu; gpus as usize], vec![NodeKind::Switch; (tors + spines) as usize]].concat();
        let mut links = Vec::new();
        let mut both = |a: u32, b: u32| {
            for (s, d) in [(a, b), (b, a)] {
                links.push(Link { src: s, dst: d, bandwidth: 1.0, latency_ns: 1.0, error_rate: 0.0 });
            }
        };
        for g in 0..gpus {
            for t in 0..tors {
                // GPU g is on ToRs g % tors and (g + 1) % tors only.
                if t == g % tors || t == (g + 1) % tors {
                    both(g, gpus + t);
                }
            }
        }
        for t in 0..tors {
            for s in 0..spines {
                both(gpus + t, gpus + tors + s);
            }
        }
        Platform::from_parts("t", kinds, links, 1, "H100").unwrap()
    }

    fn nodes(t: &Platform, src: u32, links: &[u32]) -> Vec<u32> {
        std::iter::once(src).chain(links.iter().map(|&l| t.links[l as usize].dst)).collect()
    }

    #[test]
    fn shortest_paths_spread_over_equal_costs() {
        let t = fabric(8, 4, 4);
        let mut r = Router::new(&t, 7);
        let mut firsts = std::collections::BTreeSet::new();
        let mut spines = std::collections::BTreeSet::new();
        for f in 0..64 {
            let mut p = Vec::new();
            r.route(&t, 0, 5, f, &mut p).unwrap();
            let n = nodes(&t, 0, &p);
            // GPU 0 on ToRs 8, 9; GPU 5 on ToRs 9, 10: via ToR 9 is 2 hops, the only shortest.
            assert_eq!(n, vec![0, 9, 5]);
            let mut q = Vec::new();
            r.route(&t, 0, 2, f, &mut q).unwrap();
            let m = nodes(&t, 0, &q);
            assert_eq!(m.len(), 5, "{m:?}");
            firsts.insert(m[1]);
            spines.insert(m[2]);
        }
        // 0 → 2: ToRs {8, 9} to {10, 11} via any of 4 spines; ECMP uses both ToRs and all spines.
        assert_eq!(firsts.into_iter().collect::<Vec<_>>(), vec![8, 9]);
        assert_eq!(spines.len(), 4);
    }

    #[test]
    fn spraying_splits_evenly_at_every_hop() {
        // 0 → 2 on the dual-ToR toy: 2 first ToRs × 4 spines × 2 last ToRs, 1/16 each.
        let t = fabric(8, 4, 4);
        let mut paths = Vec::new();
        Router::new(&t, 0).spray(&t, 0, 2, &mut paths).unwrap();
        assert_eq!(paths.len(), 16);
        assert!(paths.iter().all(|(_, share)| *share == 1.0 / 16.0), "{paths:?}");
        let distinct: std::collections::BTreeSet<Vec<u32>> = paths.iter().map(|(p, _)| nodes(&t, 0, p)).collect();
        assert_eq!(distinct.len(), 16);
        assert!(distinct.iter().all(|n| n.len() == 5 && n[0] == 0 && n[4] == 2), "{distinct:?}");
        // Unequal fan-out: 0 → 5 has one shortest path (via ToR 9), so it carries everything.
        paths.clear();
        Router::new(&t, 0).spray(&t, 0, 5, &mut paths).unwrap();
        assert_eq!(paths.len(), 1);
        assert_eq!((nodes(&t, 0, &paths[0].0), paths[0].1), (vec![0, 9, 5], 1.0));
    }

    /// A random fabric with uneven fan-out: one-GPU servers on one to three random switches,
    /// random (sometimes parallel) switch links.
    fn random_fabric(seed: u64, gpus: u32, switches: u32) -> Platform {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = |n: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(n)) as u32
        };
        let kinds = [vec![NodeKind::Gpu; gpus as usize], vec![NodeKind::Switch; switches as usize]].concat();
        let mut links = Vec::new();
        let mut both = |a: u32, b: u32| {
            for (s, d) in [(a, b), (b, a)] {
                links.push(Link { src: s, dst: d, bandwidth: 1.0, latency_ns: 1.0, error_rate: 0.0 });
            }
        };
        for g in 0..gpus {
            for _ in 0..1 + next(3) {
                both(g, gpus + next(switches));
            }
        }
        for a in 0..switches {
            both(gpus + a, gpus + (a + 1) % switches);
            for _ in 0..next(3) {
                both(gpus + a, gpus + next(switches));
            }
        }
        links.retain(|l| l.src != l.dst);
        Platform::from_parts("t", kinds, links, 1, "H100").unwrap()
    }

    /// Each link's share of a sprayed flow, computed without the router: hop counts to `dst` by
    /// breadth-first search backwards over switches, then each node's share split evenly over
    /// the links one hop closer.
    fn spray_loads(t: &Platform, src: u32, dst: u32) -> Vec<f64> {
        let n = t.node_count() as usize;
        let mut dist = vec![usize::MAX; n];
        dist[dst as usize] = 0;
        let mut queue = std::collections::VecDeque::from([dst]);
        while let Some(v) = queue.pop_front() {
            for l in &t.links {
                let u = l.src as usize;
                if l.dst == v && dist[u] == usize::MAX && (t.is_transit(l.src) || l.src == src) {
                    dist[u] = dist[v as usize] + 1;
                    if t.is_transit(l.src) {
                        queue.push_back(l.src);
                    }
                }
            }
        }
        let mut share = vec![0.0; n];
        share[src as usize] = 1.0;
        let mut load = vec![0.0; t.links.len()];
        for d in (1..=dist[src as usize]).rev() {
            for v in (0..n).filter(|&v| dist[v] == d) {
                let next: Vec<usize> = (0..t.links.len())
                    .filter(|&l| t.links[l].src as usize == v && dist[t.links[l].dst as usize] == d - 1)
                    .collect();
                for &l in &next {
                    load[l] += share[v] / next.len() as f64;
                    share[t.links[l].dst as usize] += share[v] / next.len() as f64;
                }
            }
        }
        load
    }

    #[test]
    fn spraying_matches_an_independent_per_hop_split_on_uneven_fabrics() {
        // Switch-local spraying: a share is the product of 1/k over its hops, not 1 / the path
        // count, where fan-outs differ; count the cases that tell the two apart.
        let mut uneven = 0;
        for seed in 0..40 {
            let t = random_fabric(seed, 6, 7);
            for (src, dst) in [(0, 5), (1, 4), (2, 3), (5, 0)] {
                let mut paths = Vec::new();
                Router::new(&t, 0).spray(&t, src, dst, &mut paths).unwrap();
                let mut load = vec![0.0; t.links.len()];
                for (p, s) in &paths {
                    assert_eq!(nodes(&t, src, p).last(), Some(&dst));
                    p.iter().for_each(|&l| load[l as usize] += s);
                }
                let want = spray_loads(&t, src, dst);
                for (l, (a, b)) in load.iter().zip(&want).enumerate() {
                    assert!((a - b).abs() < 1e-12, "seed {seed} {src}→{dst} link {l}: {a} vs {b}");
                }
                let total: f64 = paths.iter().map(|(_, s)| s).sum();
                assert!((total - 1.0).abs() < 1e-12);
                uneven += usize::from(paths.iter().any(|(_, s)| *s != paths[0].1));
            }
        }
        assert!(uneven >= 10, "{uneven}");
    }

    #[test]
    fn routes_are_deterministic_and_seeded() {
        let t = fabric(8, 4, 4);
        let all = |seed: u64| {
            let mut r = Router::new(&t, seed);
            let mut p = Vec::new();
            for f in 0..32 {
                r.route(&t, (f % 8) as u32, ((f + 2) % 8) as u32, f, &mut p).unwrap();
            }
            p
        };
        assert_eq!(all(1), all(1));
        assert_ne!(all(1), all(2));
    }

    #[test]
    fn user_routes_and_their_errors() {
        let t = fabric(4, 2, 1);
        let mut p = Vec::new();
        links_of_path(&t, &[0, 4, 6, 5, 1], 0, 1, &mut p).unwrap();
        assert_eq!(nodes(&t, 0, &p), vec![0, 4, 6, 5, 1]);
        let e = links_of_path(&t, &[0, 6, 5, 2], 0, 2, &mut p).unwrap_err();
        assert!(e.message.contains("hop 0 -> 6"), "{e}");
        let e = links_of_path(&t, &[0, 4, 99], 0, 99, &mut p).unwrap_err();
        assert!(e.message.contains("hop 4 -> 99"), "{e}");
        let e = links_of_path(&t, &[1, 4], 0, 4, &mut p).unwrap_err();
        assert!(e.message.contains("must start at node 0"), "{e}");
        let e = Router::new(&t, 0).route(&t, 0, 42, 0, &mut p).unwrap_err();
        assert!(e.message.contains("node 42"), "{e}");
    }

    #[test]
    fn gpus_of_a_server_use_nvlink() {
        // 2 GPUs on one NVSwitch (2) and one ToR (3): both paths have 2 hops; NVLink wins.
        let kinds = vec![NodeKind::Gpu, NodeKind::Gpu, NodeKind::NvSwitch, NodeKind::Switch];
        let mut links = Vec::new();
        for (a, b) in [(0, 2), (1, 2), (0, 3), (1, 3)] {
            for (s, d) in [(a, b), (b, a)] {
                links.push(Link { src: s, dst: d, bandwidth: 1.0, latency_ns: 1.0, error_rate: 0.0 });
            }
        }
        let t = Platform::from_parts("t", kinds, links, 2, "H100").unwrap();
        let mut r = Router::new(&t, 0);
        for f in 0..16 {
            let mut p = Vec::new();
            r.route(&t, 1, 0, f, &mut p).unwrap();
            assert_eq!(nodes(&t, 1, &p), vec![1, 2, 0]);
        }
    }
}
