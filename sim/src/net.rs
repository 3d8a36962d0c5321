//! The simulated network: FIFO links with seeded latency, partitions, and connection resets.
//!
//! Every node has a mailbox. [`Net::send`] picks a latency from the network's own seeded PRNG
//! and delivers the message after it, but never before an earlier message on the same link:
//! links are FIFO, like the TCP connections ZooKeeper uses.
//!
//! A partition behaves as it does under TCP: a message sent into a cut link is *held* (TCP keeps
//! retransmitting it), and delivered in order when the link is restored, unless one end gave up
//! on the connection first ([`Net::reset`]: a client that moves to another server, a process
//! that dies); then it is lost. The sender learns nothing either way. A message to a process that
//! is down, or that restarted since the message was sent, is lost.
//!
//! Delivery runs as a task on the *sender's* madsim node, so a crashed sender loses what it had
//! not yet put on the wire, and a paused one delivers late.
//!
//! Not modelled: packet loss inside a connection (TCP retransmits), bandwidth, reordering
//! across links beyond what latency causes.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{now, Instant};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::protocol::{Addr, Message};

/// A message with its sender.
#[derive(Debug)]
pub struct Envelope {
    /// The sender.
    pub from: Addr,
    /// The client connection it travels on (0 between servers): like a TCP connection, a
    /// message belongs to one, and the client drops what comes on a connection it has left.
    pub conn: u64,
    /// The message.
    pub message: Message,
}

struct NetState {
    mailboxes: BTreeMap<Addr, UnboundedSender<Envelope>>,
    /// When the last message on each link arrives: the next may not arrive before.
    link_busy_until: BTreeMap<(Addr, Addr), Instant>,
    /// Directed links that carry nothing for now.
    cut: BTreeSet<(Addr, Addr)>,
    /// Messages sent into a cut link, oldest first, waiting for it to be restored.
    held: BTreeMap<(Addr, Addr), Vec<(u64, Message)>>,
    rng: ChaCha8Rng,
    latency_us: Range<u64>,
    started: Instant,
}

/// The network shared by every node of one run.
pub struct Net {
    state: Mutex<NetState>,
}

impl Net {
    /// A network whose latencies come from `rng`, uniformly in `latency_us`.
    pub fn new(rng: ChaCha8Rng, latency_us: Range<u64>) -> Arc<Net> {
        assert!(
            latency_us.start < latency_us.end,
            "latency range {latency_us:?} is empty"
        );
        Arc::new(Net {
            state: Mutex::new(NetState {
                mailboxes: BTreeMap::new(),
                link_busy_until: BTreeMap::new(),
                cut: BTreeSet::new(),
                held: BTreeMap::new(),
                rng,
                latency_us,
                started: now(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, NetState> {
        self.state
            .lock()
            .expect("network mutex poisoned by a panicking node")
    }

    /// Simulated microseconds since the network was made (the run's clock for the history).
    pub fn now_us(&self) -> u64 {
        let started = self.lock().started;
        u64::try_from(now().duration_since(started).as_micros())
            .expect("a run lasts less than 500k years")
    }

    /// Gives `addr` a fresh mailbox (a process starting or restarting) and returns its inbox.
    /// Messages sent to the previous incarnation are lost.
    pub fn attach(&self, addr: Addr) -> UnboundedReceiver<Envelope> {
        let (tx, rx) = unbounded_channel();
        let mut state = self.lock();
        state.mailboxes.insert(addr, tx);
        state
            .link_busy_until
            .retain(|(from, to), _| *from != addr && *to != addr);
        state
            .held
            .retain(|(from, to), _| *from != addr && *to != addr);
        rx
    }

    /// Removes `addr`'s mailbox (a process dying); what was held for or from it is lost.
    pub fn detach(&self, addr: Addr) {
        let mut state = self.lock();
        state.mailboxes.remove(&addr);
        state
            .held
            .retain(|(from, to), _| *from != addr && *to != addr);
    }

    /// `addr` gave up on its connections (a client moving to another server): what a partition
    /// held on its links is lost, as TCP data is when a socket is closed.
    pub fn reset(&self, addr: Addr) {
        self.lock()
            .held
            .retain(|(from, to), _| *from != addr && *to != addr);
    }

    /// Sends `message` from `from` to `to`, between servers.
    pub fn send(&self, from: Addr, to: Addr, message: Message) {
        self.send_on(from, to, 0, message);
    }

    /// Sends `message` from `from` to `to` on client connection `conn`.
    pub fn send_on(&self, from: Addr, to: Addr, conn: u64, message: Message) {
        let (mailbox, at) = {
            let mut state = self.lock();
            if state.cut.contains(&(from, to)) {
                state
                    .held
                    .entry((from, to))
                    .or_default()
                    .push((conn, message));
                return;
            }
            let Some(mailbox) = state.mailboxes.get(&to).cloned() else {
                return;
            };
            let range = state.latency_us.clone();
            let latency = Duration::from_micros(state.rng.random_range(range));
            let mut at = now() + latency;
            if let Some(busy) = state.link_busy_until.get(&(from, to)) {
                at = at.max(*busy + Duration::from_micros(1));
            }
            state.link_busy_until.insert((from, to), at);
            (mailbox, at)
        };
        madsim::task::spawn(async move {
            madsim::time::sleep_until(at).await;
            // A closed mailbox is a process that died meanwhile: the message is lost.
            let _ = mailbox.send(Envelope {
                from,
                conn,
                message,
            });
        });
    }

    /// Cuts the directed link `from → to`.
    pub fn cut(&self, from: Addr, to: Addr) {
        self.lock().cut.insert((from, to));
    }

    /// Restores the directed link `from → to`, and delivers what it held, in order.
    pub fn restore(&self, from: Addr, to: Addr) {
        let held = {
            let mut state = self.lock();
            state.cut.remove(&(from, to));
            state.held.remove(&(from, to)).unwrap_or_default()
        };
        for (conn, message) in held {
            self.send_on(from, to, conn, message);
        }
    }

    /// Restores every link.
    pub fn heal_all(&self) {
        let cut: Vec<(Addr, Addr)> = self.lock().cut.iter().copied().collect();
        for (from, to) in cut {
            self.restore(from, to);
        }
    }

    /// Tells every node that had a connection to `dead` that it broke, after `delay`: what a TCP
    /// reset or FIN tells the peers of a crashed process. Only peers reachable from `dead` hear
    /// it (a cut link carries no reset).
    pub fn announce_death(&self, dead: Addr, peers: &[Addr], delay: Duration) {
        let targets: Vec<(Addr, UnboundedSender<Envelope>)> = {
            let state = self.lock();
            peers
                .iter()
                .filter(|peer| **peer != dead && !state.cut.contains(&(dead, **peer)))
                .filter_map(|peer| state.mailboxes.get(peer).map(|m| (*peer, m.clone())))
                .collect()
        };
        madsim::task::spawn(async move {
            madsim::time::sleep(delay).await;
            for (_, mailbox) in targets {
                let _ = mailbox.send(Envelope {
                    from: dead,
                    conn: 0,
                    message: Message::PeerDown,
                });
            }
        });
    }
}
