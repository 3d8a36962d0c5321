//! The single system image read from stats ([`super::views`]), and replies recorded without
//! their zxid, on hand-written histories.

use zkh_recipes::types::{Created, Stat};
use zkh_recipes::{CreateMode, Request, Response};

use super::tests::{get, set, Build};
use super::*;
use crate::history::{HistoryEvent, OpOutcome};
use crate::request::Reply;

fn at(czxid: i64, mzxid: i64, pzxid: i64) -> Stat {
    Stat {
        czxid,
        mzxid,
        pzxid,
        ..Stat::default()
    }
}

impl Build {
    /// A reply recorded as a real client records it: no zxid from the header.
    fn answer_without_zxid(&mut self, client: u32, xid: u64, response: Response) {
        self.push(HistoryEvent::Complete {
            client,
            xid,
            outcome: OpOutcome::Reply {
                reply: Reply::Ok(response),
                zxid: OpOutcome::UNKNOWN_ZXID,
            },
        });
    }
}

#[test]
fn newer_views_of_a_node_keep_the_single_system_image() {
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    b.answer_without_zxid(0, w, Response::SetData(at(3, 7, 3)));
    let r = b.invoke(0, 10, get("/a"));
    b.answer_without_zxid(0, r, Response::Data(Vec::new(), at(3, 9, 3)));
    // Another session may see an older view (reads are not linearizable).
    let s = b.invoke(1, 11, get("/a"));
    b.answer_without_zxid(1, s, Response::Data(Vec::new(), at(3, 5, 3)));
    // The node deleted and created again by someone else: a newer incarnation.
    let t = b.invoke(0, 10, get("/a"));
    b.answer_without_zxid(0, t, Response::Data(Vec::new(), at(12, 12, 12)));
    // Two reads in flight together are not ordered by the image.
    let u = b.invoke(1, 11, get("/a"));
    let v = b.invoke(1, 11, get("/a"));
    b.answer_without_zxid(1, v, Response::Data(Vec::new(), at(12, 12, 12)));
    b.answer_without_zxid(1, u, Response::Data(Vec::new(), at(3, 9, 3)));
    let finding = b.judged(SINGLE_SYSTEM_IMAGE);
    assert!(finding.holds, "{finding:?}");
    assert!(finding.detail.starts_with("2 sessions"), "{finding:?}");
}

#[test]
fn an_older_view_of_a_node_read_from_stats_breaks_the_single_system_image() {
    let cases = [
        (at(3, 7, 3), at(3, 5, 3), "older data (a lower mzxid)"),
        (at(3, 3, 8), at(3, 3, 4), "older children (a lower pzxid)"),
        (at(9, 9, 9), at(3, 12, 12), "an older incarnation"),
    ];
    for (seen, later, how) in cases {
        let mut b = Build::default();
        let r = b.invoke(0, 10, get("/a"));
        b.answer_without_zxid(0, r, Response::Data(Vec::new(), seen));
        let s = b.invoke(0, 10, get("/a"));
        b.answer_without_zxid(0, s, Response::Data(Vec::new(), later));
        let finding = b.judged(SINGLE_SYSTEM_IMAGE);
        assert!(!finding.holds, "an older view is caught");
        assert!(finding.detail.contains(how), "{}", finding.detail);
        assert!(finding.detail.contains("session 0xa"), "{}", finding.detail);
        assert_eq!(finding.evidence.len(), 3);
    }
}

#[test]
fn the_stats_of_a_create_count_as_a_view_and_data_loss_starts_again() {
    let mut b = Build::default();
    let c = b.invoke(
        0,
        10,
        Request::Create {
            path: "/a".into(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        },
    );
    let created = Created {
        path: "/a".into(),
        stat: at(20, 20, 20),
    };
    b.answer_without_zxid(0, c, Response::Created(created));
    b.push(HistoryEvent::Fault {
        description: "DataLoss".into(),
    });
    // After the data was lost, zxids start again: not an older view.
    let r = b.invoke(0, 10, get("/a"));
    b.answer_without_zxid(0, r, Response::Data(Vec::new(), at(2, 2, 2)));
    assert!(b.judged(SINGLE_SYSTEM_IMAGE).holds);
    // Without the data loss between them, it is one.
    let mut b = Build::default();
    let c = b.invoke(0, 10, set("/a"));
    b.answer_without_zxid(0, c, Response::SetData(at(20, 21, 20)));
    let r = b.invoke(0, 10, get("/a"));
    b.answer_without_zxid(0, r, Response::Data(Vec::new(), at(2, 2, 2)));
    assert!(!b.judged(SINGLE_SYSTEM_IMAGE).holds);
}

#[test]
fn a_reply_without_its_zxid_is_left_out_of_every_zxid_comparison() {
    let mut b = Build::default();
    // With zxid -1 taken at face value, this write would look ordered before the first.
    let w = b.invoke(0, 10, set("/a"));
    b.answer(0, w, Response::SetData(at(1, 5, 1)), 5);
    let x = b.invoke(1, 11, set("/b"));
    b.answer_without_zxid(1, x, Response::SetData(at(2, 6, 2)));
    let y = b.invoke(0, 10, get("/b"));
    b.answer_without_zxid(0, y, Response::Data(Vec::new(), at(2, 6, 2)));
    for finding in judge(&b.history, &CommitLogs::new()) {
        if finding.class == crate::properties::Class::Always {
            assert!(finding.holds, "{finding:?}");
        }
    }
    let ops = operations(&b.history);
    assert!(ops[1].answered.is_none() && ops[1].answered_without_zxid.is_some());
    assert!(ops[1].reply().is_some());
}
