//! What a probe run saw, engine apart (counts by kind, times after each fault), and each
//! guarantee's verdict, for reports that put a real and a simulated run side by side.

use std::collections::BTreeMap;

use zkh_recipes::SessionEvent;

use crate::history::{History, HistoryEvent, OpOutcome};
use crate::request::Reply;

/// What a run saw, engine apart: counts by kind, for the differential report.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Profile {
    /// Requests issued.
    pub requests: u64,
    /// Answers, by kind: `ok`, an error's name, `connection lost`, `failed in client: ...`.
    pub outcomes: BTreeMap<String, u64>,
    /// Session events, by kind.
    pub sessions: BTreeMap<String, u64>,
    /// Watch events delivered.
    pub watch_events: u64,
    /// For each fault, the milliseconds from it to the next acknowledged write (none if no
    /// write was acknowledged after it).
    pub writes_resumed_ms: Vec<(String, Option<u64>)>,
    /// Milliseconds from the first fault to the first session expiry a client reported.
    #[serde(default)]
    pub first_expiry_ms: Option<u64>,
}

impl Profile {
    /// The profile of `history`.
    pub fn of(history: &History) -> Profile {
        let mut profile = Profile::default();
        let mut writes: BTreeMap<(u32, u64), bool> = BTreeMap::new();
        let mut faults: Vec<(String, u64)> = Vec::new();
        let mut resumed: Vec<Option<u64>> = Vec::new();
        for entry in history.entries() {
            match &entry.event {
                HistoryEvent::Invoke {
                    client,
                    xid,
                    request,
                    ..
                } => {
                    profile.requests += 1;
                    writes.insert((*client, *xid), request.is_write());
                }
                HistoryEvent::Complete {
                    client,
                    xid,
                    outcome,
                } => {
                    let kind = match outcome {
                        OpOutcome::Reply {
                            reply: Reply::Ok(_),
                            ..
                        } => "ok".to_owned(),
                        OpOutcome::Reply { reply, .. } => format!("{reply:?}"),
                        OpOutcome::Unknown => "connection lost".to_owned(),
                        OpOutcome::Failed(error) => format!("failed in client: {error:?}"),
                    };
                    let acknowledged_write =
                        kind == "ok" && writes.get(&(*client, *xid)) == Some(&true);
                    *profile.outcomes.entry(kind).or_default() += 1;
                    if acknowledged_write {
                        for (slot, (_, at)) in resumed.iter_mut().zip(&faults) {
                            slot.get_or_insert((entry.at_us - at) / 1000);
                        }
                    }
                }
                HistoryEvent::Session { event, .. } => {
                    if let (SessionEvent::Expired, Some((_, fault_at))) = (event, faults.first()) {
                        (profile.first_expiry_ms).get_or_insert((entry.at_us - fault_at) / 1000);
                    }
                    let kind = format!("{event:?}");
                    let kind = kind.split([' ', '{', '(']).next().unwrap_or("").to_owned();
                    *profile.sessions.entry(kind).or_default() += 1;
                }
                HistoryEvent::Watch { .. } => profile.watch_events += 1,
                HistoryEvent::Fault { description } => {
                    faults.push((description.clone(), entry.at_us));
                    resumed.push(None);
                }
                _ => {}
            }
        }
        profile.writes_resumed_ms = faults.into_iter().map(|(d, _)| d).zip(resumed).collect();
        profile
    }
}

/// One guarantee's verdict on one history, for reports that put engines side by side.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// The guarantee's name.
    pub guarantee: &'static str,
    /// `holds`, `violated`, `seen`, `not seen` (for `sometimes` companions) or `not judged`.
    pub verdict: &'static str,
    /// The checker's summary or violation, or why it was not judged.
    pub detail: String,
}

/// The verdicts of `findings`; with `client_records`, the guarantees a history recorded by
/// clients alone cannot judge are `not judged`, with the reason
/// ([`crate::guarantees::unjudged_on_client_records`]).
pub fn verdicts(findings: &[crate::properties::Finding], client_records: bool) -> Vec<Verdict> {
    use crate::properties::Class;
    findings
        .iter()
        .map(|finding| {
            let unjudged = (client_records)
                .then(|| crate::guarantees::unjudged_on_client_records(finding.property))
                .flatten();
            let not_judged = finding.detail.starts_with("not judged");
            let (verdict, detail) = match (unjudged, finding.class, finding.holds) {
                (Some(why), ..) => ("not judged", why.to_owned()),
                _ if not_judged => ("not judged", finding.detail.clone()),
                (None, Class::Sometimes, true) => ("seen", finding.detail.clone()),
                (None, Class::Sometimes, false) => ("not seen", finding.detail.clone()),
                (None, _, true) => ("holds", finding.detail.clone()),
                (None, _, false) => ("violated", finding.detail.clone()),
            };
            Verdict {
                guarantee: finding.property,
                verdict,
                detail,
            }
        })
        .collect()
}
