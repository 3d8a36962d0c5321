//! A connection attempt to a server whose process is down is refused at once, as a live host
//! answers a connect to a port nothing listens on with a reset; an attempt into a partition hears
//! nothing (the client's own timeout ends it). Measured on a real ensemble: a client whose server
//! was killed moves on at once (docs/real-ensemble.md).
#![cfg(madsim)]

use std::time::Duration;

use zkh_sim::clock::now;
use zkh_sim::net::Net;
use zkh_sim::protocol::{Addr, Message};
use zkh_sim::run::run_seed;
use zkh_sim::seed::{sub_rng, Subsystem};

fn connect() -> Message {
    Message::Connect {
        session: None,
        last_zxid: 0,
        timeout_ms: 4000,
    }
}

/// What client 0 hears within 2 s of connecting to server 1 (on connection 7), and when, with
/// the server down (`up = false`) or up behind a cut link.
async fn attempt(seed: u64, up: bool) -> Option<(Duration, Addr, u64, Message)> {
    let net = Net::new(sub_rng(seed, Subsystem::Network), 200..2000);
    let (client, server) = (Addr::Client(0), Addr::Server(1));
    let mut inbox = net.attach(client);
    let _server_inbox = up.then(|| net.attach(server));
    if up {
        net.cut(client, server);
        net.cut(server, client);
    }
    let sent_at = now();
    net.send_on(client, server, 7, connect());
    let heard = madsim::time::timeout(Duration::from_secs(2), inbox.recv()).await;
    let envelope = heard.ok().flatten()?;
    Some((
        now().duration_since(sent_at),
        envelope.from,
        envelope.conn,
        envelope.message,
    ))
}

#[test]
fn a_connect_to_a_server_that_is_down_is_refused_after_one_round_trip() {
    for seed in zkh_sim::seed::seeds(0..5) {
        let heard = run_seed(seed, 60, |seed| attempt(seed, false));
        let Some((after, from, conn, Message::Refused)) = heard else {
            panic!("seed {seed}: expected a refusal, heard {heard:?}");
        };
        assert_eq!((from, conn), (Addr::Server(1), 7), "seed {seed}");
        // Two latencies of 200 µs, the shortest (madsim adds a few ns for the polls).
        assert!(
            (Duration::from_micros(400)..Duration::from_micros(401)).contains(&after),
            "seed {seed}: refused after {after:?}"
        );
    }
}

#[test]
fn a_connect_into_a_partition_hears_nothing() {
    for seed in zkh_sim::seed::seeds(0..5) {
        let heard = run_seed(seed, 60, |seed| attempt(seed, true));
        assert!(heard.is_none(), "seed {seed}: heard {heard:?}");
    }
}
