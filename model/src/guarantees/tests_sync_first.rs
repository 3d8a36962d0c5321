//! "A read after sync is up to date" and "a watch fires for the first change" on small
//! hand-written histories, valid and invalid.

use zkh_recipes::{CreateMode, EventType, Request, Response, WatchedEvent};

use super::tests::{get, set, stat, Build};
use super::*;
use crate::history::HistoryEvent;
use crate::zookeeper::ZkModel;

fn sync(path: &str) -> Request {
    Request::Sync {
        path: path.to_owned(),
    }
}

/// Client 0 writes (acknowledged at 7); client 1 then syncs, answered at `synced_at`, and
/// reads, answered at `read_at`.
fn synced_then_read(synced_at: i64, read_at: i64) -> Finding {
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    b.answer(0, w, Response::SetData(stat()), 7);
    // Before its sync, a stale read is allowed.
    let r = b.invoke(1, 11, get("/a"));
    b.answer(1, r, Response::Data(Vec::new(), stat()), 6);
    let s = b.invoke(1, 11, sync("/a"));
    b.answer(1, s, Response::Synced, synced_at);
    let r = b.invoke(1, 11, get("/a"));
    b.answer(1, r, Response::Data(Vec::new(), stat()), read_at);
    b.judged(SYNC_THEN_READ)
}

#[test]
fn a_read_after_sync_sees_every_write_acknowledged_before_the_sync() {
    let held = synced_then_read(7, 7);
    assert!(held.holds, "{}", held.detail);
    assert!(
        held.detail.starts_with("1 syncs answered and 1 reads"),
        "{}",
        held.detail
    );
    let stale = synced_then_read(7, 6);
    assert!(!stale.holds);
    assert!(
        stale
            .detail
            .contains("then getData /a was answered at zxid 0x6, without it"),
        "{}",
        stale.detail
    );
    assert_eq!(stale.evidence.len(), 3, "the write, the sync, the read");
    let sync_behind = synced_then_read(6, 7);
    assert!(!sync_behind.holds);
    assert!(
        sync_behind.detail.contains("the sync itself"),
        "{}",
        sync_behind.detail
    );
}

#[test]
fn a_sync_issued_before_the_write_was_acknowledged_need_not_see_it() {
    let mut b = Build::default();
    let w = b.invoke(0, 10, set("/a"));
    let s = b.invoke(1, 11, sync("/a"));
    b.answer(0, w, Response::SetData(stat()), 7);
    b.answer(1, s, Response::Synced, 6);
    let r = b.invoke(1, 11, get("/a"));
    b.answer(1, r, Response::Data(Vec::new(), stat()), 6);
    let finding = b.judged(SYNC_THEN_READ);
    assert!(finding.holds, "{}", finding.detail);
}

/// A server for hand-written histories with commit logs: applies each transaction to a model
/// and logs it, so that the replies the history records are the ones the replay gives.
struct Server {
    model: ZkModel,
    logs: CommitLogs,
}

impl Server {
    /// A server at epoch 1 with sessions `S0` and `S1` open.
    fn new() -> Server {
        let mut server = Server {
            model: ZkModel::new(),
            logs: CommitLogs {
                applied: vec![Vec::new()],
                finals: Vec::new(),
                around: Vec::new(),
            },
        };
        server.model.begin_epoch(1);
        for _ in 0..2 {
            let session = server.model.open_session();
            let zxid = server.model.last_zxid();
            server.logs.applied[0].push((zxid, Committed::OpenSession(session)));
        }
        server
    }

    fn session(client: u32) -> zkh_recipes::SessionId {
        zkh_recipes::SessionId((1 << 56) + i64::from(client))
    }

    /// Client `client` writes `request`: its reply and zxid, logged.
    fn write(&mut self, client: u32, request: Request) -> (Response, i64, Vec<WatchedEvent>) {
        let session = Server::session(client);
        let applied = self.model.apply(session, &request);
        let zxid = applied.zxid.expect("a transaction");
        self.logs.applied[0].push((zxid, Committed::Write { session, request }));
        let events = applied.notifications.into_iter().map(|n| n.event).collect();
        match applied.reply {
            crate::request::Reply::Ok(response) => (response, zxid, events),
            other => panic!("{other:?}"),
        }
    }

    /// Client `client` reads `request`: its reply and the zxid it carries.
    fn read(&mut self, client: u32, request: &Request) -> (Response, i64) {
        let applied = self.model.apply(Server::session(client), request);
        match applied.reply {
            crate::request::Reply::Ok(response) => (response, self.model.last_zxid()),
            other => panic!("{other:?}"),
        }
    }
}

/// Client 0 watches `/x`; client 1 changes it twice; client 0 gets the events `delivered` (by
/// the change they are for, 1 or 2), and then reads `/x` again if `read_after`.
fn watched(delivered: &[usize], read_after: bool) -> Finding {
    let (mut server, mut b) = (Server::new(), Build::default());
    let create = Request::Create {
        path: "/x".to_owned(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
    };
    let c = b.invoke(1, Server::session(1).0, create.clone());
    let (response, zxid, _) = server.write(1, create);
    b.answer(1, c, response, zxid);
    let watch = Request::GetData {
        path: "/x".to_owned(),
        watch: true,
    };
    let r = b.invoke(0, Server::session(0).0, watch.clone());
    let (response, zxid) = server.read(0, &watch);
    b.answer(0, r, response, zxid);
    for change in 1..=2 {
        let w = b.invoke(1, Server::session(1).0, set("/x"));
        let (response, zxid, fired) = server.write(1, set("/x"));
        // What the server fired (the first change only), or the event the history is to show.
        let event = fired.into_iter().next().unwrap_or(WatchedEvent {
            event_type: EventType::NodeDataChanged,
            path: "/x".to_owned(),
            zxid,
        });
        if delivered.contains(&change) {
            b.push(HistoryEvent::Watch { client: 0, event });
        }
        b.answer(1, w, response, zxid);
    }
    if read_after {
        let r = b.invoke(0, Server::session(0).0, get("/x"));
        let (response, zxid) = server.read(0, &get("/x"));
        b.answer(0, r, response, zxid);
    }
    judge(&b.history, &server.logs)
        .into_iter()
        .find(|f| f.property == WATCH_FIRES_FOR_THE_FIRST_CHANGE)
        .expect("judged")
}

#[test]
fn a_watch_fires_for_the_first_change_after_the_read_that_set_it() {
    for read_after in [false, true] {
        let held = watched(&[1], read_after);
        assert!(held.holds, "{}", held.detail);
        assert!(
            held.detail.starts_with("1 events with a zxid"),
            "{}",
            held.detail
        );
    }
    // Never told, and never answered past the change on that connection: nothing to judge.
    assert!(watched(&[], false).holds);
}

#[test]
fn an_event_for_a_later_change_or_a_first_change_untold_is_caught() {
    let later = watched(&[2], false);
    assert!(!later.holds);
    assert!(
        later
            .detail
            .contains("its watch was fired by zxid 0x100000004"),
        "{}",
        later.detail
    );
    let untold = watched(&[], true);
    assert!(!untold.holds);
    assert!(
        untold.detail.contains("a first change went by unannounced"),
        "{}",
        untold.detail
    );
    assert_eq!(
        untold.evidence.len(),
        3,
        "the read, its answer, the later answer"
    );
}
