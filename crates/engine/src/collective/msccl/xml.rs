//! Reading MSCCL's algorithm XML into thread blocks and steps, every field checked where it
//! stands: a bad file is one error naming the file, the line and the field.
//!
//! The elements and attributes are those MSCCL's executor reads (Azure/msccl-executor-nccl,
//! `src/misc/msccl/msccl_parser.cc`; msccl-tools writes the same): `<algo>` with `ngpus`, `coll`,
//! `proto`, `nchannels`, `nchunksperloop` (`name`, `inplace`, `outofplace`, `minBytes` and
//! `maxBytes` are optional and not used), `<gpu>` with `id`, `i_chunks`, `o_chunks`,
//! `s_chunks`, `<tb>` with `id`, `send`, `recv`, `chan`, and `<step>` with `s`, `type`, `srcbuf`,
//! `srcoff`, `dstbuf`, `dstoff`, `cnt`, `depid`, `deps`, `hasdep`. Any other element is refused
//! (a misspelt `<step>` would silently drop work); other attributes are ignored.

use roxmltree::{Document, Node, ParsingOptions};

use crate::collective::Protocol;
use crate::error::InputError;
use crate::workload::Collective;

/// Largest program: GPUs, channels, chunks per loop and thread blocks per GPU are bounded so
/// that a typo cannot make a schedule of billions of transfers (MSCCL's own limits are lower).
pub const MAX_GPUS: i64 = 1 << 16;
pub const MAX_COUNT: i64 = 1 << 24;

/// What a step does (MSCCL's `type`): whether it receives from the thread block's `recv` peer,
/// sends to its `send` peer, and which of its buffers it reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepType {
    Send,
    Recv,
    RecvCopySend,
    RecvReduceSend,
    RecvReduceCopy,
    RecvReduceCopySend,
    Copy,
    Reduce,
    Nop,
}

impl StepType {
    const ALL: [(&'static str, StepType); 9] = [
        ("s", StepType::Send),
        ("r", StepType::Recv),
        ("rcs", StepType::RecvCopySend),
        ("rrs", StepType::RecvReduceSend),
        ("rrc", StepType::RecvReduceCopy),
        ("rrcs", StepType::RecvReduceCopySend),
        ("cpy", StepType::Copy),
        ("re", StepType::Reduce),
        ("nop", StepType::Nop),
    ];

    pub fn sends(self) -> bool {
        use StepType::*;
        matches!(self, Send | RecvCopySend | RecvReduceSend | RecvReduceCopySend)
    }

    pub fn receives(self) -> bool {
        use StepType::*;
        matches!(self, Recv | RecvCopySend | RecvReduceSend | RecvReduceCopy | RecvReduceCopySend)
    }

    /// Reads `cnt` chunks of `srcbuf` at `srcoff` (what it sends or reduces with).
    fn reads(self) -> bool {
        use StepType::*;
        matches!(self, Send | RecvReduceSend | RecvReduceCopy | RecvReduceCopySend | Copy | Reduce)
    }

    /// Writes `cnt` chunks of `dstbuf` at `dstoff`.
    fn writes(self) -> bool {
        use StepType::*;
        matches!(self, Recv | RecvCopySend | RecvReduceCopy | RecvReduceCopySend | Copy | Reduce)
    }
}

/// One `<step>`: its type, its chunk count, and the step of another thread block of the same
/// GPU it waits for (`depid`, `deps`), if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub line: usize,
    pub kind: StepType,
    pub cnt: u32,
    pub dep: Option<(u32, u32)>,
}

/// One `<tb>`: the peers it sends to and receives from, its channel, its steps in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadBlock {
    pub line: usize,
    pub id: u32,
    pub send: Option<u32>,
    pub recv: Option<u32>,
    pub chan: u32,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    pub line: usize,
    pub id: u32,
    pub tbs: Vec<ThreadBlock>,
}

/// The `<algo>` element and its GPUs, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Xml {
    pub line: usize,
    pub name: String,
    pub collective: Collective,
    pub protocol: Protocol,
    pub ngpus: u32,
    pub nchannels: u32,
    pub nchunksperloop: u32,
    pub gpus: Vec<Gpu>,
}

/// Where errors point: the file, and where each line of its text starts.
struct Reader<'a> {
    file: &'a str,
    /// Byte offset of every line's start (roxmltree's `text_pos_at` rescans the text each time:
    /// quadratic over a large program).
    line_starts: Vec<usize>,
}

impl<'input> Reader<'_> {
    fn line(&self, n: Node) -> usize {
        self.line_starts.partition_point(|&s| s <= n.range().start)
    }

    fn err(&self, n: Node, field: &str, message: String) -> InputError {
        InputError::at(self.file, self.line(n), field, message)
    }

    fn text<'n>(&self, n: Node<'n, 'input>, attr: &str) -> Result<&'n str, InputError> {
        n.attribute(attr)
            .ok_or_else(|| self.err(n, attr, format!("<{}> has no '{attr}' attribute", n.tag_name().name())))
    }

    /// An integer attribute in `lo..=hi`.
    fn int(&self, n: Node, attr: &str, lo: i64, hi: i64) -> Result<i64, InputError> {
        let text = self.text(n, attr)?;
        match text.trim().parse::<i64>() {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            Ok(v) => Err(self.err(n, attr, format!("{v} is out of range ({lo} to {hi})"))),
            Err(_) => Err(self.err(n, attr, format!("expected a whole number, got '{}'", clip(text)))),
        }
    }

    /// The element children of `n`, each of which must be a `<tag>`.
    fn children<'n>(&self, n: Node<'n, 'input>, tag: &str) -> Result<Vec<Node<'n, 'input>>, InputError> {
        let mut out = Vec::new();
        for c in n.children() {
            if c.is_text() && !c.text().unwrap_or("").trim().is_empty() {
                return Err(self.err(c, tag, format!("unexpected text inside <{}>", n.tag_name().name())));
            }
            if c.is_element() {
                if c.tag_name().name() != tag {
                    let found = clip(c.tag_name().name());
                    return Err(self.err(
                        c,
                        tag,
                        format!("unknown element <{found}> inside <{}>", n.tag_name().name()),
                    ));
                }
                out.push(c);
            }
        }
        Ok(out)
    }
}

/// At most 40 characters of user text, for messages.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Parse an MSCCL algorithm file (`file` names it in errors).
pub fn parse(file: &str, text: &str) -> Result<Xml, InputError> {
    let options = ParsingOptions { allow_dtd: false, ..ParsingOptions::default() };
    let doc = Document::parse_with_options(text, options).map_err(|e| malformed(file, text, &e))?;
    let line_starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
    let r = Reader { file, line_starts };
    let algo = doc.root_element();
    if algo.tag_name().name() != "algo" {
        let found = clip(algo.tag_name().name());
        return Err(r.err(algo, "algo", format!("the root element is <{found}>, not MSCCL's <algo>")));
    }
    let ngpus = r.int(algo, "ngpus", 1, MAX_GPUS)? as u32;
    let coll = r.text(algo, "coll")?;
    let collective = Collective::ALL.into_iter().find(|c| c.name() == coll).ok_or_else(|| {
        let names: Vec<&str> = Collective::ALL.iter().map(|c| c.name()).collect();
        r.err(algo, "coll", format!("unknown collective '{}' (valid: {})", clip(coll), names.join(", ")))
    })?;
    let proto = r.text(algo, "proto")?;
    let protocol = Protocol::parse(proto)
        .map_err(|_| r.err(algo, "proto", format!("unknown protocol '{}' (valid: Simple, LL, LL128)", clip(proto))))?;
    let nchannels = r.int(algo, "nchannels", 1, MAX_GPUS)? as u32;
    let nchunksperloop = r.int(algo, "nchunksperloop", 1, MAX_COUNT)? as u32;
    let mut gpus: Vec<Gpu> = Vec::new();
    for g in r.children(algo, "gpu")? {
        let id = r.int(g, "id", 0, ngpus as i64 - 1)? as u32;
        if let Some(first) = gpus.iter().find(|x| x.id == id) {
            return Err(r.err(g, "id", format!("gpu {id} is described twice (first on line {})", first.line)));
        }
        // Chunks of the input, output and scratch buffers.
        let chunks = [
            r.int(g, "i_chunks", 0, MAX_COUNT)?,
            r.int(g, "o_chunks", 0, MAX_COUNT)?,
            r.int(g, "s_chunks", 0, MAX_COUNT)?,
        ];
        let mut tbs: Vec<ThreadBlock> = Vec::new();
        for t in r.children(g, "tb")? {
            let tb = thread_block(&r, t, id, ngpus, nchannels, &chunks)?;
            if let Some(first) = tbs.iter().find(|x| x.id == tb.id) {
                return Err(r.err(
                    t,
                    "id",
                    format!("tb {} of gpu {id} is described twice (first on line {})", tb.id, first.line),
                ));
            }
            tbs.push(tb);
        }
        check_dependencies(file, id, &tbs)?;
        gpus.push(Gpu { line: r.line(g), id, tbs });
    }
    let name = algo.attribute("name").unwrap_or("").to_string();
    Ok(Xml { line: r.line(algo), name, collective, protocol, ngpus, nchannels, nchunksperloop, gpus })
}

fn thread_block(
    r: &Reader,
    t: Node,
    gpu: u32,
    ngpus: u32,
    nchannels: u32,
    chunks: &[i64; 3],
) -> Result<ThreadBlock, InputError> {
    let id = r.int(t, "id", 0, MAX_COUNT)? as u32;
    let peer = |attr: &str| -> Result<Option<u32>, InputError> {
        let p = r.int(t, attr, -1, i64::MAX)?;
        if p >= ngpus as i64 {
            return Err(r.err(t, attr, format!("peer {p} is not in the program's {ngpus} GPUs (0 to {})", ngpus - 1)));
        }
        if p == gpu as i64 {
            return Err(r.err(t, attr, format!("gpu {gpu} cannot be its own peer")));
        }
        Ok((p >= 0).then_some(p as u32))
    };
    let (send, recv) = (peer("send")?, peer("recv")?);
    let chan = r.int(t, "chan", 0, nchannels as i64 - 1).map_err(|mut e| {
        e.message = format!("{} (the algorithm has nchannels=\"{nchannels}\")", e.message);
        e
    })? as u32;
    let mut steps = Vec::new();
    for (k, s) in r.children(t, "step")?.into_iter().enumerate() {
        let index = r.int(s, "s", 0, MAX_COUNT)?;
        if index != k as i64 {
            return Err(r.err(
                s,
                "s",
                format!("step {index} is the tb's step {k}: steps must be numbered 0, 1, … in order"),
            ));
        }
        let ty = r.text(s, "type")?;
        let kind = StepType::ALL.iter().find(|(n, _)| *n == ty).map(|(_, k)| *k).ok_or_else(|| {
            let names: Vec<&str> = StepType::ALL.iter().map(|(n, _)| *n).collect();
            r.err(s, "type", format!("unknown step type '{}' (valid: {})", clip(ty), names.join(", ")))
        })?;
        let cnt = r.int(s, "cnt", 0, MAX_COUNT)?;
        for (needed, buf, off) in [(kind.reads(), "srcbuf", "srcoff"), (kind.writes(), "dstbuf", "dstoff")] {
            let b = r.text(s, buf)?;
            let size = match b {
                "i" => chunks[0],
                "o" => chunks[1],
                "s" => chunks[2],
                _ => return Err(r.err(s, buf, format!("unknown buffer '{}' (valid: i, o, s)", clip(b)))),
            };
            let at = r.int(s, off, -1, MAX_COUNT)?;
            if needed && (at < 0 || at + cnt > size) {
                let what = format!("chunks {at} to {} of buffer '{b}'", at + cnt - 1);
                return Err(r.err(s, off, format!("{what} are beyond its {size} chunks on gpu {gpu}")));
            }
        }
        let depid = r.int(s, "depid", -1, MAX_COUNT)?;
        let deps = r.int(s, "deps", -1, MAX_COUNT)?;
        if depid >= 0 && deps < 0 {
            return Err(r.err(s, "deps", format!("depends on tb {depid} but names no step of it")));
        }
        r.int(s, "hasdep", 0, 1)?;
        for (does, peer, attr) in [(kind.sends(), send, "send"), (kind.receives(), recv, "recv")] {
            if does && peer.is_none() {
                return Err(r.err(
                    s,
                    "type",
                    format!("a '{ty}' step needs a peer to {attr}, but its tb has {attr}=\"-1\""),
                ));
            }
        }
        let dep = (depid >= 0).then_some((depid as u32, deps as u32));
        steps.push(Step { line: r.line(s), kind, cnt: cnt as u32, dep });
    }
    Ok(ThreadBlock { line: r.line(t), id, send, recv, chan, steps })
}

/// Dependencies name thread blocks and steps of the same GPU: check that they exist.
fn check_dependencies(file: &str, gpu: u32, tbs: &[ThreadBlock]) -> Result<(), InputError> {
    for step in tbs.iter().flat_map(|t| &t.steps) {
        let Some((depid, deps)) = step.dep else { continue };
        let Some(target) = tbs.iter().find(|t| t.id == depid) else {
            return Err(InputError::at(file, step.line, "depid", format!("gpu {gpu} has no tb {depid}")));
        };
        if deps as usize >= target.steps.len() {
            let n = target.steps.len();
            return Err(InputError::at(
                file,
                step.line,
                "deps",
                format!("tb {depid} of gpu {gpu} has {n} steps, no step {deps}"),
            ));
        }
    }
    Ok(())
}

/// A roxmltree error as one of ours: its line, its column in the message.
fn malformed(file: &str, text: &str, e: &roxmltree::Error) -> InputError {
    let pos = e.pos();
    let message = e.to_string().replace(&format!(" at {pos}"), "");
    // Errors about the end of the text carry no position: point at the last line.
    let at_end = matches!(e, roxmltree::Error::UnexpectedEndOfStream | roxmltree::Error::UnclosedRootNode);
    if at_end {
        return InputError::at(file, text.lines().count().max(1), "xml", format!("malformed XML: {message}"));
    }
    InputError::at(file, pos.row as usize, "xml", format!("malformed XML (column {}): {message}", pos.col))
}
