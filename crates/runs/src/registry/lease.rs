//! Keeps this process's `running` marks in a shared registry live while it compiles: a thread
//! that extends their leases every third of the lease on the registry's connection. When the
//! process dies the renewals stop, and after one lease other hosts take the address over.

use std::collections::BTreeSet;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::Client;

use super::this_process;

pub(crate) struct Renewer {
    addresses: Arc<Mutex<BTreeSet<String>>>,
    stop: Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Renewer {
    /// Starts renewing, on `client`, the marks of the addresses later added, in `schema`
    /// (quoted), each for `lease`.
    pub(crate) fn start(client: Arc<Mutex<Client>>, schema: String, lease: Duration) -> Renewer {
        let addresses = Arc::new(Mutex::new(BTreeSet::new()));
        let (stop, stopped) = mpsc::channel::<()>();
        let held = addresses.clone();
        let thread = std::thread::Builder::new()
            .name("registry-lease".into())
            .spawn(move || {
                let sql = format!(
                    "UPDATE {schema}.running
                     SET lease_until = clock_timestamp() + $4::float8 * interval '1 second'
                     WHERE address = $1 AND host = $2 AND pid = $3"
                );
                let (host, pid) = this_process();
                let pid = i64::from(pid);
                let seconds = lease.as_secs_f64();
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(lease / 3) {
                    let now: Vec<String> = held
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .iter()
                        .cloned()
                        .collect();
                    let mut client = client.lock().unwrap_or_else(PoisonError::into_inner);
                    for address in now {
                        if let Err(e) = client.execute(&sql, &[&address, &host, &pid, &seconds]) {
                            tracing::debug!("cannot renew the running mark at {address}: {e}");
                        }
                    }
                }
            })
            .ok();
        Renewer {
            addresses,
            stop,
            thread,
        }
    }

    pub(crate) fn add(&self, address: &str) {
        self.set().insert(address.to_owned());
    }

    pub(crate) fn remove(&self, address: &str) {
        self.set().remove(address);
    }

    fn set(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.addresses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Renewer {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
