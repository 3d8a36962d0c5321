//! Faults of the simulated servers' own code, for tests only: each one breaks one of
//! ZooKeeper's guarantees on purpose, so that a test can show the guarantee checker
//! (`zkh_model::guarantees`) catches it. They are the checker's positive controls; none is
//! reachable from a scenario file.

/// Faults of the servers' own code, each breaking one of ZooKeeper's guarantees on purpose: the
/// positive controls of the guarantee checker (`zkh_model::guarantees`). No scenario file can
/// set one; tests do, through `WorkloadConfig::defects`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerDefects {
    /// Serve a client whose last seen zxid is ahead of this server's, where ZooKeeper refuses
    /// it until the server has caught up: the client can see an older view than it has seen,
    /// breaking the single system image.
    pub serve_clients_ahead: bool,
    /// Answer a write with its epoch's first zxid in the reply's header instead of its
    /// transaction's: two acknowledged writes carry one zxid, breaking one transaction per
    /// zxid.
    pub epoch_zxid_in_write_replies: bool,
    /// Label a read's reply with the newest zxid this server has heard of (logged, or
    /// committed and waiting to be applied) instead of the one it has applied: the answer
    /// comes from an older tree than its zxid says, breaking sequentially consistent reads.
    pub stamp_reads_with_heard_zxid: bool,
    /// A new leader drops what it logged after its last commit instead of committing it:
    /// a write the old leader committed, applied and acknowledged before its commits went out
    /// is lost with it, breaking durability.
    pub leader_drops_logged_proposals: bool,
    /// Answer a session's read at once even while a write it sent earlier is still to be
    /// applied here (the simulator's own behaviour until FIFO client order was judged): the
    /// read does not see the write, breaking FIFO client order.
    pub reads_pass_own_writes: bool,
    /// Expire a session without deleting its ephemeral nodes: they outlive the session that
    /// owned them, breaking "a session's end is final".
    pub keep_ephemerals_on_expiry: bool,
    /// Name a sequential node after its parent's current number of children instead of the
    /// parent's counter of creations: a suffix is used again once a child is deleted, breaking
    /// "sequential suffixes unique".
    pub sequence_from_child_count: bool,
    /// Hold a connection's watch events until the next reply on that connection has gone out:
    /// the client gets the data before the event that announces it, breaking "watch events in
    /// order".
    pub events_after_the_next_reply: bool,
    /// Keep a data or child watch after it fires (set it again at once) instead of dropping
    /// it: the next change fires it again though the client never set it again, breaking "a
    /// watch fires once".
    pub watches_kept_after_firing: bool,
    /// Let the first change a data or child watch sees go by unannounced (the watch kept, and
    /// fired by the next change instead): the client hears of a later change than the first,
    /// breaking "a watch fires for the first change".
    pub first_change_unannounced: bool,
    /// A follower answers a `sync` at once from its own state instead of asking the leader how
    /// far to catch up: a read behind the sync can miss a write acknowledged before it,
    /// breaking "a read after sync is up to date".
    pub sync_answered_locally: bool,
    /// An established leader commits a proposal on its own acknowledgement and keeps leading
    /// when its followers fall silent, instead of waiting for a quorum and stepping down: cut
    /// off from the rest, it goes on acknowledging writes at its old epoch's zxids while the
    /// others elect a new leader and acknowledge theirs at the new epoch's, breaking
    /// "linearizable writes".
    pub leader_commits_alone: bool,
    /// A leader that has not heard a quorum for `sync_limit` ticks starts the next epoch on its
    /// own and serves in it at once, instead of stepping down to look for a quorum: cut off
    /// from the rest, it leads an epoch no quorum took, while the others elect a leader of that
    /// same epoch, breaking "one leader per epoch".
    pub leads_next_epoch_alone: bool,
}
