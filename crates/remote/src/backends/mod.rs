//! One file per remote storage service, each exporting the [`crate::schemes::Backend`] that
//! the scheme table lists.

#[cfg(any(feature = "remote-s3", feature = "remote-gcs"))]
pub mod buckets;
#[cfg(any(feature = "remote-s3", feature = "remote-gcs"))]
mod object_store;
pub mod redis;
mod redis_client;
mod redis_conn;
mod redis_target;

pub use redis_client::PART_BYTES;
