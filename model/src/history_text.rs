//! A history event as one line a person reads: the logs, the reports' history tables and the
//! timeline's tooltips all print this text.
//!
//! The text is for people; it is not parsed and not hashed ([`crate::history::History::
//! stable_hash`] hashes the values, not this text). It names a
//! client as `client N`, a request by its client-local id as `#xid`, a session in hex as
//! ZooKeeper's own logs do, and node data as quoted text when it is printable UTF-8 (else as
//! hex bytes), cut to [`DATA_SHOWN_BYTES`].

use std::fmt::{self, Display, Formatter};

use zkh_recipes::{CreateMode, Op, OpResult, SessionEvent, SessionId, WatchedEvent};

use crate::history::{HistoryEvent, OpOutcome};
use crate::request::{Reply, Request, Response};

/// How many bytes of a node's data an event's text shows.
pub const DATA_SHOWN_BYTES: usize = 32;

/// An operation or timer id as a person reads it. A machine's own ids are small (1, 2, ...:
/// [`zkh_recipes::machine::Ids`]); a host shifts its nested machines' ids into ranges of its
/// own: the sharded job's own ids from bit 62, its failover lock's from bit 61, and a round
/// number from bit 40 (the job election's latch, the failover lock). So `2^62 + 3` reads
/// `#j3`, the failover lock's op 5 in round 2 `#c2.5`, and the election's latch op 4 in round
/// 1 `#1.4`.
pub fn op_id_text(id: u64) -> String {
    const LOW_BITS: u32 = 40;
    let low = id & ((1 << LOW_BITS) - 1);
    let round = (id >> LOW_BITS) & ((1 << 21) - 1);
    let tag = match id >> 61 {
        0 => "",
        1 => "c",
        _ => "j",
    };
    match (tag, round) {
        ("", 0) => format!("#{low}"),
        (tag, 0) => format!("#{tag}{low}"),
        (tag, round) => format!("#{tag}{round}.{low}"),
    }
}

/// `data` as a person reads it: `"text"` when printable UTF-8, else `0x0a1b…` hex; cut to
/// [`DATA_SHOWN_BYTES`] with `…` and the full length.
pub fn data_text(data: &[u8]) -> String {
    let shown = &data[..data.len().min(DATA_SHOWN_BYTES)];
    let cut = if shown.len() < data.len() {
        format!("… ({} bytes)", data.len())
    } else {
        String::new()
    };
    match std::str::from_utf8(shown) {
        Ok(text) if text.chars().all(|c| !c.is_control()) => format!("{text:?}{cut}"),
        _ => {
            let hex: String = shown.iter().map(|byte| format!("{byte:02x}")).collect();
            format!("0x{hex}{cut}")
        }
    }
}

/// A session id as ZooKeeper logs it: `0x` and hex.
pub fn session_text(session: SessionId) -> String {
    format!("0x{:x}", session.0)
}

fn mode_text(mode: CreateMode) -> &'static str {
    match mode {
        CreateMode::Persistent => "persistent",
        CreateMode::PersistentSequential => "persistent sequential",
        CreateMode::Ephemeral => "ephemeral",
        CreateMode::EphemeralSequential => "ephemeral sequential",
        CreateMode::Container => "container",
    }
}

fn version_text(version: i32) -> String {
    if version < 0 {
        "any version".to_owned()
    } else {
        format!("version {version}")
    }
}

fn watch_text(watch: bool) -> &'static str {
    if watch {
        " +watch"
    } else {
        ""
    }
}

fn op_text(op: &Op) -> String {
    match op {
        Op::Check { path, version } => format!("check {path} {}", version_text(*version)),
        Op::Create { path, data, mode } => {
            format!("create {path} {} {}", mode_text(*mode), data_text(data))
        }
        Op::Delete { path, version } => format!("delete {path} {}", version_text(*version)),
        Op::SetData {
            path,
            data,
            version,
        } => format!("set {path} {} {}", data_text(data), version_text(*version)),
    }
}

/// A request in words: `create /locks/n- ephemeral sequential ""`, `getChildren /locks +watch`.
pub fn request_text(request: &Request) -> String {
    match request {
        Request::Create { path, data, mode } => {
            format!("create {path} {} {}", mode_text(*mode), data_text(data))
        }
        Request::Delete { path, version } => format!("delete {path} {}", version_text(*version)),
        Request::Exists { path, watch } => format!("exists {path}{}", watch_text(*watch)),
        Request::GetData { path, watch } => format!("getData {path}{}", watch_text(*watch)),
        Request::GetChildren { path, watch } => {
            format!("getChildren {path}{}", watch_text(*watch))
        }
        Request::SetData {
            path,
            data,
            version,
        } => format!(
            "setData {path} {} {}",
            data_text(data),
            version_text(*version)
        ),
        Request::Multi(ops) => {
            let ops: Vec<String> = ops.iter().map(op_text).collect();
            format!("multi [{}]", ops.join("; "))
        }
        Request::Sync { path } => format!("sync {path}"),
    }
}

fn op_result_text(result: &OpResult) -> String {
    match result {
        OpResult::Check => "checked".to_owned(),
        OpResult::Create { path, .. } => format!("created {path}"),
        OpResult::Delete => "deleted".to_owned(),
        OpResult::SetData { stat } => format!("set (version {})", stat.version),
    }
}

/// A request's result as a client machine gets it: `ok created /x`, `error NoNode`.
pub fn result_text(result: &Result<Response, zkh_recipes::ZkError>) -> String {
    match result {
        Ok(response) => format!("ok {}", response_text(response)),
        Err(error) => format!("error {error:?}"),
    }
}

fn response_text(response: &Response) -> String {
    match response {
        Response::Created(created) => format!("created {}", created.path),
        Response::Deleted => "deleted".to_owned(),
        Response::Exists(Some(stat)) => format!("exists (czxid {})", stat.czxid),
        Response::Exists(None) => "does not exist".to_owned(),
        Response::Data(data, stat) => {
            format!("data {} (version {})", data_text(data), stat.version)
        }
        Response::Children(children, _) => format!("children [{}]", children.join(", ")),
        Response::SetData(stat) => format!("set (version {})", stat.version),
        Response::Multi(results) => {
            let results: Vec<String> = results.iter().map(op_result_text).collect();
            format!("multi ok [{}]", results.join("; "))
        }
        Response::Synced => "synced".to_owned(),
    }
}

/// How an operation ended, in words: `ok created /x (zxid 7)`, `error NoNode`, `connection
/// loss: unknown whether applied`.
pub fn outcome_text(outcome: &OpOutcome) -> String {
    match outcome {
        OpOutcome::Reply {
            reply: Reply::Ok(response),
            zxid,
        } => format!("ok {} (zxid {zxid})", response_text(response)),
        OpOutcome::Reply {
            reply: Reply::Error(error),
            zxid,
        } => format!("error {error:?} (zxid {zxid})"),
        OpOutcome::Reply {
            reply: Reply::MultiFailed { index, error },
            zxid,
        } => format!("multi failed at op {index}: {error:?} (zxid {zxid})"),
        OpOutcome::Unknown => "connection loss: unknown whether applied".to_owned(),
        OpOutcome::Failed(error) => format!("failed in the client: {error:?}"),
    }
}

fn watched_text(event: &WatchedEvent) -> String {
    if event.zxid == WatchedEvent::NO_ZXID {
        format!("{:?} {}", event.event_type, event.path)
    } else {
        format!(
            "{:?} {} (zxid {})",
            event.event_type, event.path, event.zxid
        )
    }
}

/// A connection or session change in words: `connected, new session 0x1f`.
pub fn session_event_text(event: &SessionEvent) -> String {
    match event {
        SessionEvent::Connected { session_id } => {
            format!("connected, new session {}", session_text(*session_id))
        }
        SessionEvent::Disconnected => "disconnected (suspended)".to_owned(),
        SessionEvent::Reconnected { session_id } => {
            format!("reconnected, session {} lives", session_text(*session_id))
        }
        SessionEvent::Expired => "session expired (lost)".to_owned(),
        SessionEvent::Closed => "closed".to_owned(),
    }
}

fn token_text(token: Option<i64>) -> String {
    token.map_or_else(String::new, |token| format!(" (token {token})"))
}

impl Display for HistoryEvent {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            HistoryEvent::Invoke {
                client,
                session,
                xid,
                request,
            } => write!(
                f,
                "client {client} {} sends {} (session {})",
                op_id_text(*xid),
                request_text(request),
                session_text(*session)
            ),
            HistoryEvent::Complete {
                client,
                xid,
                outcome,
            } => write!(
                f,
                "client {client} {} {}",
                op_id_text(*xid),
                outcome_text(outcome)
            ),
            HistoryEvent::Watch { client, event } => {
                write!(f, "client {client} watch {}", watched_text(event))
            }
            HistoryEvent::Session { client, event } => {
                write!(f, "client {client} {}", session_event_text(event))
            }
            HistoryEvent::Fault { description } => write!(f, "fault: {description}"),
            HistoryEvent::Server { server, role } => write!(f, "server {server} {role}"),
            HistoryEvent::Role {
                client,
                role,
                token,
            } => write!(f, "client {client} is {role}{}", token_text(*token)),
            HistoryEvent::SideEffect {
                client,
                resource,
                token,
                accepted,
                detail,
            } => write!(
                f,
                "client {client} {detail} on {resource}{}: {}",
                token_text(*token),
                if *accepted { "accepted" } else { "refused" }
            ),
            HistoryEvent::Execution {
                client,
                job,
                item,
                cycle,
                token,
                failover,
            } => write!(
                f,
                "client {client} ran {job} item {item} cycle {cycle}{} (token {token})",
                if *failover { " as failover" } else { "" }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_text_when_printable_and_hex_otherwise() {
        assert_eq!(data_text(b"10.0.0.1:8080"), "\"10.0.0.1:8080\"");
        assert_eq!(data_text(&[0, 1, 0xff]), "0x0001ff");
        assert_eq!(data_text(b""), "\"\"");
        let long = vec![b'a'; 40];
        assert_eq!(
            data_text(&long),
            format!("\"{}\"… (40 bytes)", "a".repeat(32))
        );
    }

    #[test]
    fn nested_ids_read_small() {
        assert_eq!(op_id_text(4), "#4");
        assert_eq!(op_id_text((1 << 62) + 3), "#j3");
        assert_eq!(op_id_text((1 << 61) + (2 << 40) + 5), "#c2.5");
        assert_eq!(op_id_text((1 << 40) + 4), "#1.4");
    }

    #[test]
    fn events_read_as_sentences() {
        let invoke = HistoryEvent::Invoke {
            client: 2,
            session: SessionId(0x1f),
            xid: 7,
            request: Request::Create {
                path: "/locks/n-".to_owned(),
                data: b"c2".to_vec(),
                mode: CreateMode::EphemeralSequential,
            },
        };
        assert_eq!(
            invoke.to_string(),
            "client 2 #7 sends create /locks/n- ephemeral sequential \"c2\" (session 0x1f)"
        );
        let lost = HistoryEvent::Complete {
            client: 2,
            xid: 7,
            outcome: OpOutcome::Unknown,
        };
        assert_eq!(
            lost.to_string(),
            "client 2 #7 connection loss: unknown whether applied"
        );
        let role = HistoryEvent::Role {
            client: 1,
            role: "leader".to_owned(),
            token: Some(12),
        };
        assert_eq!(role.to_string(), "client 1 is leader (token 12)");
    }
}
