use super::*;
use crate::collective::choose::Options;
use crate::collective::nccl::call_latency_ns;
use crate::collective::ring::{ring_hops, ring_order};
use crate::collective::{group_channels, schedule, Grain};
use crate::network::agreement::run_both_nvls;
use crate::workload::sweep::sweep_workload;

/// An MSCCL ring all-reduce in MSCCL's format: one thread block per channel, channel c going
/// round `orders[c]` (group ranks) on its own n chunks of the buffer. The rank at position i of a
/// ring sends chunk (i − k) mod n at step k: a send, n − 2 receive-reduce-sends, a
/// receive-reduce-copy-send (the chunk is then reduced everywhere it has been), n − 2
/// receive-copy-sends and a receive: 2(n − 1) transfers.
pub(crate) fn ring_all_reduce_xml(orders: &[Vec<u32>], proto: &str) -> String {
    let (n, c) = (orders[0].len(), orders.len());
    let mut x = format!(
        "<algo name=\"ring\" proto=\"{proto}\" nchannels=\"{c}\" nchunksperloop=\"{}\" ngpus=\"{n}\" coll=\"allreduce\" inplace=\"1\">\n",
        n * c
    );
    for gpu in 0..n as u32 {
        x += &format!("  <gpu id=\"{gpu}\" i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"0\">\n", n * c);
        for (ch, order) in orders.iter().enumerate() {
            let i = order.iter().position(|&r| r == gpu).expect("every rank is on every ring");
            let (next, prev) = (order[(i + 1) % n], order[(i + n - 1) % n]);
            x += &format!("    <tb id=\"{ch}\" send=\"{next}\" recv=\"{prev}\" chan=\"{ch}\">\n");
            for k in 0..2 * n - 1 {
                let ty = match k {
                    0 => "s",
                    k if k < n - 1 => "rrs",
                    k if k == n - 1 => "rrcs",
                    k if k < 2 * n - 2 => "rcs",
                    _ => "r",
                };
                let off = ch * n + (i + 2 * n - k) % n;
                x += &format!(
                    "      <step s=\"{k}\" type=\"{ty}\" srcbuf=\"i\" srcoff=\"{off}\" dstbuf=\"i\" dstoff=\"{off}\" cnt=\"1\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
                );
            }
            x += "    </tb>\n";
        }
        x += "  </gpu>\n";
    }
    x + "</algo>\n"
}

/// The built-in ring's orders on `g` over `channels` channels.
fn orders(g: &GroupTopo, channels: u32) -> Vec<Vec<u32>> {
    (0..channels).map(|ch| ring_order(g.servers(), ch)).collect()
}

fn algorithm(text: &str) -> Algorithm {
    let program = Program::parse("ring.xml", text).unwrap();
    Algorithm::new(Box::leak(Box::new(Msccl { name: "msccl:ring.xml", program })))
}

/// (analytical, flow) ns of an all-reduce of `bytes` on n ranks in servers of m.
fn run_both(n: u32, m: u32, bytes: u64, options: Options) -> (f64, f64) {
    run_both_on(Collective::AllReduce, n, m, bytes, options)
}

fn run_both_on(c: Collective, n: u32, m: u32, bytes: u64, options: Options) -> (f64, f64) {
    // The fabric of network/agreement.rs, without NVLS.
    run_both_nvls(&sweep_workload(c, n, &[bytes]), n, m, options, false)
}

/// For each group (n ranks, servers of m), protocol and size: (ring, MSCCL ring) on both
/// backends, the MSCCL ring written for the channels both backends give the group.
fn ring_pairs(
    groups: &[(u32, u32)],
    send_lat_us: Option<f64>,
    mut check: impl FnMut(u32, u32, Protocol, u64, (f64, f64), (f64, f64)),
) {
    for &(n, m) in groups {
        let ranks: Vec<u32> = (0..n).collect();
        let g = GroupTopo::on_servers(&ranks, m, false);
        let channels = group_channels(&g, m.max(2));
        for p in Protocol::ALL {
            let msccl = algorithm(&ring_all_reduce_xml(&orders(&g, channels), p.name()));
            for bytes in [4096u64, 1 << 20, 96 << 20] {
                let opts = |a| Options { algorithm: Some(a), protocol: Some(p), send_lat_us, ..Options::default() };
                let ring = run_both(n, m, bytes, opts(Algorithm::RING));
                let ours = run_both(n, m, bytes, opts(msccl));
                check(n, m, p, bytes, ring, ours);
            }
        }
    }
}

#[test]
fn the_ring_program_is_2_n_minus_1_repeats_of_the_ring_hops() {
    let ranks: Vec<u32> = (0..8).collect();
    let g = GroupTopo::on_servers(&ranks, 4, false);
    let msccl = algorithm(&ring_all_reduce_xml(&orders(&g, 2), "Simple"));
    let r = Request {
        collective: Collective::AllReduce,
        group: &g,
        servers: g.servers(),
        bytes: 1.6e7,
        channels: 2,
        grain: Grain::Steps,
    };
    let p = &msccl.phases(&r);
    let ring = schedule(Collective::AllReduce, Algorithm::RING, &g, 16_000_000, 2).unwrap().phases;
    // The levels are equal and merge into one phase of the ring's transfers.
    let hops = |p: &Phase| {
        let mut h: Vec<_> = p.transfers.iter().map(|t| (format!("{:?}→{:?}", t.src, t.dst), t.bytes)).collect();
        h.sort_by(|a, b| a.0.cmp(&b.0));
        (h, p.repeat)
    };
    assert_eq!(hops(&p[0]), hops(&ring[0]));
    assert_eq!((p.len(), p[0].repeat, p[0].transfers.len()), (1, 14, 16));
}

#[test]
fn an_msccl_ring_all_reduce_is_the_built_in_ring_on_both_backends() {
    // One server (NCCL's hop count is the ring's) and one GPU per server (every hop crosses).
    let mut cases = 0;
    ring_pairs(&[(2, 2), (4, 4), (8, 8), (2, 1), (4, 1), (16, 1)], None, |n, m, p, bytes, ring, ours| {
        let case = format!("n={n} m={m} {} S={bytes}: ring {ring:?}, msccl {ours:?}", p.name());
        assert!((ring.0 - ours.0).abs() < 1e-3 && (ring.1 - ours.1).abs() < 1e-3, "{case}");
        cases += 1;
    });
    assert_eq!(cases, 6 * 3 * 3);
}

#[test]
fn on_servers_of_several_gpus_only_the_latency_hops_differ() {
    // 2 and 4 servers of 4: with AS_SEND_LAT (latency per phase step) the two are equal; with
    // NCCL's latencies the MSCCL ring counts 2(n − 1) network hops where NCCL's ring formula
    // counts 2(N − 1), and both backends add exactly that difference.
    let groups = [(8, 4), (16, 4)];
    ring_pairs(&groups, Some(2.0), |n, m, p, bytes, ring, ours| {
        let case = format!("n={n} m={m} {} S={bytes}: ring {ring:?}, msccl {ours:?}", p.name());
        assert!((ring.0 - ours.0).abs() < 1e-3 && (ring.1 - ours.1).abs() < 1e-3, "{case}");
    });
    ring_pairs(&groups, None, |n, m, p, bytes, ring, ours| {
        let nodes = n / m;
        let i = Protocol::ALL.iter().position(|&q| q == p).unwrap();
        let lat = |hops| {
            call_latency_ns(Collective::AllReduce, Algorithm::RING, p, RING_LATENCY_US[i], hops, nodes, (0.0, 0.0))
        };
        let extra = lat((0, 2 * (n - 1))) - lat(ring_hops(Collective::AllReduce, n, nodes));
        assert!(extra > 0.0);
        let case = format!("n={n} m={m} {} S={bytes}: ring {ring:?}, msccl {ours:?}, +{extra}", p.name());
        assert!((ours.0 - ring.0 - extra).abs() < 1e-3 && (ours.1 - ring.1 - extra).abs() < 1e-3, "{case}");
    });
}

fn example(name: &str) -> String {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/msccl");
    dir.join(name).to_str().unwrap().to_string()
}

/// Chunks sent in all by a file, counted from its text alone: the `cnt` of every sending step.
fn chunks_sent(text: &str) -> u64 {
    let value = |line: &str, attr: &str| {
        let from = line.find(&format!(" {attr}=\"")).unwrap() + attr.len() + 3;
        line[from..from + line[from..].find('"').unwrap()].to_string()
    };
    text.lines()
        .filter(|l| l.trim_start().starts_with("<step"))
        .filter(|l| ["s", "rcs", "rrs", "rrcs"].contains(&value(l, "type").as_str()))
        .map(|l| value(l, "cnt").parse::<u64>().unwrap())
        .sum()
}

#[test]
fn the_example_files_run_on_both_backends() {
    // (file, collective, protocol, phases, transfers of the first phase where known: the
    // all-gather is one round of direct sends, 8 × 7 pairs on 2 channels each; the all-pairs
    // all-reduce two rounds (reduce-scatter, all-gather) of 8 × 7 sends, one phase repeated)
    let files = [
        ("allgather_ndv5_ll.xml", Collective::AllGather, Protocol::LL, 1, 112),
        ("allreduce_allpairs_ll.xml", Collective::AllReduce, Protocol::LL, 1, 56),
        ("allreduce_ndv2.xml", Collective::AllReduce, Protocol::Simple, 0, 0),
        ("allreduce_ndv5_simple.xml", Collective::AllReduce, Protocol::Simple, 0, 0),
    ];
    for (file, c, protocol, phases, first) in files {
        let path = example(file);
        let a = Algorithm::parse(&format!("msccl:{path}")).unwrap();
        assert_eq!(a.name(), format!("msccl:{path}"));
        // Read once per process: naming the file again gives the same leaked program.
        let again = Algorithm::parse(&format!("MSCCL:{path}")).unwrap();
        assert!(std::ptr::eq(a.name().as_ptr(), again.name().as_ptr()) && a == again);
        let text = std::fs::read_to_string(&path).unwrap();
        let program = Program::parse(file, &text).unwrap();
        assert_eq!((program.collective, program.protocol, program.ngpus), (c, protocol, 8));
        let ranks: Vec<u32> = (0..8).collect();
        for m in [8, 1] {
            let g = GroupTopo::on_servers(&ranks, m, false);
            let s = 1u64 << 26;
            let sch = schedule(c, a, &g, s, 1).unwrap();
            // Every chunk the file sends is on the wire once.
            let want = chunks_sent(&text) as f64 * s as f64 / program.nchunksperloop as f64;
            assert!((sch.total_bytes() - want).abs() < 1e-6 * want, "{file}: {} vs {want}", sch.total_bytes());
            // At least what the collective must move (nccl-tests' bus bandwidth factor).
            assert!(sch.total_bytes() >= s as f64 * c.busbw_factor(8) * 8.0 * (1.0 - 1e-12), "{file}");
            if phases > 0 {
                assert_eq!((sch.phases.len(), sch.phases[0].transfers.len()), (phases, first), "{file}");
            }
            let opts = Options { algorithm: Some(a), ..Options::default() };
            for bytes in [4096u64, 64 << 20] {
                let (an, fl) = run_both_on(c, 8, m, bytes, opts.clone());
                assert!(an > 0.0 && (an - fl).abs() <= 0.01 * fl, "{file} m={m} S={bytes}: analytical {an}, flow {fl}");
            }
        }
    }
}

/// `text` with `from` replaced by `to` on line `line` (1-based).
fn edit(text: &str, line: usize, from: &str, to: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert!(lines[line - 1].contains(from), "line {line} has no {from:?}: {}", lines[line - 1]);
    lines[line - 1] = lines[line - 1].replacen(from, to, 1);
    lines.join("\n")
}

#[test]
fn bad_files_are_one_line_errors_naming_line_and_field() {
    // A ring of 4, one channel: line 1 <algo>, 2 <gpu 0>, 3 its <tb>, 4–10 its steps 0–6,
    // 13 <gpu 1>, 14 its <tb>, 15–21 its steps.
    let ring = ring_all_reduce_xml(&[vec![0, 1, 2, 3]], "Simple");
    let without_last_receive: String = {
        let mut lines: Vec<&str> = ring.lines().collect();
        lines.remove(20);
        lines.join("\n")
    };
    let cases: Vec<(&str, String, usize, &str, &str)> = vec![
        ("malformed", ring.replacen("</tb>", "", 1), 12, "xml", "malformed XML"),
        ("empty", String::new(), 1, "xml", "malformed XML"),
        ("not MSCCL", "<topology/>".into(), 1, "algo", "not MSCCL's <algo>"),
        ("a DTD", format!("<!DOCTYPE algo>\n{ring}"), 1, "xml", "DTD"),
        ("missing attribute", edit(&ring, 4, " cnt=\"1\"", ""), 4, "cnt", "no 'cnt' attribute"),
        ("not a number", edit(&ring, 4, "cnt=\"1\"", "cnt=\"one\""), 4, "cnt", "expected a whole number"),
        ("unknown step type", edit(&ring, 4, "type=\"s\"", "type=\"sr\""), 4, "type", "unknown step type 'sr'"),
        ("unknown buffer", edit(&ring, 4, "srcbuf=\"i\"", "srcbuf=\"x\""), 4, "srcbuf", "unknown buffer 'x'"),
        ("chunks out of range", edit(&ring, 4, "srcoff=\"0\"", "srcoff=\"4\""), 4, "srcoff", "beyond its 4 chunks"),
        ("peer absent", edit(&ring, 3, "send=\"1\"", "send=\"9\""), 3, "send", "peer 9 is not in the program's 4 GPUs"),
        ("own peer", edit(&ring, 3, "send=\"1\"", "send=\"0\""), 3, "send", "its own peer"),
        ("channel", edit(&ring, 3, "chan=\"0\"", "chan=\"1\""), 3, "chan", "nchannels=\"1\""),
        (
            "send without receive",
            without_last_receive,
            9,
            "send",
            "sends 6 times to gpu 1 on channel 0, and gpu 1 receives 5",
        ),
        (
            "no receiving tb",
            edit(&ring, 14, "recv=\"0\"", "recv=\"2\""),
            4,
            "send",
            "no tb of gpu 1 receives from gpu 0",
        ),
        ("count mismatch", edit(&ring, 16, "cnt=\"1\"", "cnt=\"0\""), 16, "cnt", "receives 0 chunks from gpu 0"),
        ("cycle", edit(&ring, 4, "depid=\"-1\" deps=\"-1\"", "depid=\"0\" deps=\"2\""), 4, "depid", "dependency cycle"),
        ("missing tb", edit(&ring, 4, "depid=\"-1\" deps=\"-1\"", "depid=\"5\" deps=\"0\""), 4, "depid", "no tb 5"),
        ("missing step", edit(&ring, 4, "depid=\"-1\" deps=\"-1\"", "depid=\"0\" deps=\"9\""), 4, "deps", "no step 9"),
        ("step order", edit(&ring, 5, "s=\"1\"", "s=\"2\""), 5, "s", "numbered 0, 1"),
        ("unknown element", edit(&ring, 4, "<step", "<stpe"), 4, "step", "unknown element <stpe>"),
        ("duplicate gpu", edit(&ring, 13, "id=\"1\"", "id=\"0\""), 13, "id", "described twice (first on line 2)"),
        ("gpu out of range", edit(&ring, 13, "id=\"1\"", "id=\"4\""), 13, "id", "out of range"),
        (
            "collective",
            edit(&ring, 1, "coll=\"allreduce\"", "coll=\"custom\""),
            1,
            "coll",
            "unknown collective 'custom'",
        ),
        ("protocol", edit(&ring, 1, "proto=\"Simple\"", "proto=\"Fast\""), 1, "proto", "unknown protocol 'Fast'"),
        ("no gpus", edit(&ring, 1, "ngpus=\"4\"", "ngpus=\"0\""), 1, "ngpus", "out of range"),
    ];
    for (what, text, line, field, message) in cases {
        let e = Program::parse("ring.xml", &text).expect_err(what);
        let shown = e.to_string();
        assert!(!e.is_internal() && !shown.contains('\n'), "{what}: {shown}");
        assert!(shown.starts_with(&format!("ring.xml:{line}: {field}: ")), "{what}: {shown}");
        assert!(shown.contains(message), "{what}: {shown}");
    }
    // The program must fit the call: its collective, its GPU count.
    let ranks: Vec<u32> = (0..8).collect();
    let a = algorithm(&ring);
    let e = schedule(Collective::AllGather, a, &GroupTopo::on_servers(&ranks[..4], 8, false), 1 << 20, 1).unwrap_err();
    assert!(
        e.message.contains("msccl:ring.xml cannot run allgather") && e.message.contains("program is an allreduce"),
        "{e}"
    );
    let e = schedule(Collective::AllReduce, a, &GroupTopo::on_servers(&ranks, 8, false), 1 << 20, 1).unwrap_err();
    assert!(e.message.contains("on 8 ranks") && e.message.contains("ngpus=\"4\""), "{e}");
    // A file that cannot be read, or no file at all.
    let e = Algorithm::parse("msccl:/no/such/file.xml").unwrap_err();
    assert!(e.to_string().starts_with("/no/such/file.xml: algorithm: cannot read"), "{e}");
    assert!(Algorithm::parse("msccl:").unwrap_err().message.contains("names no file"));
}
