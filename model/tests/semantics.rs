//! The pure model against ZooKeeper's documented and measured behaviour, one test a fact (its
//! name states it), plus the in-memory client. The differential test checks the same ground
//! against a real server at random; these pin each fact by name, in both builds.

use crate::common;

use common::now;
use zkh_model::{InjectedFault, MemoryEnsemble, Notification, Reply, Request, Response, ZkModel};
use zkh_recipes::{
    ClientEvent, CreateMode, EventType, MultiError, Op, OpResult, SessionEvent, SessionId,
    WatchedEvent, ZkClient, ZkError,
};

fn create(
    model: &mut ZkModel,
    session: SessionId,
    path: &str,
    mode: CreateMode,
) -> Result<String, ZkError> {
    match model
        .apply(
            session,
            &Request::Create {
                path: path.into(),
                data: vec![],
                mode,
            },
        )
        .reply
    {
        Reply::Ok(Response::Created(created)) => Ok(created.path),
        Reply::Error(error) => Err(error),
        other => panic!("unexpected reply {other:?}"),
    }
}

fn delete(
    model: &mut ZkModel,
    session: SessionId,
    path: &str,
    version: i32,
) -> Result<(), ZkError> {
    match model
        .apply(
            session,
            &Request::Delete {
                path: path.into(),
                version,
            },
        )
        .reply
    {
        Reply::Ok(Response::Deleted) => Ok(()),
        Reply::Error(error) => Err(error),
        other => panic!("unexpected reply {other:?}"),
    }
}

fn stat(model: &ZkModel, path: &str) -> zkh_recipes::Stat {
    model.tree().get(path).expect("node exists").stat()
}

fn events(notifications: &[Notification]) -> Vec<(SessionId, EventType, &str)> {
    notifications
        .iter()
        .map(|n| (n.session, n.event.event_type, n.event.path.as_str()))
        .collect()
}

#[test]
fn sequence_numbers_count_creations_not_cversion() {
    let mut model = ZkModel::new();
    let s = model.open_session();
    create(&mut model, s, "/p", CreateMode::Persistent).unwrap();
    for expected in 0..3 {
        let path = create(&mut model, s, "/p/s-", CreateMode::PersistentSequential).unwrap();
        assert_eq!(path, format!("/p/s-{expected:010}"));
        delete(&mut model, s, &path, -1).unwrap();
        assert_eq!(stat(&model, "/p").cversion, 2 * (expected + 1));
    }
    create(&mut model, s, "/p/plain", CreateMode::Persistent).unwrap();
    delete(&mut model, s, "/p/plain", -1).unwrap();
    assert_eq!(
        create(&mut model, s, "/p/s-", CreateMode::PersistentSequential).unwrap(),
        "/p/s-0000000004"
    );
    assert_eq!(stat(&model, "/p").cversion, 9, "5 creates and 4 deletes");
    // A failed create does not advance the counter.
    assert_eq!(
        create(&mut model, s, "/p/s-0000000004", CreateMode::Persistent),
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        create(&mut model, s, "/p/", CreateMode::PersistentSequential).unwrap(),
        "/p/0000000005"
    );
    // A parent created again starts from 0.
    for child in ["s-0000000004", "0000000005"] {
        delete(&mut model, s, &format!("/p/{child}"), -1).unwrap();
    }
    delete(&mut model, s, "/p", -1).unwrap();
    create(&mut model, s, "/p", CreateMode::Persistent).unwrap();
    assert_eq!(
        create(&mut model, s, "/p/s-", CreateMode::PersistentSequential).unwrap(),
        "/p/s-0000000000"
    );
}

#[test]
fn stat_bookkeeping_and_zxids() {
    let mut model = ZkModel::new();
    let s = model.open_session();
    assert_eq!(model.last_zxid(), 1, "opening a session is a transaction");
    create(&mut model, s, "/n", CreateMode::Persistent).unwrap();
    let first = stat(&model, "/n");
    assert_eq!(
        (first.czxid, first.mzxid, first.pzxid, first.version),
        (2, 2, 2, 0)
    );
    assert_eq!(
        create(&mut model, s, "/n", CreateMode::Persistent),
        Err(ZkError::NodeExists)
    );
    assert_eq!(
        model.last_zxid(),
        3,
        "a failed write takes a zxid (an error transaction)"
    );
    let applied = model.apply(
        s,
        &Request::SetData {
            path: "/n".into(),
            data: b"v".to_vec(),
            version: 0,
        },
    );
    assert_eq!(applied.zxid, Some(4));
    let after = stat(&model, "/n");
    assert_eq!((after.version, after.mzxid, after.data_length), (1, 4, 1));
    let read = model.apply(
        s,
        &Request::GetData {
            path: "/n".into(),
            watch: false,
        },
    );
    assert_eq!(read.zxid, None, "reads take no zxid");
    // version restarts with a new creation, czxid does not: czxid is the fencing token.
    delete(&mut model, s, "/n", 1).unwrap();
    create(&mut model, s, "/n", CreateMode::Persistent).unwrap();
    assert_eq!(stat(&model, "/n").version, 0);
    assert!(stat(&model, "/n").czxid > first.czxid);
}

#[test]
fn a_fresh_tree_is_a_fresh_server() {
    let mut model = ZkModel::new();
    let s = model.open_session();
    let root = stat(&model, "/");
    assert_eq!(
        (root.cversion, root.num_children),
        (-1, 1),
        "measured on a fresh 3.8 server"
    );
    assert_eq!(
        delete(&mut model, s, "/zookeeper", -1),
        Err(ZkError::BadArguments)
    );
    assert_eq!(delete(&mut model, s, "/", -1), Err(ZkError::BadArguments));
    assert_eq!(
        create(&mut model, s, "/", CreateMode::Persistent),
        Err(ZkError::BadArguments)
    );
}

#[test]
fn ephemerals_containers_and_versions() {
    let mut model = ZkModel::new();
    let s = model.open_session();
    create(&mut model, s, "/e", CreateMode::Ephemeral).unwrap();
    assert_eq!(stat(&model, "/e").ephemeral_owner, s.0);
    assert_eq!(
        create(&mut model, s, "/e/c", CreateMode::Persistent),
        Err(ZkError::NoChildrenForEphemerals)
    );
    create(&mut model, s, "/c", CreateMode::Container).unwrap();
    assert_eq!(
        stat(&model, "/c").ephemeral_owner,
        0,
        "a container reads as persistent"
    );
    create(&mut model, s, "/c/x", CreateMode::Persistent).unwrap();
    assert_eq!(delete(&mut model, s, "/c", -1), Err(ZkError::NotEmpty));
    assert_eq!(delete(&mut model, s, "/c/x", 5), Err(ZkError::BadVersion));
    assert_eq!(
        delete(&mut model, s, "/c/x", -2),
        Err(ZkError::BadVersion),
        "only -1 matches any version"
    );
    assert_eq!(
        create(&mut model, s, "/missing/x", CreateMode::Persistent),
        Err(ZkError::NoNode)
    );
    create(&mut model, s, "/never-used", CreateMode::Container).unwrap();
    assert!(
        model.reap_containers().is_empty(),
        "a container that still has a child stays"
    );
    delete(&mut model, s, "/c/x", -1).unwrap();
    model.reap_containers();
    assert!(
        model.tree().get("/c").is_none(),
        "an emptied container is reaped"
    );
    assert!(
        model.tree().get("/never-used").is_some(),
        "a container that never had children stays"
    );
    // One `deleteContainer` transaction: only an empty container goes, and only then is a zxid
    // taken.
    create(&mut model, s, "/d", CreateMode::Container).unwrap();
    create(&mut model, s, "/d/x", CreateMode::Persistent).unwrap();
    create(&mut model, s, "/p", CreateMode::Persistent).unwrap();
    let before = model.last_zxid();
    for kept in ["/d", "/p", "/gone"] {
        assert!(model.delete_container(kept).is_none(), "{kept} stays");
    }
    assert_eq!(model.last_zxid(), before, "no transaction for what stays");
    delete(&mut model, s, "/d/x", -1).unwrap();
    assert!(model.delete_container("/d").is_some());
    assert!(model.tree().get("/d").is_none());
    assert_eq!(
        model.last_zxid(),
        before + 2,
        "the child's delete, then the container's"
    );
}

#[test]
fn multi_is_atomic_and_numbers_consecutively() {
    let mut model = ZkModel::new();
    let s = model.open_session();
    let ops = vec![
        Op::Create {
            path: "/m1".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
        Op::Delete {
            path: "/nope".into(),
            version: -1,
        },
        Op::Create {
            path: "/m2".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
    ];
    let applied = model.apply(s, &Request::Multi(ops.clone()));
    assert_eq!(
        applied.reply,
        Reply::MultiFailed {
            index: 1,
            error: ZkError::NoNode
        }
    );
    assert!(
        applied.zxid.is_some(),
        "a failed multi is an error transaction"
    );
    assert!(
        model.tree().get("/m1").is_none(),
        "nothing of a failed multi is applied"
    );
    assert_eq!(
        MultiError::Operation {
            index: 1,
            error: ZkError::NoNode
        }
        .per_op_codes(3),
        vec![0, -101, -2]
    );
    create(&mut model, s, "/q", CreateMode::Persistent).unwrap();
    let seq = Op::Create {
        path: "/q/m-".into(),
        data: vec![],
        mode: CreateMode::PersistentSequential,
    };
    let applied = model.apply(s, &Request::Multi(vec![seq.clone(), seq]));
    let Reply::Ok(Response::Multi(results)) = applied.reply else {
        panic!("multi failed: {:?}", applied.reply)
    };
    let paths: Vec<_> = results
        .iter()
        .map(|r| {
            if let OpResult::Create { path, .. } = r {
                path.as_str()
            } else {
                ""
            }
        })
        .collect();
    assert_eq!(paths, ["/q/m-0000000000", "/q/m-0000000001"]);
    assert_eq!(
        stat(&model, "/q/m-0000000000").czxid,
        stat(&model, "/q/m-0000000001").czxid,
        "one transaction"
    );
}

#[test]
fn watches_fire_once_by_zookeepers_rules() {
    let mut model = ZkModel::new();
    let (a, b) = (model.open_session(), model.open_session());
    model.apply(
        a,
        &Request::Exists {
            path: "/w".into(),
            watch: true,
        },
    );
    let created = model.apply(
        b,
        &Request::Create {
            path: "/w".into(),
            data: vec![],
            mode: CreateMode::Persistent,
        },
    );
    assert_eq!(
        events(&created.notifications),
        [(a, EventType::NodeCreated, "/w")]
    );
    assert_eq!(
        created.notifications[0].event.zxid,
        created.zxid.unwrap(),
        "the model keeps the zxid"
    );
    // A data watch and a child watch on one node: one NodeDeleted. The parent's child watch too.
    model.apply(
        a,
        &Request::GetData {
            path: "/w".into(),
            watch: true,
        },
    );
    model.apply(
        a,
        &Request::GetChildren {
            path: "/w".into(),
            watch: true,
        },
    );
    model.apply(
        b,
        &Request::GetChildren {
            path: "/".into(),
            watch: true,
        },
    );
    let deleted = model.apply(
        b,
        &Request::Delete {
            path: "/w".into(),
            version: -1,
        },
    );
    assert_eq!(
        events(&deleted.notifications),
        [
            (a, EventType::NodeDeleted, "/w"),
            (b, EventType::NodeChildrenChanged, "/")
        ]
    );
    // One-shot: the same change again fires nothing.
    create(&mut model, b, "/w", CreateMode::Persistent).unwrap();
    let again = model.apply(
        b,
        &Request::Delete {
            path: "/w".into(),
            version: -1,
        },
    );
    assert!(again.notifications.is_empty());
    // getData on a missing node sets no watch.
    model.apply(
        a,
        &Request::GetData {
            path: "/w".into(),
            watch: true,
        },
    );
    assert!(model.watches().is_empty());
    create(&mut model, b, "/w", CreateMode::Persistent).unwrap();
    model.apply(
        a,
        &Request::GetData {
            path: "/w".into(),
            watch: true,
        },
    );
    let set = model.apply(
        b,
        &Request::SetData {
            path: "/w".into(),
            data: vec![1],
            version: -1,
        },
    );
    assert_eq!(
        events(&set.notifications),
        [(a, EventType::NodeDataChanged, "/w")]
    );
}

#[test]
fn closing_a_session_deletes_its_ephemerals_in_one_transaction() {
    let mut model = ZkModel::new();
    let (a, b) = (model.open_session(), model.open_session());
    create(&mut model, a, "/e1", CreateMode::Ephemeral).unwrap();
    let sequential = create(&mut model, a, "/e2-", CreateMode::EphemeralSequential).unwrap();
    model.apply(
        b,
        &Request::Exists {
            path: "/e1".into(),
            watch: true,
        },
    );
    model.apply(
        a,
        &Request::GetChildren {
            path: "/".into(),
            watch: true,
        },
    );
    let notifications = model.close_session(a).expect("a was live");
    assert_eq!(
        events(&notifications),
        [(b, EventType::NodeDeleted, "/e1")],
        "a's own watches are gone"
    );
    assert!(model.tree().get("/e1").is_none() && model.tree().get(&sequential).is_none());
    assert_eq!(
        stat(&model, "/").pzxid,
        model.last_zxid(),
        "both deletes at the close's zxid"
    );
    assert_eq!(model.close_session(a), None);
    let late = model.apply(
        a,
        &Request::Exists {
            path: "/".into(),
            watch: false,
        },
    );
    assert_eq!(late.reply, Reply::Error(ZkError::SessionExpired));
}

#[test]
fn bad_input_gets_zookeepers_own_errors() {
    let mut model = ZkModel::new();
    let s = model.open_session();
    let before = model.last_zxid();
    for path in [
        "", "a", "/a/", "//a", "/a/./b", "/a/..", "/a\u{0}", "/\u{7f}",
    ] {
        assert_eq!(
            create(&mut model, s, path, CreateMode::Persistent),
            Err(ZkError::BadArguments),
            "{path:?}"
        );
        let read = model.apply(
            s,
            &Request::GetData {
                path: path.into(),
                watch: true,
            },
        );
        assert_eq!(read.reply, Reply::Error(ZkError::BadArguments), "{path:?}");
    }
    let ops = vec![Op::Check {
        path: "bad".into(),
        version: -1,
    }];
    assert_eq!(
        model.apply(s, &Request::Multi(ops)).reply,
        Reply::Error(ZkError::BadArguments)
    );
    assert_eq!(
        model.last_zxid(),
        before,
        "rejected before sending: no transaction"
    );
    assert_eq!(CreateMode::from_flag(9), Err(ZkError::BadArguments));
}

#[test]
fn memory_client_delivers_events_before_replies_and_injects_faults() {
    let ensemble = MemoryEnsemble::new();
    let (a, b) = (ensemble.connect(), ensemble.connect());
    assert_eq!(
        a.try_next_event(),
        Some(ClientEvent::Session(SessionEvent::Connected {
            session_id: a.session_id()
        }))
    );
    assert_eq!(now(a.exists("/n", true)), Ok(None));
    now(b.create("/n", b"", CreateMode::Persistent)).unwrap();
    let event = WatchedEvent {
        event_type: EventType::NodeCreated,
        path: "/n".into(),
        zxid: WatchedEvent::NO_ZXID,
    };
    assert_eq!(
        a.try_next_event(),
        Some(ClientEvent::Watch(event)),
        "queued before b's reply returned"
    );

    b.inject(InjectedFault::DropReply);
    assert_eq!(
        now(b.create("/r", b"", CreateMode::Ephemeral)),
        Err(ZkError::ConnectionLoss)
    );
    assert!(
        now(b.exists("/r", false)).unwrap().is_some(),
        "a lost reply: the create was applied"
    );
    b.inject(InjectedFault::DropRequest);
    assert_eq!(
        now(b.create("/q", b"", CreateMode::Persistent)),
        Err(ZkError::ConnectionLoss)
    );
    assert_eq!(
        now(b.exists("/q", false)),
        Ok(None),
        "a lost request: nothing applied"
    );

    ensemble.expire(b.session_id());
    assert_eq!(
        now(a.exists("/r", false)),
        Ok(None),
        "expiry deleted b's ephemeral"
    );
    assert_eq!(now(b.exists("/", false)), Err(ZkError::SessionExpired));
    let b_events: Vec<_> = std::iter::from_fn(|| b.try_next_event()).collect();
    assert!(
        b_events.ends_with(&[ClientEvent::Session(SessionEvent::Expired)]),
        "{b_events:?}"
    );
    a.close();
    assert_eq!(now(a.exists("/", false)), Err(ZkError::ClientClosed));
    let ops = [Op::Check {
        path: "/".into(),
        version: -1,
    }];
    assert_eq!(
        now(a.multi(&ops)),
        Err(MultiError::Request(ZkError::ClientClosed))
    );
}

#[cfg(not(madsim))]
#[test]
fn memory_client_next_event_waits_for_another_client() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let ensemble = MemoryEnsemble::new();
        let (a, b) = (ensemble.connect(), ensemble.connect());
        a.next_event().await.expect("Connected");
        a.exists("/later", true).await.unwrap();
        let waiter = async { a.next_event().await };
        let writer = async {
            tokio::task::yield_now().await;
            b.create("/later", b"", CreateMode::Persistent)
                .await
                .unwrap();
        };
        let (event, ()) = tokio::join!(waiter, writer);
        assert!(matches!(event, Some(ClientEvent::Watch(w)) if w.path == "/later"));
        a.close();
        assert_eq!(
            a.next_event().await,
            Some(ClientEvent::Session(SessionEvent::Closed))
        );
        assert_eq!(a.next_event().await, None, "a closed client's stream ends");
    });
}

#[test]
fn reconnection_re_registers_watches_and_fires_changed_ones() {
    let mut model = ZkModel::new();
    let (a, b) = (model.open_session(), model.open_session());
    for path in ["/same", "/changed", "/deleted", "/kids"] {
        create(&mut model, b, path, CreateMode::Persistent).unwrap();
    }
    let seen = model.last_zxid();
    model.apply(
        b,
        &Request::SetData {
            path: "/changed".into(),
            data: vec![1],
            version: -1,
        },
    );
    delete(&mut model, b, "/deleted", -1).unwrap();
    create(&mut model, b, "/kids/k", CreateMode::Persistent).unwrap();
    create(&mut model, b, "/born", CreateMode::Persistent).unwrap();
    let set = zkh_model::WatchSet {
        data: ["/same", "/changed", "/deleted"].map(String::from).into(),
        exist: ["/born", "/unborn"].map(String::from).into(),
        child: ["/kids"].map(String::from).into(),
    };
    let fired = model.set_watches(a, seen, &set);
    assert_eq!(
        events(&fired),
        [
            (a, EventType::NodeDataChanged, "/changed"),
            (a, EventType::NodeDeleted, "/deleted"),
            (a, EventType::NodeCreated, "/born"),
            (a, EventType::NodeChildrenChanged, "/kids"),
        ]
    );
    assert_eq!(
        model.watches().len(),
        2,
        "/same (data) and /unborn (exist) stay registered"
    );
}

#[test]
fn a_copy_of_the_server_is_untouched_by_the_originals_writes() {
    // The model checker copies the server for every step and the copies share their parts
    // until one changes them: a change must reach only the copy it was made in.
    let mut model = ZkModel::new();
    let (a, b) = (model.open_session(), model.open_session());
    create(&mut model, a, "/q", CreateMode::Persistent).expect("created");
    model.apply(
        a,
        &Request::GetChildren {
            path: "/q".into(),
            watch: true,
        },
    );
    let before = model.clone();
    let created = create(&mut model, b, "/q/n-", CreateMode::EphemeralSequential).expect("made");
    assert_eq!(created, "/q/n-0000000000");
    assert!(
        before.tree().get(&created).is_none(),
        "the copy has no new node"
    );
    assert_eq!(before.watches().len(), 1, "the copy keeps the fired watch");
    assert_eq!(model.watches().len(), 0, "the original's watch fired");
    assert!(before.sessions()[&b].ephemerals.is_empty());
    assert_eq!(model.sessions()[&b].ephemerals.len(), 1);
    // A watch set again on an unchanged table, and a session's close, change only the copy
    // they were made in too.
    let mut after = before.clone();
    after.close_session(a);
    assert_eq!(after.watches().len(), 0);
    assert_eq!(before.watches().len(), 1);
    assert!(before.sessions().contains_key(&a));
    assert_ne!(after, before);
    assert_eq!(before.clone(), before, "equal copies are equal");
}
