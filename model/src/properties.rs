//! The named properties, written once, as functions over a run's entries ([`Entries`]: the
//! simulator's [`History`](crate::history::History), or a model checker state's view of its own).
//!
//! Both engines use these: the simulator on the history it records, the model checker on the
//! history of a path it explores. Each property has one English name and one class:
//!
//! | property | class | meaning |
//! | --- | --- | --- |
//! | mutual exclusion | always | no two critical sections' accepted writes interleave |
//! | single acting master | always | no accepted side effect comes from a term older than one already seen |
//! | no oversell | always | the stock never goes negative, and every sale was from the current stock |
//! | herd free | always | one transaction's watch events reach at most one client under the recipe's path |
//! | leader elected | eventually | after the heal, a holder or leader appears within the bound |
//! | no shard executed twice | always | each (job, item, cycle) runs at most once |
//! | no shard lost | eventually | each (job, item, cycle) of the judged cycles runs |
//!
//! Truth is judged at the resource: two processes can *believe* they hold a lock (a holder
//! paused past its session's expiry), and only what the resource accepted matters. Side effects
//! are recorded as `SideEffect` entries carrying the role's token; a critical section is the
//! run of accepted writes under one token.
//!
//! Every `always` property is paired with `sometimes` checks ([`sometimes`]), so that a pass
//! over a sweep cannot be an empty one: the lock did change hands after a session was lost, a
//! reply to a create was lost, a stale write was refused, a waiter was woken.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use zkh_recipes::symmetry::IDENTITY_MARK;
use zkh_recipes::{Request, SessionEvent};

use crate::history::{Entries, HistoryEntry, HistoryEvent};

/// The class of a property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Must hold at every point of every run.
    Always,
    /// Must come true within a bound once faults heal.
    Eventually,
    /// Must happen in at least one run of a sweep (a reachability check).
    Sometimes,
}

/// The verdict of one property on one history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The property's English name.
    pub property: &'static str,
    /// Its class.
    pub class: Class,
    /// Whether it holds (for `Sometimes`: whether it happened).
    pub holds: bool,
    /// Why: the first violation, or a summary.
    pub detail: String,
    /// For a violation, the places (indices) in the history of the entries that show it,
    /// oldest first; the last is where it happens. Empty when it holds, and for a violation
    /// that is an absence (nothing happened in time).
    pub evidence: Vec<usize>,
    /// For a violation, the simulated time it happened at: its last evidence entry's, or, for
    /// an `eventually` property, the deadline that passed (when the history knows one).
    pub at_us: Option<u64>,
}

impl Finding {
    /// A failing finding explained by its violation, or a passing one by its summary (unless
    /// judged [`without_summaries`]). Public, so that a user's own property reports as the
    /// built-in ones do.
    pub fn new(
        property: &'static str,
        class: Class,
        violation: Option<String>,
        summary: impl FnOnce() -> String,
    ) -> Finding {
        match violation {
            Some(detail) => Finding {
                property,
                class,
                holds: false,
                detail,
                evidence: Vec::new(),
                at_us: None,
            },
            None => Finding {
                property,
                class,
                holds: true,
                evidence: Vec::new(),
                at_us: None,
                detail: if SUMMARIES.get() {
                    summary()
                } else {
                    String::new()
                },
            },
        }
    }

    /// This finding with the evidence of its violation (`entries`: places in `history`, in
    /// any order), timed by the last of them. A finding that holds stays as it is.
    pub fn with_evidence(mut self, history: &impl Entries, mut entries: Vec<usize>) -> Finding {
        if self.holds {
            return self;
        }
        entries.sort_unstable();
        entries.dedup();
        self.at_us = entries
            .last()
            .and_then(|last| history.each().nth(*last))
            .map(|entry| entry.at_us);
        self.evidence = entries;
        self
    }
}

/// What property `name` means, in one sentence (for reports; empty for an unknown name).
pub fn explanation(name: &str) -> &'static str {
    match name {
        "mutual exclusion" => {
            "No two critical sections' accepted writes interleave: once another holder's write \
             was accepted, an earlier holder's writes are not accepted again."
        }
        "single acting master" => {
            "No accepted side effect comes from a term older than one the resource has already \
             seen: at most one leader acts at a time."
        }
        "no oversell" => {
            "The stock never goes negative, and every sale was made from the current stock."
        }
        "herd free" => {
            "One transaction's watch events reach at most one waiting client under the \
             recipe's path: a release or leader change wakes one waiter, not all."
        }
        "leader elected" => "After the faults heal, a holder or leader appears within the bound.",
        "no shard executed twice" => "Each (job, item, cycle) is executed by at most one instance.",
        "runs when scheduled" => {
            "No run of a job's item comes before its cycle's trigger fired (a misfired or \
             failed-over cycle may run late, never early)."
        }
        "no shard lost" => {
            "Each (job, item, cycle) of the judged cycles runs once the faults heal."
        }
        "claims are owned" => {
            "When the run ends, each client that believes it holds a role holds it by a node \
             that exists and is owned by its current session."
        }
        "no orphaned ephemerals" => {
            "When the run ends, every ephemeral node a live client's current session owns is one \
             the client knows is its own: none was lost track of, keeping a place or a role \
             until its session ends."
        }
        "a container was reaped" => {
            "Sometimes: the servers' leader deleted an empty container (a recipe's parent) while \
             the recipe ran."
        }
        "a claim was judged" => {
            "Sometimes: when the run ended, a settled client held a role or stood on a \
             registration for \"claims are owned\" to judge."
        }
        "an ephemeral was judged" => {
            "Sometimes: when the run ended, a live client's session owned an ephemeral node for \
             the orphan check to judge."
        }
        "role changed hands after a loss" => {
            "Sometimes: a role passed to another client after its holder lost its session."
        }
        "a reply was lost" => "Sometimes: a reply to an applied operation was lost.",
        "a stale write was refused" => {
            "Sometimes: the fenced resource refused a write with an old token."
        }
        "an item failed over" => "Sometimes: a crashed instance's item ran on another by failover.",
        "a waiter was woken" => {
            "Sometimes: a waiting client was woken by a watch under the recipe's path."
        }
        _ => "",
    }
}

thread_local! {
    /// Whether a passing finding is summarised here now (see [`without_summaries`]).
    static SUMMARIES: Cell<bool> = const { Cell::new(true) };
}

/// Runs `judge`, in which passing findings come without their summary (an empty detail): for
/// the model checker, which judges every state it reaches and reads only whether each property
/// holds. A violation is still explained.
pub fn without_summaries<T>(judge: impl FnOnce() -> T) -> T {
    /// Turns summaries back on when the judging ends, even by a panic.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            SUMMARIES.set(self.0);
        }
    }
    let _restore = Restore(SUMMARIES.replace(false));
    judge()
}

/// The accepted side effects on `resource`: (place in the history, time, client, token,
/// detail).
fn accepted<'a>(
    history: &'a impl Entries,
    resource: &'a str,
) -> impl Iterator<Item = (usize, u64, u32, Option<i64>, &'a str)> {
    history
        .each()
        .enumerate()
        .filter_map(move |(index, entry)| match &entry.event {
            HistoryEvent::SideEffect {
                client,
                resource: r,
                token,
                accepted: true,
                detail,
            } if r == resource => Some((index, entry.at_us, *client, *token, detail.as_str())),
            _ => None,
        })
}

/// **Mutual exclusion** (always): the accepted writes on `resource` form one contiguous run per
/// critical section (token): no section's writes resume after another's began.
pub fn mutual_exclusion(history: &impl Entries, resource: &str) -> Finding {
    let mut writes = 0;
    let mut closed = BTreeSet::new();
    let mut current: Option<Option<i64>> = None;
    let mut last_write: BTreeMap<Option<i64>, usize> = BTreeMap::new();
    let mut violation = None;
    let mut evidence = Vec::new();
    for (index, at_us, client, token, detail) in accepted(history, resource) {
        writes += 1;
        if current != Some(token) {
            if let Some(previous) = current {
                closed.insert(previous);
            }
            if closed.contains(&token) {
                violation = Some(format!(
                    "at {at_us} us client {client} wrote {detail:?} with token {token:?}, whose critical section another had interleaved"
                ));
                // The section's last write before, the interleaving section's last, this one.
                evidence.extend(last_write.get(&token));
                evidence.extend(current.and_then(|c| last_write.get(&c)));
                evidence.push(index);
                break;
            }
            current = Some(token);
        }
        last_write.insert(token, index);
    }
    let sections = closed.len() + usize::from(current.is_some());
    Finding::new("mutual exclusion", Class::Always, violation, || {
        format!("{writes} accepted writes in {sections} sections")
    })
    .with_evidence(history, evidence)
}

/// How many of the oldest entries of a history `entries` (oldest first, timed by their
/// place) [`mutual_exclusion`] on `resource` can no longer use, in a history where it holds so
/// far: those before the first accepted write. Every section's token stays, because a write
/// with any closed section's token, however old, is a violation.
pub fn mutual_exclusion_settled(entries: &[&HistoryEntry], resource: &str) -> usize {
    entries
        .iter()
        .position(|entry| is_accepted_on(entry, resource))
        .unwrap_or(entries.len())
}

fn is_accepted_on(entry: &HistoryEntry, resource: &str) -> bool {
    matches!(&entry.event, HistoryEvent::SideEffect { resource: r, accepted: true, .. } if r == resource)
}

/// **Single acting master** (always): no accepted side effect on `resource` carries a token older
/// than one accepted before it.
pub fn single_acting_master(history: &impl Entries, resource: &str) -> Finding {
    let mut writes = 0;
    let mut highest: Option<(i64, usize)> = None;
    let mut violation = None;
    let mut evidence = Vec::new();
    for (index, at_us, client, token, detail) in accepted(history, resource) {
        writes += 1;
        let Some(token) = token else { continue };
        if let Some((high, high_index)) = highest.filter(|(h, _)| token < *h) {
            violation = Some(format!(
                "at {at_us} us client {client} acted ({detail:?}) with token {token} after token {high} acted"
            ));
            evidence = vec![high_index, index];
            break;
        }
        if highest.is_none_or(|(h, _)| token >= h) {
            highest = Some((token, index));
        }
    }
    Finding::new("single acting master", Class::Always, violation, || {
        format!("{writes} accepted side effects")
    })
    .with_evidence(history, evidence)
}

/// How many of the oldest entries of `entries` (oldest first) [`single_acting_master`] on
/// `resource` can no longer use, in a history where it holds so far: those before the last
/// accepted write with a token. While the property holds, tokens never go down, so that write
/// carries the highest token seen, which is all a later write is compared with.
pub fn single_acting_master_settled(entries: &[&HistoryEntry], resource: &str) -> usize {
    entries
        .iter()
        .rposition(|entry| {
            is_accepted_on(entry, resource)
                && matches!(entry.event, HistoryEvent::SideEffect { token: Some(_), .. })
        })
        .unwrap_or(entries.len())
}

/// **No oversell** (always): replaying the accepted `sell read=<n>` writes on `resource` from
/// `initial`, each sale was made from the current stock and the stock never went negative.
pub fn no_oversell(history: &impl Entries, resource: &str, initial: i64) -> Finding {
    let mut stock = initial;
    let mut violation = None;
    let mut last_sale = None;
    let mut evidence = Vec::new();
    for (index, at_us, client, _, detail) in accepted(history, resource) {
        let Some(read) = detail
            .strip_prefix("sell read=")
            .and_then(|n| n.parse::<i64>().ok())
        else {
            continue;
        };
        if read != stock || stock <= 0 {
            violation = Some(format!("at {at_us} us client {client} sold from a read of {read} while the stock was {stock}"));
            evidence.extend(last_sale);
            evidence.push(index);
            break;
        }
        stock -= 1;
        last_sale = Some(index);
    }
    Finding::new("no oversell", Class::Always, violation, || {
        format!("sold {}, {stock} left", initial - stock)
    })
    .with_evidence(history, evidence)
}

/// **Herd free** (always): no transaction's watch events at or under `dir` wake more than one
/// waiting client.
///
/// A client counts as waiting on a path from the read that set its watch there until the watch
/// fires, unless meanwhile it created or deleted a node under `dir` (it gave up, or started
/// over) or lost its session: a watch it abandoned is not a waiter (Curator removes such watches
/// with `removeWatches`). Events whose zxid the engine did not record are not counted.
pub fn herd_free(history: &impl Entries, dir: &str) -> Finding {
    let woken = waking_transactions(history, dir);
    let herd = woken.iter().find(|(_, wakeup)| wakeup.clients.len() > 1);
    let violation = herd.map(|((_, zxid), wakeup)| {
        format!(
            "transaction {zxid:#x} woke {} waiting clients under {dir}: {:?}",
            wakeup.clients.len(),
            wakeup.clients
        )
    });
    let evidence = herd.map_or_else(Vec::new, |(_, wakeup)| wakeup.rows.clone());
    let most = woken.values().map(|w| w.clients.len()).max().unwrap_or(0);
    Finding::new("herd free", Class::Always, violation, || {
        format!(
            "{} waking transactions, at most {most} woken each",
            woken.len()
        )
    })
    .with_evidence(history, evidence)
}

/// One transaction that woke clients waiting under a directory (see [`herd_free`]).
struct Waking {
    /// The clients it woke.
    clients: BTreeSet<u32>,
    /// Clients waiting under the directory when its first watch event came.
    waiting: usize,
    /// The places of its watch events in the history.
    rows: Vec<usize>,
}

/// Every transaction whose watch events under `dir` woke a waiting client, by the piece of the
/// run it belongs to (how many data losses came before it: zxids start again after one) and
/// its zxid, with what [`herd_free`] and [`wakeups`] read of it.
fn waking_transactions(history: &impl Entries, dir: &str) -> BTreeMap<(usize, i64), Waking> {
    let under = |path: &str| zkh_recipes::path::is_under(path, dir);
    let mut waiting: BTreeMap<u32, BTreeSet<&str>> = BTreeMap::new();
    let mut woken: BTreeMap<(usize, i64), Waking> = BTreeMap::new();
    let mut piece = 0;
    for (index, entry) in history.each().enumerate() {
        if entry.event.is_data_loss() {
            piece += 1;
        }
        if let Some(client) = stops_waiting(&entry.event, dir) {
            waiting.remove(&client);
            continue;
        }
        if let Some((client, path)) = watched_read(&entry.event, dir) {
            waiting.entry(client).or_default().insert(path);
            continue;
        }
        match &entry.event {
            HistoryEvent::Watch { client, event } if under(&event.path) => {
                let known = event.zxid != zkh_recipes::WatchedEvent::NO_ZXID;
                // How many wait, read only for a transaction's first event (a model checker
                // judges this at every state), and before this waiter stops waiting.
                let waiters = if known && !woken.contains_key(&(piece, event.zxid)) {
                    waiting.values().filter(|paths| !paths.is_empty()).count()
                } else {
                    0
                };
                let was_waiting = waiting
                    .get_mut(client)
                    .is_some_and(|paths| paths.remove(event.path.as_str()));
                if was_waiting && known {
                    let waking = woken.entry((piece, event.zxid)).or_insert_with(|| Waking {
                        clients: BTreeSet::new(),
                        waiting: waiters,
                        rows: Vec::new(),
                    });
                    waking.clients.insert(*client);
                    waking.rows.push(index);
                }
            }
            _ => {}
        }
    }
    woken
}

/// One transaction that woke waiters: how many clients were waiting under the directory when
/// its first watch event came, and how many it woke. A herd-free lock wakes one per release
/// whatever the number waiting; a herd wakes them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Wakeup {
    /// The transaction.
    pub zxid: i64,
    /// Clients waiting under the directory then.
    pub waiting: usize,
    /// Clients its watch events woke.
    pub woken: usize,
}

/// Every transaction that woke clients waiting under `dir`, oldest first (by zxid within each
/// piece of the run between data losses; the herd-effect view of a lock run: see [`herd_free`]
/// for who counts as waiting).
pub fn wakeups(history: &impl Entries, dir: &str) -> Vec<Wakeup> {
    waking_transactions(history, dir)
        .into_iter()
        .map(|((_, zxid), waking)| Wakeup {
            zxid,
            waiting: waking.waiting,
            woken: waking.clients.len(),
        })
        .collect()
}

/// The client and path of `event` if it is a read under `dir` that sets a watch: from then the
/// client waits there (see [`herd_free`]).
fn watched_read<'a>(event: &'a HistoryEvent, dir: &str) -> Option<(u32, &'a str)> {
    match event {
        HistoryEvent::Invoke {
            client,
            request:
                Request::Exists { path, watch: true }
                | Request::GetData { path, watch: true }
                | Request::GetChildren { path, watch: true },
            ..
        } if zkh_recipes::path::is_under(path, dir) => Some((*client, path)),
        _ => None,
    }
}

/// The client that `event` stops waiting under `dir`, if it does (see [`herd_free`]): it
/// created or deleted a node there, or its session ended.
fn stops_waiting(event: &HistoryEvent, dir: &str) -> Option<u32> {
    match event {
        HistoryEvent::Invoke {
            client,
            request: Request::Create { path, .. } | Request::Delete { path, .. },
            ..
        } if zkh_recipes::path::is_under(path, dir) => Some(*client),
        HistoryEvent::Session {
            client,
            event: SessionEvent::Expired | SessionEvent::Closed,
        } => Some(*client),
        _ => None,
    }
}

/// One client's own entries `own` (oldest first), in a history where [`herd_free`] under `dir`
/// holds so far, reduced to the least that gives the same verdict, now and after any
/// continuation. `in_flight` holds the zxids of the watch events that were sent and not yet
/// received, by any client.
///
/// What the property carries forward from a client's entries is:
///
/// - the paths it waits on: those it read with a watch since it last stopped waiting (created
///   or deleted a node under `dir`, or lost its session) whose watch has not fired for it;
/// - the transactions that woke it. A wakeup is only ever paired with another wakeup of the
///   same transaction. Those already received were judged (the property holds so far); those
///   still to come are in flight, or belong to transactions not yet made, whose zxids are
///   higher than any there is. So only its wakeups by transactions with events in flight
///   matter.
///
/// The summary is one watched read for each such wakeup followed by the wakeup itself, by zxid,
/// then one watched read of each path it waits on, in the order of the paths with their client
/// identities left out (so that renaming the clients does not reorder them; two paths that
/// differ only there, which two sequential nodes never do, keep their own order); the reads
/// carry no session and no
/// xid, which the property does not read. Two clients that reached the same waits by different
/// roads (another retry, another kind of read, an earlier round) get the same summary, which is
/// why the model checker keeps the summary in place of the entries (see `check`'s module docs).
pub fn herd_free_summary(
    own: &[&HistoryEntry],
    dir: &str,
    in_flight: &BTreeSet<i64>,
) -> Vec<HistoryEntry> {
    let mut client = None;
    let mut waiting: BTreeSet<&str> = BTreeSet::new();
    let mut woken: BTreeMap<i64, &zkh_recipes::WatchedEvent> = BTreeMap::new();
    for entry in own {
        if stops_waiting(&entry.event, dir).is_some() {
            waiting.clear();
            continue;
        }
        if let Some((c, path)) = watched_read(&entry.event, dir) {
            client = Some(c);
            waiting.insert(path);
            continue;
        }
        match &entry.event {
            HistoryEvent::Watch { client: c, event }
                if zkh_recipes::path::is_under(&event.path, dir) =>
            {
                client = Some(*c);
                if waiting.remove(event.path.as_str()) && in_flight.contains(&event.zxid) {
                    woken.insert(event.zxid, event);
                }
            }
            _ => {}
        }
    }
    let Some(client) = client else {
        return Vec::new();
    };
    let read = |path: &str| HistoryEntry {
        at_us: 0,
        event: HistoryEvent::Invoke {
            client,
            session: zkh_recipes::SessionId(0),
            xid: 0,
            request: Request::GetData {
                path: path.to_owned(),
                watch: true,
            },
        },
    };
    let mut summary = Vec::with_capacity(2 * woken.len() + waiting.len());
    for event in woken.values() {
        summary.push(read(&event.path));
        summary.push(HistoryEntry {
            at_us: 0,
            event: HistoryEvent::Watch {
                client,
                event: (*event).clone(),
            },
        });
    }
    let mut waits: Vec<&str> = waiting.into_iter().collect();
    waits.sort_by_cached_key(|path| (without_identities(path), *path));
    summary.extend(waits.into_iter().map(read));
    summary
}

/// `path` without its client identity tokens (each [`IDENTITY_MARK`] and the digits after it).
fn without_identities(path: &str) -> String {
    let mut kept = String::with_capacity(path.len());
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c == IDENTITY_MARK {
            while chars.next_if(char::is_ascii_digit).is_some() {}
        } else {
            kept.push(c);
        }
    }
    kept
}

/// A bound for [`leader_elected`] that means "to the end of the run" (the model checker has
/// no clock to bound it with).
pub const UNBOUNDED_US: u64 = u64::MAX / 4;

/// **Leader elected** (eventually): some client takes one of `roles` with a token between
/// `after_us` and `after_us + within_us`, or holds it at `after_us` already.
pub fn leader_elected(
    history: &impl Entries,
    roles: &[&str],
    after_us: u64,
    within_us: u64,
) -> Finding {
    let mut holding: BTreeMap<u32, bool> = BTreeMap::new();
    let mut elected_at = None;
    for entry in history.each() {
        if entry.at_us > after_us && elected_at.is_none() && holding.values().any(|h| *h) {
            // Someone held the role when the faults healed.
            elected_at = Some(after_us);
        }
        if let Some((client, holds)) = role_entry(entry, roles) {
            holding.insert(client, holds);
            if holds && entry.at_us >= after_us && elected_at.is_none() {
                elected_at = Some(entry.at_us);
            }
        }
    }
    if elected_at.is_none() && holding.values().any(|h| *h) {
        elected_at = Some(after_us.max(history.each().last().map_or(0, |e| e.at_us)));
    }
    let in_time = elected_at.is_some_and(|at| at <= after_us.saturating_add(within_us));
    // Written out by hand: a model checker judges this at every state whose history changed,
    // most of them before anyone is elected, and `format!` was a tenth of that.
    let violation = (!in_time).then(|| {
        let mut why = String::with_capacity(64);
        why.push_str("no ");
        for (at, role) in roles.iter().enumerate() {
            if at > 0 {
                why.push_str(" or ");
            }
            why.push_str(role);
        }
        if within_us >= UNBOUNDED_US {
            why.push_str(" after ");
            why.push_str(&after_us.to_string());
            why.push_str(" us, to the end of the run");
        } else {
            why.push_str(" within ");
            why.push_str(&within_us.to_string());
            why.push_str(" us of ");
            why.push_str(&after_us.to_string());
            why.push_str(" us");
        }
        why.push_str(&activity(history, after_us, within_us));
        why
    });
    let summary = || {
        format!(
            "elected {} us after the heal",
            elected_at.map_or(0, |at| at - after_us)
        )
    };
    let mut finding = Finding::new("leader elected", Class::Eventually, violation, summary);
    if !finding.holds && within_us < UNBOUNDED_US {
        finding.at_us = Some(after_us + within_us);
    }
    finding
}

/// How busy the clients were in the window a liveness property judged, from `after_us` for
/// `within_us` (unbounded: to the last entry): "; busy: N requests in S s (R a second) ..." when they
/// kept issuing requests (a recipe that never settles), "; idle: ..." when they did not (a recipe
/// that waits for news that never comes). Empty when the window has no length.
fn activity(history: &impl Entries, after_us: u64, within_us: u64) -> String {
    let Some((requests, span_us)) = requests_in(history, after_us, within_us) else {
        return String::new();
    };
    let per_second = requests as f64 / (span_us as f64 / 1e6);
    let (state, meaning) = if per_second >= BUSY_REQUESTS_PER_SECOND {
        ("busy", "the clients kept working without getting anywhere")
    } else {
        ("idle", "the clients waited for news that never came")
    };
    format!(
        "; {state}: {requests} requests in the {} judged ({per_second:.1} a second): {meaning}",
        span(span_us)
    )
}

/// The requests the clients issued in the window from `after_us` for `within_us`
/// (unbounded: to the last entry), and the window's length; none when it has no length.
fn requests_in(history: &impl Entries, after_us: u64, within_us: u64) -> Option<(usize, u64)> {
    // A bounded window is the run's to its deadline; an unbounded one ends at the last entry.
    let end_us = match within_us >= UNBOUNDED_US {
        true => history.each().last().map_or(0, |entry| entry.at_us),
        false => after_us.saturating_add(within_us),
    };
    if end_us <= after_us {
        return None;
    }
    let requests = (history.each())
        .filter(|entry| entry.at_us > after_us && entry.at_us <= end_us)
        .filter(|entry| matches!(entry.event, HistoryEvent::Invoke { .. }))
        .count();
    Some((requests, end_us - after_us))
}

/// A length of simulated time, in the unit that reads best.
fn span(span_us: u64) -> String {
    if span_us >= 1_000_000 {
        format!("{:.1} s", span_us as f64 / 1e6)
    } else if span_us >= 1_000 {
        format!("{} ms", span_us / 1_000)
    } else {
        format!("{span_us} us")
    }
}

/// The rate of requests, all clients together, above which a window without a leader counts as
/// busy rather than idle: a correct recipe at rest issues none (it waits on watches), and one
/// retrying after ConnectionLoss every 10 to 100 ms issues more.
pub const BUSY_REQUESTS_PER_SECOND: f64 = 5.0;

/// If `entry` is a client's role, the client and whether the role is one of `roles`, held.
fn role_entry(entry: &HistoryEntry, roles: &[&str]) -> Option<(u32, bool)> {
    match &entry.event {
        HistoryEvent::Role {
            client,
            role,
            token,
        } => Some((*client, roles.contains(&role.as_str()) && token.is_some())),
        _ => None,
    }
}

/// How many of the oldest entries of `entries` (oldest first, each timed by its place)
/// [`leader_elected`] for `roles` after `after_us` can do without, whatever comes after them.
///
/// The property reads the entries after `after_us` and, at those and at the end, which clients
/// hold a role: each client's last `Role` entry so far. So the dropped entries must all come
/// before `after_us`, and a client's last `Role` entry before `after_us` must stay if it holds
/// a role (a dropped client counts as holding none). Later faults move `after_us` only later,
/// and the caller renumbers the times of the entries kept (the property compares times only
/// with each other and with `after_us`, and the bound it is given is unlimited in the model).
pub fn leader_elected_settled(entries: &[&HistoryEntry], roles: &[&str], after_us: u64) -> usize {
    let before = entries.partition_point(|entry| entry.at_us < after_us);
    let mut last_role: BTreeMap<u32, (usize, bool)> = BTreeMap::new();
    for (index, entry) in entries[..before].iter().enumerate() {
        if let Some((client, holds)) = role_entry(entry, roles) {
            last_role.insert(client, (index, holds));
        }
    }
    last_role
        .values()
        .filter(|(_, holds)| *holds)
        .map(|(index, _)| *index)
        .fold(before, usize::min)
}

/// Runs of `job`'s items: (item, cycle) to the clients that ran it and the places of the runs
/// in the history, in order.
fn executions(history: &impl Entries, job: &str) -> BTreeMap<(u32, u64), Vec<(u32, usize)>> {
    let mut runs: BTreeMap<(u32, u64), Vec<(u32, usize)>> = BTreeMap::new();
    for (index, entry) in history.each().enumerate() {
        if let HistoryEvent::Execution {
            client,
            job: j,
            item,
            cycle,
            ..
        } = &entry.event
        {
            if j == job {
                runs.entry((*item, *cycle))
                    .or_default()
                    .push((*client, index));
            }
        }
    }
    runs
}

/// **No shard executed twice** (always): each (item, cycle) of `job` ran at most once, by one
/// instance. (Stricter than "by at most one instance": a correct instance does not run an item
/// twice either.)
pub fn no_shard_executed_twice(history: &impl Entries, job: &str) -> Finding {
    let runs = executions(history, job);
    let twice = runs.iter().find(|(_, runs)| runs.len() > 1);
    let violation = twice.map(|((item, cycle), runs)| {
        let clients: Vec<u32> = runs.iter().map(|(client, _)| *client).collect();
        format!(
            "{job} item {item} of cycle {cycle} ran {} times, by clients {clients:?}",
            clients.len()
        )
    });
    let evidence = twice.map_or_else(Vec::new, |(_, runs)| {
        runs.iter().map(|(_, index)| *index).collect()
    });
    let summary = || format!("{} (item, cycle) runs, each once", runs.len());
    Finding::new("no shard executed twice", Class::Always, violation, summary)
        .with_evidence(history, evidence)
}

/// **No shard lost** (eventually): every item `0..items` of `job` ran in every cycle of
/// `cycles` (the caller picks the cycles whose trigger came after the faults healed and which
/// had time to finish).
pub fn no_shard_lost(
    history: &impl Entries,
    job: &str,
    items: u32,
    cycles: std::ops::RangeInclusive<u64>,
) -> Finding {
    let runs = executions(history, job);
    let missing: Vec<(u32, u64)> = cycles
        .clone()
        .flat_map(|cycle| (0..items).map(move |item| (item, cycle)))
        .filter(|key| !runs.contains_key(key))
        .collect();
    let violation = (!missing.is_empty()).then(|| {
        let (item, cycle) = missing[0];
        format!(
            "{job} item {item} of cycle {cycle} never ran ({} (item, cycle) missing in cycles {cycles:?})",
            missing.len()
        )
    });
    let summary = || format!("{items} items ran in each of cycles {cycles:?}");
    Finding::new("no shard lost", Class::Eventually, violation, summary)
}

/// The cycles "no shard lost" judges, times counted from when the instances started: those
/// that fire from `judged_from_us` on and are half a cycle old at `end_us` (empty when none is;
/// the scenario reader refuses such a scenario).
pub fn judged_cycles(
    judged_from_us: u64,
    end_us: u64,
    interval_us: u64,
) -> std::ops::RangeInclusive<u64> {
    let first = judged_from_us.div_ceil(interval_us).max(1);
    let last = end_us.saturating_sub(interval_us / 2) / interval_us;
    first..=last
}

/// [`no_shard_lost`] as the simulator judges it, over the cycles that fired from
/// `judged_from_us` on: a violation also says how many requests the instances issued from then
/// to the end of the run (a second, and a judged cycle), so that a job that kept working
/// without running the item reads apart from one that waited for news.
pub fn no_shard_lost_since(
    history: &impl Entries,
    job: &str,
    items: u32,
    cycles: std::ops::RangeInclusive<u64>,
    judged_from_us: u64,
) -> Finding {
    let judged = cycles.clone().count().max(1);
    let mut finding = no_shard_lost(history, job, items, cycles);
    if let (false, Some((requests, span_us))) = (
        finding.holds,
        requests_in(history, judged_from_us, UNBOUNDED_US),
    ) {
        // A job at rest still works every cycle, so no one rate tells busy from idle: the
        // figures are given for the reader to set against a passing seed's.
        let per_second = requests as f64 / (span_us as f64 / 1e6);
        finding.detail.push_str(&format!(
            "; the instances issued {requests} requests in the {} judged ({per_second:.1} a \
             second, {} a judged cycle)",
            span(span_us),
            requests / judged
        ));
    }
    finding
}

/// **Runs when scheduled** (always): no run of an item of `job` for cycle `k` comes before
/// `fired_at_us(k)`, the moment the cron fired cycle `k`. Late is allowed: Elastic-Job runs a
/// misfired cycle once its running one ends, and a failover runs a crashed owner's cycle when
/// the crash is seen. The model checker judges the same property without a clock, by order
/// (`check::SCHEDULE`).
pub fn runs_when_scheduled(
    history: &impl Entries,
    job: &str,
    fired_at_us: impl Fn(u64) -> u64,
) -> Finding {
    let mut runs = 0;
    let early = history
        .each()
        .enumerate()
        .find(|(_, entry)| match &entry.event {
            HistoryEvent::Execution { job: j, cycle, .. } if j == job => {
                runs += 1;
                entry.at_us < fired_at_us(*cycle)
            }
            _ => false,
        });
    let violation = early.map(|(_, entry)| match &entry.event {
        HistoryEvent::Execution {
            client,
            item,
            cycle,
            ..
        } => format!(
            "client {client} ran {job} item {item} of cycle {cycle} at {} us, before the cycle \
             fired at {} us",
            entry.at_us,
            fired_at_us(*cycle)
        ),
        _ => unreachable!("only runs are found early"),
    });
    let evidence = early.map(|(index, _)| vec![index]).unwrap_or_default();
    let summary = || format!("{runs} runs, none before its cycle fired");
    Finding::new("runs when scheduled", Class::Always, violation, summary)
        .with_evidence(history, evidence)
}

/// The `sometimes` checks that keep a pass from being an empty one.
pub mod sometimes {
    use super::*;

    /// A client lost its session (expiry or suspension) while holding a role, and another client
    /// took the role afterwards.
    pub fn role_changed_hands_after_a_loss(history: &impl Entries, roles: &[&str]) -> Finding {
        let mut holder: Option<u32> = None;
        let mut lost_by: Option<u32> = None;
        let mut happened = false;
        for entry in history.each() {
            match &entry.event {
                HistoryEvent::Role {
                    client,
                    role,
                    token: Some(_),
                } if roles.contains(&role.as_str()) => {
                    if lost_by.is_some_and(|lost| lost != *client) {
                        happened = true;
                    }
                    holder = Some(*client);
                }
                HistoryEvent::Session {
                    client,
                    event: SessionEvent::Expired | SessionEvent::Disconnected,
                } if holder == Some(*client) => {
                    lost_by = Some(*client);
                }
                _ => {}
            }
        }
        let detail = if happened {
            "a role changed hands after its holder lost its session"
        } else {
            "never"
        };
        Finding {
            property: "role changed hands after a loss",
            class: Class::Sometimes,
            holds: happened,
            detail: detail.into(),
            evidence: Vec::new(),
            at_us: None,
        }
    }

    /// How many of the oldest entries of `entries` (oldest first)
    /// [`role_changed_hands_after_a_loss`] for `roles` can do without, in a history where it
    /// has not happened yet (once it has, the checker keeps its verdict and judges it no more).
    ///
    /// The property follows the holder and whether the holder lost its session. Until it
    /// happens, a loss is always the current holder's (a loss by an earlier holder followed by
    /// another client's role is the event itself), and it comes after the entry that made the
    /// current holder the holder. Everything before that entry can go; with no holder yet,
    /// everything.
    pub fn role_changed_hands_settled(entries: &[&HistoryEntry], roles: &[&str]) -> usize {
        let mut holder = None;
        let mut since = entries.len();
        for (index, entry) in entries.iter().enumerate() {
            if let Some((client, true)) = role_entry(entry, roles) {
                if holder != Some(client) {
                    holder = Some(client);
                    since = index;
                }
            }
        }
        since
    }

    /// A reply was lost after the server applied the request.
    pub fn reply_lost(history: &impl Entries) -> Finding {
        let lost = (history.each())
            .filter(|e| {
                matches!(&e.event, HistoryEvent::Fault { description } if description.contains("reply to"))
            })
            .count();
        Finding {
            property: "a reply was lost",
            class: Class::Sometimes,
            holds: lost > 0,
            detail: match lost {
                0 => "no reply was lost".to_owned(),
                1 => "1 reply was lost".to_owned(),
                n => format!("{n} replies were lost"),
            },
            evidence: Vec::new(),
            at_us: None,
        }
    }

    /// A side effect on `resource` was refused for a stale token.
    pub fn stale_write_refused(history: &impl Entries, resource: &str) -> Finding {
        let happened = history.each().any(|e| {
            matches!(&e.event, HistoryEvent::SideEffect { resource: r, accepted: false, .. } if r == resource)
        });
        Finding {
            property: "a stale write was refused",
            class: Class::Sometimes,
            holds: happened,
            detail: String::new(),
            evidence: Vec::new(),
            at_us: None,
        }
    }

    /// An item of `job` ran as the failover of a crashed instance's item.
    pub fn item_failed_over(history: &impl Entries, job: &str) -> Finding {
        let happened = history.each().any(|e| {
            matches!(&e.event, HistoryEvent::Execution { job: j, failover: true, .. } if j == job)
        });
        Finding {
            property: "an item failed over",
            class: Class::Sometimes,
            holds: happened,
            detail: String::new(),
            evidence: Vec::new(),
            at_us: None,
        }
    }

    /// A watch event woke a client under `dir`.
    pub fn waiter_woken(history: &impl Entries, dir: &str) -> Finding {
        let happened = history
            .each()
            .any(|e| matches!(&e.event, HistoryEvent::Watch { event, .. } if event.path.starts_with(dir)));
        Finding {
            property: "a waiter was woken",
            class: Class::Sometimes,
            holds: happened,
            detail: String::new(),
            evidence: Vec::new(),
            at_us: None,
        }
    }
}
