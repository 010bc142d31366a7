//! The bucket backends, `s3://BUCKET[/PREFIX…][?endpoint=URL&region=NAME]` (S3-compatible) and
//! `gcs://BUCKET[/PREFIX…][?endpoint=URL&credential_path=FILE]` (Google Cloud Storage), each
//! an [`ObjectStore`] over an opendal operator filled from the URL first and then from the
//! service's usual environment, so a bucket URL works as the service's own tools would:
//!
//! - S3: `?endpoint=` or `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`; `?region=` or `AWS_REGION` /
//!   `AWS_DEFAULT_REGION`; credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, or
//!   `AWS_PROFILE` in the shared credentials and config files (`AWS_SHARED_CREDENTIALS_FILE`,
//!   `AWS_CONFIG_FILE`; read by opendal's signer; `tests/cli_s3.rs` checks a profile's keys). A named
//!   endpoint is a self-hosted server: path-style addressing and no EC2 metadata lookup; AWS
//!   itself gets virtual-host addressing.
//! - GCS: `STORAGE_EMULATOR_HOST` (or `?endpoint=`) names an emulator: anonymous requests, no
//!   credential files, no VM metadata server; otherwise `?credential_path=` or
//!   `GOOGLE_APPLICATION_CREDENTIALS` (read by the signer).
//!
//! The environment is read once into an [`Env`], so the choices are testable without touching
//! the process's variables.

use std::collections::BTreeMap;

use url::Url;

use super::object_store::ObjectStore;
use crate::backend::{Backend, Parsed, UrlError, path_segments};
use crate::error::RemoteError;
use crate::tier::{Tier, TierOptions};

#[cfg(feature = "remote-s3")]
pub const S3: Backend = Backend {
    schemes: &["s3"],
    form: "s3://BUCKET/PREFIX",
    leases: false,
    parse: |url| BucketTarget::parse(url, S3_OPTIONS).map(|t| t.parsed(url.scheme())),
    open: |url, options| {
        open(url, options, |target, env| {
            opendal::Operator::new(s3(target, env)?)
        })
    },
};

#[cfg(feature = "remote-gcs")]
pub const GCS: Backend = Backend {
    schemes: &["gcs", "gs"],
    form: "gcs://BUCKET/PREFIX",
    leases: false,
    parse: |url| BucketTarget::parse(url, GCS_OPTIONS).map(|t| t.parsed("gcs")),
    open: |url, options| {
        open(url, options, |target, env| {
            opendal::Operator::new(gcs(target, env))
        })
    },
};

const S3_OPTIONS: &[&str] = &["endpoint", "region"];
const GCS_OPTIONS: &[&str] = &["endpoint", "credential_path"];

/// The object store of a bucket URL, its operator made by `build` from the URL and the
/// process's environment (nothing is contacted yet).
fn open(
    url: &Url,
    options: TierOptions,
    build: fn(&BucketTarget, &Env) -> Result<opendal::Operator, opendal::Error>,
) -> Result<Box<dyn Tier>, RemoteError> {
    let allowed = if url.scheme() == "s3" {
        S3_OPTIONS
    } else {
        GCS_OPTIONS
    };
    let target = BucketTarget::parse(url, allowed).map_err(|e| RemoteError::Setup {
        remote: options.shown.clone(),
        reason: e.to_string(),
    })?;
    let env = Env::from_process();
    Ok(Box::new(ObjectStore::open(
        options.shown,
        options.timeout,
        &options.credentials,
        || build(&target, &env),
    )?))
}

/// A bucket, a prefix inside it, and the service options given in the query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketTarget {
    pub bucket: String,
    /// Objects are `PREFIX/…` (empty: the bucket's root); no leading or trailing `/`.
    pub prefix: String,
    /// `(name, value)` pairs from the query, each one the service accepts.
    pub options: Vec<(String, String)>,
}

impl BucketTarget {
    fn parse(url: &Url, allowed: &[&str]) -> Result<BucketTarget, UrlError> {
        let scheme = url.scheme();
        let bucket = match url.host_str() {
            Some(b) if !b.is_empty() => b.to_owned(),
            _ => {
                return Err(UrlError(format!(
                    "a {scheme} URL needs a bucket: {scheme}://BUCKET/PREFIX"
                )));
            }
        };
        if !url.username().is_empty() || url.password().is_some() || url.port().is_some() {
            return Err(UrlError(format!(
                "a {scheme} URL takes no user, password or port; credentials come from the service's usual environment"
            )));
        }
        let prefix = path_segments(url)?.join("/");
        let mut options = Vec::new();
        for (name, value) in url.query_pairs() {
            if !allowed.contains(&name.as_ref()) {
                return Err(UrlError(format!(
                    "unknown {scheme} option {name:?} (known: {})",
                    allowed.join(", ")
                )));
            }
            if options.iter().any(|(n, _)| n == name.as_ref()) {
                return Err(UrlError(format!(
                    "the {scheme} option {name:?} is given twice"
                )));
            }
            options.push((name.into_owned(), value.into_owned()));
        }
        Ok(BucketTarget {
            bucket,
            prefix,
            options,
        })
    }

    /// The prefix, and the URL as shown: `SERVICE://BUCKET[/PREFIX][?options]`.
    fn parsed(&self, service: &str) -> Parsed {
        let mut shown = format!("{service}://{}", self.bucket);
        if !self.prefix.is_empty() {
            shown += &format!("/{}", self.prefix);
        }
        for (i, (n, v)) in self.options.iter().enumerate() {
            shown += &format!("{}{n}={v}", if i == 0 { '?' } else { '&' });
        }
        Parsed {
            prefix: self.prefix.clone(),
            shown,
        }
    }
}

/// The variables the bucket services read, as they were when the tier was opened.
#[derive(Debug, Default, Clone)]
pub struct Env(BTreeMap<&'static str, String>);

const VARIABLES: &[&str] = &[
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "STORAGE_EMULATOR_HOST",
];

impl Env {
    pub fn from_process() -> Env {
        Env(VARIABLES
            .iter()
            .filter_map(|&name| {
                let value = std::env::var(name).ok()?;
                (!value.trim().is_empty()).then(|| (name, value.trim().to_owned()))
            })
            .collect())
    }

    /// The first of `names` that is set.
    fn first<'a>(&'a self, names: &[&str]) -> Option<&'a str> {
        names
            .iter()
            .find_map(|&n| self.0.get(n).map(String::as_str))
    }

    #[cfg(test)]
    pub fn with(mut self, name: &'static str, value: &str) -> Env {
        self.0.insert(name, value.to_owned());
        self
    }
}

fn option<'a>(target: &'a BucketTarget, name: &str) -> Option<&'a str> {
    target
        .options
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// What an `s3://` tier talks to, resolved from the URL and the environment.
#[derive(Debug, PartialEq, Eq)]
pub struct S3Plan {
    /// `None`: AWS itself.
    pub endpoint: Option<String>,
    pub region: String,
}

impl S3Plan {
    pub fn resolve(target: &BucketTarget, env: &Env) -> Result<S3Plan, opendal::Error> {
        let endpoint = option(target, "endpoint")
            .or_else(|| env.first(&["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]))
            .map(|e| e.trim_end_matches('/').to_owned());
        let region = option(target, "region")
            .or_else(|| env.first(&["AWS_REGION", "AWS_DEFAULT_REGION"]))
            .ok_or_else(|| {
                opendal::Error::new(
                    opendal::ErrorKind::ConfigInvalid,
                    "no region: add ?region=NAME to the URL or set AWS_REGION",
                )
            })?;
        Ok(S3Plan {
            endpoint,
            region: region.to_owned(),
        })
    }
}

#[cfg(feature = "remote-s3")]
pub fn s3(target: &BucketTarget, env: &Env) -> Result<opendal::services::S3, opendal::Error> {
    let plan = S3Plan::resolve(target, env)?;
    let b = opendal::services::S3::default()
        .bucket(&target.bucket)
        .root("/")
        .region(&plan.region);
    Ok(match &plan.endpoint {
        // Path-style is opendal's default; a self-hosted server has no instance metadata.
        Some(endpoint) => b.endpoint(endpoint).disable_ec2_metadata(),
        None => b.enable_virtual_host_style(),
    })
}

/// What a `gcs://` tier talks to.
#[derive(Debug, PartialEq, Eq)]
pub struct GcsPlan {
    /// `None`: Google's own endpoint.
    pub endpoint: Option<String>,
    /// An emulator: anonymous requests, no credential lookup at all.
    pub emulator: bool,
    pub credential_path: Option<String>,
}

impl GcsPlan {
    pub fn resolve(target: &BucketTarget, env: &Env) -> GcsPlan {
        let emulator = env.first(&["STORAGE_EMULATOR_HOST"]).map(|host| {
            if host.contains("://") {
                host.to_owned()
            } else {
                format!("http://{host}")
            }
        });
        let endpoint = option(target, "endpoint")
            .map(str::to_owned)
            .or_else(|| emulator.clone());
        GcsPlan {
            endpoint,
            emulator: emulator.is_some(),
            credential_path: option(target, "credential_path").map(str::to_owned),
        }
    }
}

#[cfg(feature = "remote-gcs")]
pub fn gcs(target: &BucketTarget, env: &Env) -> opendal::services::Gcs {
    let plan = GcsPlan::resolve(target, env);
    let mut b = opendal::services::Gcs::default()
        .bucket(&target.bucket)
        .root("/");
    if let Some(endpoint) = &plan.endpoint {
        b = b.endpoint(endpoint);
    }
    if let Some(path) = &plan.credential_path {
        b = b.credential_path(path);
    }
    if plan.emulator {
        b = b
            .skip_signature()
            .disable_vm_metadata()
            .disable_config_load();
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(url: &str) -> BucketTarget {
        let url = Url::parse(url).unwrap();
        let allowed = if url.scheme() == "s3" {
            S3_OPTIONS
        } else {
            GCS_OPTIONS
        };
        BucketTarget::parse(&url, allowed).unwrap()
    }

    #[test]
    fn buckets() {
        let b = bucket("s3://b/team/x?endpoint=http://127.0.0.1:9000&region=us-east-1");
        assert_eq!((b.bucket.as_str(), b.prefix.as_str()), ("b", "team/x"));
        assert_eq!(b.options.len(), 2);
        assert_eq!(bucket("gcs://b").parsed("gcs").shown, "gcs://b");
    }

    #[test]
    fn bad_bucket_urls_say_why() {
        for (text, needle) in [
            ("s3:///x", "bucket"),
            ("s3://b/x?colour=red", "unknown s3 option"),
            ("s3://b/x?region=a&region=b", "twice"),
            ("gcs://u:p@b/x", "no user"),
        ] {
            let url = Url::parse(text).unwrap();
            let e = BucketTarget::parse(&url, S3_OPTIONS)
                .expect_err(text)
                .to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn s3_takes_the_url_first_then_the_aws_variables() {
        let env = Env::default()
            .with("AWS_ENDPOINT_URL", "http://garage:3900/")
            .with("AWS_DEFAULT_REGION", "fallback")
            .with("AWS_REGION", "garage");
        let plan = S3Plan::resolve(&bucket("s3://b/team"), &env).unwrap();
        assert_eq!(plan.endpoint.as_deref(), Some("http://garage:3900"));
        assert_eq!(plan.region, "garage");
        let env = env.with("AWS_ENDPOINT_URL_S3", "http://s3only:1");
        let plan = S3Plan::resolve(&bucket("s3://b/team"), &env).unwrap();
        assert_eq!(plan.endpoint.as_deref(), Some("http://s3only:1"));
        let url = bucket("s3://b?endpoint=http://url:2&region=here");
        let plan = S3Plan::resolve(&url, &env).unwrap();
        assert_eq!(
            (plan.endpoint.as_deref(), plan.region.as_str()),
            (Some("http://url:2"), "here")
        );
        let aws = Env::default().with("AWS_DEFAULT_REGION", "eu-west-1");
        let plan = S3Plan::resolve(&bucket("s3://b"), &aws).unwrap();
        assert_eq!((plan.endpoint, plan.region.as_str()), (None, "eu-west-1"));
    }

    #[test]
    fn s3_without_a_region_says_where_to_give_one() {
        let e = S3Plan::resolve(&bucket("s3://b"), &Env::default()).unwrap_err();
        assert!(e.message().contains("AWS_REGION"), "{e}");
    }

    #[test]
    fn an_emulator_host_means_anonymous_requests_to_it() {
        let env = Env::default().with("STORAGE_EMULATOR_HOST", "127.0.0.1:9023");
        let plan = GcsPlan::resolve(&bucket("gcs://b/team"), &env);
        assert_eq!(plan.endpoint.as_deref(), Some("http://127.0.0.1:9023"));
        assert!(plan.emulator);
        let plan = GcsPlan::resolve(&bucket("gcs://b?credential_path=/k.json"), &Env::default());
        assert_eq!(
            plan,
            GcsPlan {
                endpoint: None,
                emulator: false,
                credential_path: Some("/k.json".into())
            }
        );
    }
}
