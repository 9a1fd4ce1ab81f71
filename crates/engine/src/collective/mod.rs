//! The schedule types collective algorithms produce for the flow and packet models (the
//! interface agreed with branch `coll`, which adds the algorithms and `schedule`). When merging
//! `coll`, take its version of this file.

/// One end of a transfer inside a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// Index into [`GroupTopo::ranks`].
    Rank(u32),
    /// The NVSwitch of the group's server index (servers numbered in order of first appearance).
    Switch { server: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub bytes: f64,
}

/// Transfers that run concurrently; the next phase starts when all have finished; `repeat` =
/// runs back to back.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub transfers: Vec<Transfer>,
    pub repeat: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub algorithm: Algorithm,
    pub phases: Vec<Phase>,
}

/// Where a group's ranks sit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupTopo<'a> {
    pub ranks: &'a [u32],
    pub gpus_per_server: u32,
    pub nvls: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    Ring,
    Tree,
    HalvingDoubling,
    Direct,
    Nvls,
    NvlsTree,
    Hierarchical,
    Pxn,
}
