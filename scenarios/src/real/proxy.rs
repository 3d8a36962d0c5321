//! A TCP proxy on 127.0.0.1 between one client and a real ensemble, which a run can cut: the
//! real side of a client cut off from every server (the simulator's partition of a client).
//!
//! One listener per server, each forwarding to its server's client port; the client is given
//! the listeners as its connection string. While cut, every forwarded connection is shut down
//! and every new one is closed as soon as it is accepted, as a host whose network went away
//! (the client sees its connection drop and its reconnections fail; the servers stop hearing
//! from its session and expire it after its timeout). Healed, new connections are forwarded
//! again.
//!
//! Every thread ends by itself: the accept loops when the proxy is dropped (it wakes each with
//! a connection of its own), the pumps when either side of their connection closes.
//!
//! Not modelled: a cut that keeps connections open and silent (packets dropped rather than
//! refused); a one-way cut.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the accept loops and the proxy share.
#[derive(Default)]
struct Shared {
    cut: AtomicBool,
    stop: AtomicBool,
    /// Both ends of every forwarded connection, to shut down on a cut.
    live: Mutex<Vec<TcpStream>>,
}

impl Shared {
    fn live(&self) -> std::sync::MutexGuard<'_, Vec<TcpStream>> {
        self.live
            .lock()
            .expect("proxy mutex poisoned: a panic in a proxy thread")
    }

    fn shut_down_all(&self) {
        for stream in self.live().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// A running proxy; dropping it stops it.
pub struct Proxy {
    ports: Vec<u16>,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listens on a free 127.0.0.1 port for each of `server_ports`, forwarding to it.
    pub fn start(server_ports: &[u16]) -> Result<Proxy, String> {
        let shared = Arc::new(Shared::default());
        let mut ports = Vec::new();
        for &target in server_ports {
            let listener = TcpListener::bind("127.0.0.1:0")
                .map_err(|e| format!("cannot listen on 127.0.0.1 for the proxy: {e}"))?;
            ports.push(listener.local_addr().map_err(|e| e.to_string())?.port());
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || accept_loop(listener, target, shared));
        }
        Ok(Proxy { ports, shared })
    }

    /// The connection string a client uses to reach the ensemble through the proxy.
    pub fn connect_string(&self) -> String {
        let hosts: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        hosts.join(",")
    }

    /// Cuts the client off: live connections shut down, new ones closed at once.
    pub fn cut(&self) {
        self.shared.cut.store(true, Ordering::SeqCst);
        self.shared.shut_down_all();
    }

    /// Forwards new connections again.
    pub fn heal(&self) {
        self.shared.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.shut_down_all();
        for port in &self.ports {
            // Wakes the accept loop, which then sees `stop`.
            let address = SocketAddr::from(([127, 0, 0, 1], *port));
            let _ = TcpStream::connect_timeout(&address, Duration::from_secs(1));
        }
    }
}

fn accept_loop(listener: TcpListener, target: u16, shared: Arc<Shared>) {
    for incoming in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = incoming else { continue };
        if shared.cut.load(Ordering::SeqCst) {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        let address = SocketAddr::from(([127, 0, 0, 1], target));
        let Ok(server) = TcpStream::connect_timeout(&address, Duration::from_secs(2)) else {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        };
        let (Ok(client_copy), Ok(server_copy)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        {
            let mut live = shared.live();
            live.push(client_copy);
            live.push(server_copy);
        }
        let (Ok(client_in), Ok(server_in)) = (client.try_clone(), server.try_clone()) else {
            continue;
        };
        std::thread::spawn(move || pump(client_in, server));
        std::thread::spawn(move || pump(server_in, client));
    }
}

/// Copies `from` to `to` until either closes, then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on 127.0.0.1 that answers each connection until it closes.
    fn echo_server() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("address").port();
        std::thread::spawn(move || {
            for stream in listener.incoming().take(8) {
                let Ok(mut stream) = stream else { continue };
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 64];
                    while let Ok(n @ 1..) = stream.read(&mut buffer) {
                        if stream.write_all(&buffer[..n]).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        port
    }

    fn round_trip(port: u16) -> Option<Vec<u8>> {
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        stream.write_all(b"ping").ok()?;
        let mut answer = [0u8; 4];
        stream.read_exact(&mut answer).ok()?;
        Some(answer.to_vec())
    }

    #[test]
    fn forwards_then_cuts_then_forwards_again() {
        let proxy = Proxy::start(&[echo_server()]).expect("the proxy starts");
        let port = proxy.ports[0];
        assert_eq!(round_trip(port).as_deref(), Some(&b"ping"[..]));
        // A connection open at the cut is shut down.
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let mut open = TcpStream::connect_timeout(&address, Duration::from_secs(2)).expect("open");
        open.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        open.write_all(b"x").expect("write");
        let mut one = [0u8; 1];
        open.read_exact(&mut one).expect("echoed before the cut");
        proxy.cut();
        assert!(
            matches!(open.read(&mut one), Ok(0) | Err(_)),
            "shut down by the cut"
        );
        assert_eq!(
            round_trip(port),
            None,
            "new connections are closed while cut"
        );
        proxy.heal();
        assert_eq!(round_trip(port).as_deref(), Some(&b"ping"[..]));
        assert!(proxy.connect_string().starts_with("127.0.0.1:"));
    }
}
