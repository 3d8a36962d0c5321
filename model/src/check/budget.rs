//! What a check may inject ([`FaultBudget`]) and when applications act ([`Acting`]).

use serde::{Deserialize, Serialize};

/// How many faults of each kind a check may inject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FaultBudget {
    /// Requests lost before the server applies them.
    pub drop_request: u8,
    /// Replies lost after the server applied the request.
    pub drop_reply: u8,
    /// Server-side session expiries.
    pub expire: u8,
    /// Client-side expiries (`KillSession`).
    pub client_expire: u8,
    /// Disconnections of every client at once.
    pub leader_change: u8,
    /// Client processes that crash while idle and never come back.
    #[serde(default)]
    pub crash: u8,
}

impl FaultBudget {
    /// The standard budget: one dropped reply and one session expiry.
    pub const STANDARD: FaultBudget = FaultBudget {
        drop_request: 0,
        drop_reply: 1,
        expire: 1,
        client_expire: 0,
        leader_change: 0,
        crash: 0,
    };

    /// Parses `drop-reply=1,expire=1` (names: `drop-request`, `drop-reply`, `expire`,
    /// `client-expire`, `leader-change`, `crash`; `none` for no faults).
    pub fn parse(spec: &str) -> Result<FaultBudget, String> {
        let mut budget = FaultBudget::default();
        if spec.trim() == "none" {
            return Ok(budget);
        }
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, count) = part
                .split_once('=')
                .ok_or_else(|| format!("fault budget {part:?}: expected NAME=COUNT"))?;
            let slot = match name.trim() {
                "drop-request" => &mut budget.drop_request,
                "drop-reply" => &mut budget.drop_reply,
                "expire" => &mut budget.expire,
                "client-expire" => &mut budget.client_expire,
                "leader-change" => &mut budget.leader_change,
                "crash" => &mut budget.crash,
                other => {
                    return Err(format!(
                        "fault budget: unknown fault {other:?} (known: drop-request, drop-reply, \
                         expire, client-expire, leader-change, crash)"
                    ))
                }
            };
            // The name first: `session-timeout=10000` is an unknown fault, not a bad count.
            *slot = count.trim().parse().map_err(|_| {
                format!("fault budget {part:?}: the count must be a number from 0 to 255")
            })?;
        }
        Ok(budget)
    }
}

/// When an application acts on the resource, and what the resource accepts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acting {
    /// Only when caught up (nothing in flight to it), on a resource that accepts every write:
    /// judges the recipe's belief itself.
    #[default]
    CaughtUp,
    /// Whenever it believes it holds the role, on a fenced resource (older tokens refused):
    /// judges the recipe with fencing, as it should be deployed.
    Fenced,
    /// Whenever it believes it holds the role, on a resource that accepts every write: the
    /// `unfenced` positive control (a holder acting on news still in flight).
    Unfenced,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_fault_is_named_before_its_count_is_read() {
        let error = FaultBudget::parse("session-timeout=10000").expect_err("unknown");
        assert!(
            error.contains("unknown fault \"session-timeout\"") && error.contains("client-expire"),
            "{error}"
        );
        let error = FaultBudget::parse("expire=300").expect_err("too many");
        assert!(error.contains("from 0 to 255"), "{error}");
        assert_eq!(
            FaultBudget::parse("drop-reply=1, expire=1"),
            Ok(FaultBudget::STANDARD)
        );
    }
}
