//! `zkharness guarantees-real` end to end (normal build): it starts a real three-server
//! ensemble on 127.0.0.1, runs the guarantee probe with the leader killed and restarted, judges
//! the clients' history by ZooKeeper's guarantees, writes its JSON, and stops every server it
//! started (by PID). Then the recorded real history, tampered with in one place, is caught by
//! the same checker: the checks that pass on real histories are not empty.
#![cfg(not(madsim))]

mod common;

use common::zkharness;
use zkh_model::guarantees::{self, CommitLogs, SINGLE_SYSTEM_IMAGE};
use zkh_model::history::{History, HistoryEvent, OpOutcome};
use zkh_model::request::Reply;
use zkh_recipes::{Request, Response};

#[test]
fn a_real_ensemble_keeps_the_guarantees_a_client_can_judge_through_a_leader_crash() {
    let json =
        std::env::temp_dir().join(format!("zkh-guarantees-real-{}.json", std::process::id()));
    let json_arg = json.to_str().expect("a UTF-8 path");
    let (code, stdout, stderr) = zkharness(&[
        "guarantees-real",
        "--fault",
        "kill-leader",
        "--seed",
        "3",
        "--json",
        json_arg,
    ]);
    let text = std::fs::read_to_string(&json).unwrap_or_default();
    let _ = std::fs::remove_file(&json);
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&text).expect("the JSON parses");
    assert_eq!(report["format"], "zkharness-guarantees-real/1");
    assert_eq!(report["fault"], "kill-leader");
    let verdict = |name: &str| {
        let rows = report["verdicts"].as_array().expect("verdicts");
        let row = rows.iter().find(|v| v["guarantee"] == name).expect(name);
        (
            row["verdict"].as_str().unwrap_or_default().to_owned(),
            row["detail"].to_string(),
        )
    };
    for judged in [
        "one transaction per zxid",
        "linearizable writes",
        "single system image",
        "FIFO client order",
        "sequential suffixes unique",
    ] {
        let (verdict, detail) = verdict(judged);
        assert_eq!(verdict, "holds", "{judged}: {detail}");
    }
    assert_eq!(verdict("durability").0, "not judged");
    // Killing the leader drops every client's connection; each session goes on.
    let profile = &report["profile"];
    assert!(
        profile["sessions"]["Disconnected"].as_u64() >= Some(1),
        "{profile}"
    );
    let resumed = profile["writes_resumed_ms"].as_array().expect("faults");
    assert_eq!(resumed.len(), 2, "the kill and the restart: {profile}");
    assert!(
        resumed[0][1].as_u64().is_some(),
        "writes resumed after the kill: {profile}"
    );
    assert!(
        stdout.contains("ZooKeeper guarantees on a real ensemble"),
        "{stdout}"
    );
    common::assert_servers_stopped(&stderr, "guarantees-real");

    // The real history, one session's later read of a key given an earlier read's stat (an
    // older view), breaks the single system image.
    let mut history: History =
        serde_json::from_value(report["history"].clone()).expect("the history parses");
    assert!(guarantees::judge(&history, &CommitLogs::new())
        .iter()
        .all(|f| f.holds || f.class != zkh_model::properties::Class::Always));
    tamper_with_a_later_read(&mut history);
    let finding = guarantees::judge(&history, &CommitLogs::new())
        .into_iter()
        .find(|f| f.property == SINGLE_SYSTEM_IMAGE)
        .expect("judged");
    assert!(!finding.holds, "{finding:?}");
    assert!(finding.detail.contains("older data"), "{}", finding.detail);
}

/// Finds a session's two successive answered `getData`s of one key whose data changed between
/// them, and swaps their stats: the later read then shows older data than the earlier one.
fn tamper_with_a_later_read(history: &mut History) {
    let entries = history.entries().to_vec();
    // (client, xid) -> (session, path) of each getData.
    let mut reads = std::collections::BTreeMap::new();
    // (session, path) -> the last read of it: its place in the history and its stat.
    let mut last = std::collections::BTreeMap::new();
    let mut swap = None;
    for (index, entry) in entries.iter().enumerate() {
        match &entry.event {
            HistoryEvent::Invoke {
                client,
                session,
                xid,
                request: Request::GetData { path, .. },
            } => {
                reads.insert((*client, *xid), (*session, path.clone()));
            }
            HistoryEvent::Complete {
                client,
                xid,
                outcome:
                    OpOutcome::Reply {
                        reply: Reply::Ok(Response::Data(_, stat)),
                        ..
                    },
            } => {
                let Some(key) = reads.remove(&(*client, *xid)) else {
                    continue;
                };
                if let Some((earlier, earlier_stat)) = last.insert(key, (index, *stat)) {
                    if earlier_stat.mzxid < stat.mzxid {
                        swap = Some([(earlier, *stat), (index, earlier_stat)]);
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    let swap = swap.expect("a session read one key twice with a write between");
    let mut rebuilt = History::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let mut event = entry.event;
        if let Some((_, stat)) = swap.iter().find(|(at, _)| *at == index) {
            if let HistoryEvent::Complete {
                outcome:
                    OpOutcome::Reply {
                        reply: Reply::Ok(Response::Data(_, recorded)),
                        ..
                    },
                ..
            } = &mut event
            {
                *recorded = *stat;
            }
        }
        rebuilt.push(entry.at_us, event);
    }
    *history = rebuilt;
}
