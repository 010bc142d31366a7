//! A remote value checked while it arrives. The tier hands the value over in parts
//! ([`Tier::get_parts`]: Redis in pipelined ranges, buckets as the body streams in); a second
//! thread assembles them and runs, part by part, the two passes a hit needs: the HMAC of a
//! sealed value (`auth.rs`) and the SHA-256 of the entry's payload (`entry.rs`). With a core to
//! spare, verifying then costs the transfer little more than its last part. The checks
//! themselves stay where they are (`auth::unseal`, `entry::decode_digested`): they are
//! given these digests instead of making a second pass.
//!
//! A hostile value cannot make us hold more than it says: once the entry header is in, parts
//! beyond the length it promises stop the read (the check then refuses the truncated value).

use std::sync::mpsc;
use std::thread;

use bytes::Bytes;
use hmac::{Hmac, Mac};
use sha2::{Digest as _, Sha256};

use crate::auth::{self, SEAL_LEN, Secret};
use crate::error::RemoteError;
use crate::tier::Tier;
use mck_store::format::{HEADER_LEN, MAX_METADATA_LEN};

/// Parts queued between the tier and the hashing thread (what the transfer may run ahead).
const PARTS_IN_FLIGHT: usize = 32;
/// Bytes before the payload that locate it: the seal, then the entry header.
const HEAD_LEN: usize = SEAL_LEN + HEADER_LEN;
/// Largest buffer reserved up front from a header's promise (beyond it, the buffer grows).
const MAX_RESERVE: u64 = 1 << 30;

/// A value as received, with the digests computed while it arrived.
#[derive(Debug)]
pub struct Received {
    pub value: Bytes,
    pub digests: Digests,
    /// How many parts it came in (more than one: the read was not one atomic GET).
    pub parts: usize,
}

/// What the checks would otherwise compute with a second pass over the value.
#[derive(Default)]
pub struct Digests {
    /// HMAC of a sealed value's body (everything after the seal) under the remote's secret.
    pub body_mac: Option<Hmac<Sha256>>,
    /// SHA-256 of everything after the entry header and metadata, and the entry-file offset
    /// where that starts (the check uses it only if its own parse finds the same offset).
    pub payload: Option<(usize, [u8; 32])>,
}

impl std::fmt::Debug for Digests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Digests")
            .field("body_mac", &self.body_mac.is_some())
            .field("payload", &self.payload.map(|(at, _)| at))
            .finish()
    }
}

/// Reads `path` from `tier`, hashing on a second thread as the parts arrive (on this thread
/// if none can start). `None`: absent.
pub fn receive(
    tier: &dyn Tier,
    path: &str,
    secret: Option<&Secret>,
) -> Result<Option<Received>, RemoteError> {
    thread::scope(|scope| {
        let (send, parts) = mpsc::sync_channel::<Bytes>(PARTS_IN_FLIGHT);
        let hashing = thread::Builder::new()
            .name("mck-verify".to_owned())
            .spawn_scoped(scope, move || {
                let mut hasher = Hasher::new(secret, path);
                // Leaving the loop drops the receiver: the tier's next send fails and it stops.
                for part in parts {
                    if !hasher.update(part) {
                        break;
                    }
                }
                hasher
            });
        let Ok(hashing) = hashing else {
            let mut hasher = Hasher::new(secret, path);
            let found = tier.get_parts(path, &mut |part| hasher.update(part))?;
            return Ok(found.then(|| hasher.finish()));
        };
        let found = tier.get_parts(path, &mut |part| send.send(part).is_ok());
        drop(send);
        let hasher = hashing.join().map_err(|_| RemoteError::Setup {
            remote: path.to_owned(),
            reason: "the thread verifying a remote value panicked".to_owned(),
        })?;
        Ok(found?.then(|| hasher.finish()))
    })
}

/// The running state of [`receive`]'s second thread.
struct Hasher<'a> {
    secret: Option<&'a Secret>,
    path: &'a str,
    /// The value's first [`HEAD_LEN`] bytes (enough to find the payload).
    head: Vec<u8>,
    /// Bytes seen so far.
    len: u64,
    /// The first part, kept as is: a value that comes in one part is never copied.
    first: Option<Bytes>,
    assembled: Vec<u8>,
    parts: usize,
    body_mac: Option<Hmac<Sha256>>,
    /// Where the entry file starts (after the seal, if any), once known.
    entry_start: Option<usize>,
    /// Where the payload starts, and the whole value's length, by the header.
    payload_start: Option<u64>,
    promised: Option<u64>,
    payload_sha: Sha256,
}

impl<'a> Hasher<'a> {
    fn new(secret: Option<&'a Secret>, path: &'a str) -> Hasher<'a> {
        Hasher {
            secret,
            path,
            head: Vec::with_capacity(HEAD_LEN),
            len: 0,
            first: None,
            assembled: Vec::new(),
            parts: 0,
            body_mac: None,
            entry_start: None,
            payload_start: None,
            promised: None,
            payload_sha: Sha256::new(),
        }
    }

    /// Takes the next part; false once the value runs past what its header promised.
    fn update(&mut self, part: Bytes) -> bool {
        let at = self.len;
        self.len += part.len() as u64;
        if self.head.len() < HEAD_LEN {
            let take = (HEAD_LEN - self.head.len()).min(part.len());
            self.head.extend_from_slice(&part[..take]);
            self.locate();
        }
        if let Some(mac) = &mut self.body_mac {
            mac.update(tail_from(&part, at, SEAL_LEN as u64));
        }
        if let Some(start) = self.payload_start {
            self.payload_sha.update(tail_from(&part, at, start));
        }
        self.keep(part);
        self.promised.is_none_or(|promised| self.len <= promised)
    }

    /// Decides, as soon as the head allows, whether the value is sealed (exactly as
    /// `auth::unseal` will), and where the payload starts.
    fn locate(&mut self) {
        if self.entry_start.is_none() && self.head.len() >= SEAL_LEN {
            let sealed = auth::looks_sealed(&self.head);
            if let (true, Some(secret)) = (sealed, self.secret) {
                self.body_mac = Some(secret.body_mac(self.path));
            }
            self.entry_start = Some(if sealed { SEAL_LEN } else { 0 });
        }
        let Some(entry) = self.entry_start else {
            return;
        };
        if self.payload_start.is_none() && self.head.len() >= entry + HEADER_LEN {
            let header = &self.head[entry..entry + HEADER_LEN];
            let metadata_len = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
            let mut payload_len = [0u8; 8];
            payload_len.copy_from_slice(&header[12..20]);
            let payload_start = (entry + HEADER_LEN) as u64 + u64::from(metadata_len);
            self.payload_start = Some(payload_start);
            // A header that lies is refused by the check; here it only must not make us
            // read (or reserve) without bound.
            self.promised = match metadata_len as usize <= MAX_METADATA_LEN {
                true => payload_start.checked_add(u64::from_le_bytes(payload_len)),
                false => Some(payload_start),
            };
        }
    }

    fn keep(&mut self, part: Bytes) {
        self.parts += 1;
        match (self.parts, self.first.take()) {
            (1, _) => self.first = Some(part),
            (_, first) => {
                if let Some(first) = first {
                    let want = self.promised.unwrap_or(0).min(MAX_RESERVE) as usize;
                    self.assembled.reserve(want.max(first.len() + part.len()));
                    self.assembled.extend_from_slice(&first);
                }
                self.assembled.extend_from_slice(&part);
            }
        }
    }

    fn finish(self) -> Received {
        let payload = match (self.entry_start, self.payload_start) {
            (Some(entry), Some(start)) if start <= self.len => {
                Some(((start as usize) - entry, self.payload_sha.finalize().into()))
            }
            _ => None,
        };
        let value = match self.first {
            Some(only) => only,
            None => Bytes::from(self.assembled),
        };
        Received {
            value,
            digests: Digests {
                body_mac: self.body_mac,
                payload,
            },
            parts: self.parts,
        }
    }
}

/// The bytes of `part` (which starts at offset `at` of the value) from offset `from` on.
fn tail_from(part: &[u8], at: u64, from: u64) -> &[u8] {
    let skip = from.saturating_sub(at).min(part.len() as u64) as usize;
    &part[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{seal, unseal};

    use std::sync::Mutex;

    /// A tier that hands out a fixed value in parts of `part_len`.
    #[derive(Debug)]
    struct Parts {
        value: Vec<u8>,
        part_len: usize,
        sent: Mutex<usize>,
    }

    impl Tier for Parts {
        fn get(&self, _: &str) -> Result<Option<Bytes>, RemoteError> {
            Ok(Some(Bytes::from(self.value.clone())))
        }
        fn put(&self, _: &str, _: Vec<u8>) -> Result<(), RemoteError> {
            Ok(())
        }
        fn get_parts(
            &self,
            _: &str,
            part: &mut dyn FnMut(Bytes) -> bool,
        ) -> Result<bool, RemoteError> {
            for chunk in self.value.chunks(self.part_len) {
                *self.sent.lock().unwrap() += chunk.len();
                if !part(Bytes::copy_from_slice(chunk)) {
                    break;
                }
            }
            Ok(true)
        }
    }

    fn entry(payload: &[u8]) -> (mck_store::Digest, Vec<u8>) {
        let key = mck_store::CacheKey::parse(&format!("m-{}", "ab".repeat(32))).unwrap();
        let meta = mck_store::EntryMeta::new(
            &key,
            mck_store::EntryState::Ok,
            None,
            payload,
            1,
            serde_json::json!({}),
        );
        let mut file = mck_store::encode_prefix(&meta).unwrap();
        file.extend_from_slice(payload);
        (key.digest().clone(), file)
    }

    fn secret(dir: &std::path::Path) -> Secret {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("secret");
        std::fs::write(&path, "0123456789abcdef0123").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Secret::read(&path).unwrap()
    }

    /// Whatever the part sizes, the value is assembled exactly and the digests are those the
    /// checks would compute themselves (so they accept it), sealed or not.
    #[test]
    fn digests_computed_part_by_part_equal_the_checks_own() {
        let dir = tempfile::tempdir().unwrap();
        let secret = secret(dir.path());
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (digest, file) = entry(&payload);
        for sealed in [false, true] {
            let value = match sealed {
                true => seal(Some(&secret), "p/x", &[&file]),
                false => file.clone(),
            };
            for part_len in [1, 3, 37, 88, 89, 90, 4096, value.len()] {
                let tier = Parts {
                    value: value.clone(),
                    part_len,
                    sent: Mutex::new(0),
                };
                let s = sealed.then_some(&secret);
                let got = receive(&tier, "p/x", s).unwrap().unwrap();
                assert_eq!(&got.value[..], &value[..], "part {part_len}");
                let start = unseal(s, "p/x", &got.value, got.digests.body_mac)
                    .unwrap_or_else(|e| panic!("sealed {sealed}, part {part_len}: {e}"));
                let (_, range) =
                    mck_store::decode_digested(&got.value[start..], &digest, got.digests.payload)
                        .unwrap();
                assert_eq!(&got.value[start..][range], &payload[..]);
                assert_eq!(got.parts, value.len().div_ceil(part_len));
            }
        }
    }

    /// A digest of other bytes is not believed: a flipped payload byte is still refused, and a
    /// wrong MAC state still fails the tag.
    #[test]
    fn a_damaged_value_is_refused_with_digests_from_the_stream() {
        let dir = tempfile::tempdir().unwrap();
        let secret = secret(dir.path());
        let (digest, mut file) = entry(&[9u8; 5000]);
        *file.last_mut().unwrap() ^= 1;
        let tier = Parts {
            value: file.clone(),
            part_len: 1000,
            sent: Mutex::new(0),
        };
        let got = receive(&tier, "p/x", None).unwrap().unwrap();
        let e = mck_store::decode_digested(&got.value, &digest, got.digests.payload);
        assert!(e.is_err(), "a flipped payload byte must be refused");
        let sealed = seal(Some(&secret), "p/x", &[&file]);
        let tier = Parts {
            value: sealed,
            part_len: 1000,
            sent: Mutex::new(0),
        };
        let got = receive(&tier, "p/other", Some(&secret)).unwrap().unwrap();
        assert!(
            unseal(Some(&secret), "p/x", &got.value, got.digests.body_mac).is_err(),
            "a MAC computed for another object key must not pass"
        );
    }

    /// A value longer than its header promises stops the read soon after the promise.
    #[test]
    fn a_value_past_its_promised_length_stops_the_read() {
        let (_, mut file) = entry(&[1u8; 100]);
        let promised = file.len();
        file.extend(std::iter::repeat_n(0u8, 10 << 20));
        let tier = Parts {
            value: file,
            part_len: 4096,
            sent: Mutex::new(0),
        };
        let got = receive(&tier, "p/x", None).unwrap().unwrap();
        let sent = *tier.sent.lock().unwrap();
        assert!(
            sent <= promised + (PARTS_IN_FLIGHT + 2) * 4096,
            "read {sent} bytes of a value promising {promised}"
        );
        assert!(got.value.len() > promised);
    }
}
