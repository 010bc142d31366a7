//! `exec` up to what needs MLIR: its arguments, the cache, the compiler's identity and a
//! direct-mode hit. The front binary finishes a hit here without loading MLIR; everything else
//! (the canonical key of a module it has to parse) continues in the MLIR binary, which starts
//! from [`Exec::open`] too.

use crate::address_args::AddressArgs;
use crate::bypass::CacheOpen;
use crate::error::{CliError, Failure, exit_code};
use crate::flags::{CanonFlags, InputLimits};
use crate::inode_cache::InodeCache;
use crate::input;
use crate::settings::CacheOptions;
use mck_exec::compiler_check::CompilerCheck;
use mck_exec::{AtAddress, ExecRequest, Finished};
use mck_key::KeyRecord;
use mck_remote::Tiered;
use mck_store::CacheKey;
use std::cell::OnceCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The module the command compiles (MLIR text or bytecode, or an XLA
    /// HloModuleProto).
    #[arg(long, value_name = "MODULE")]
    pub input: PathBuf,
    /// The file the command writes: stored on success, restored on a hit.
    #[arg(long, value_name = "FILE")]
    pub output: PathBuf,
    /// The key's prefix [default: the module's sym_name, or the
    /// HloModuleProto's name].
    #[arg(long, value_name = "NAME")]
    pub module_name: Option<String>,
    /// Another environment variable that can change the output (repeatable;
    /// XLA_FLAGS and LIBTPU_INIT_ARGS always count).
    #[arg(long = "env", value_name = "NAME")]
    pub env: Vec<String>,
    /// Platform the command compiles for.
    #[arg(long, value_name = "S", default_value = "")]
    pub platform: String,
    /// Platform version.
    #[arg(long, value_name = "S", default_value = "")]
    pub platform_version: String,
    /// A user string hashed into the key.
    #[arg(long, value_name = "S", default_value = "")]
    pub custom_hook: String,
    /// A glob of compiler arguments that do not change the output, left out of
    /// the key (repeatable), e.g. '--dump-dir=*' or '-v'. XLA flags JAX leaves
    /// out of its key (--xla_dump_to…) are left out without it.
    #[arg(
        long = "ignore-arg",
        value_name = "PATTERN",
        allow_hyphen_values = true
    )]
    pub ignore_args: Vec<String>,
    /// What stands for the compiler in the key: content (its executable, and
    /// the script an interpreter runs), mtime, none, string:VALUE or
    /// command:CMD (the output of a shell command).
    #[arg(long, value_name = "CHECK", default_value = "content")]
    pub compiler_check: CompilerCheck,
    #[command(flatten)]
    pub canon: CanonFlags,
    #[command(flatten)]
    pub limits: InputLimits,
    #[command(flatten)]
    pub address: AddressArgs,
    /// The cache options, `exec`'s own among them (`--no-direct`, `--lock-timeout`: see the
    /// settings table).
    #[command(flatten)]
    pub cache: CacheOptions,
    /// The compiler and its arguments; MODULE and FILE appear among them.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// The open cache and what direct mode uses beside it, as `exec` and `wrap` hold them.
pub struct OpenCache {
    pub store: Tiered,
    /// Where compiler digests are remembered (the cache's `compilers/`).
    pub digest_cache: PathBuf,
    /// Direct mode is on: not the `no_direct` setting (`--no-direct` on the command line).
    pub direct: bool,
    /// Where direct mode remembers input digests (`None`: the `no_inode_cache` setting).
    pub inode_cache: Option<InodeCache>,
}

impl OpenCache {
    /// `store`, used as `settings` say.
    pub fn new(store: Tiered, settings: &mck_settings::Settings) -> OpenCache {
        OpenCache {
            digest_cache: store.local().layout().compilers_dir(),
            direct: !settings.no_direct,
            inode_cache: InodeCache::unless_off(&store, settings),
            store,
        }
    }
}

/// An exec with its cache open: what both halves of the command line work from.
pub struct Exec<'a> {
    pub args: &'a Args,
    pub request: ExecRequest,
    pub cache: OpenCache,
    /// One run id for the direct and the canonical path (made once, when first needed).
    run_id: OnceCell<String>,
    /// Where addresses live, and whether an unreachable shared registry fails the exec.
    registry: mck_settings::RegistrySettings,
    strict: bool,
}

/// What [`Exec::open`] found.
pub enum Opened<'a> {
    /// Caching is off: the compiler ran, with this status.
    Uncached(ExitCode),
    Cache(Box<Exec<'a>>),
}

impl<'a> Exec<'a> {
    /// Reads the cache settings and opens the cache; with caching off, or a cache that cannot
    /// be used (see [`crate::bypass`]), runs the compiler.
    pub fn open(args: &'a Args) -> Result<Opened<'a>, CliError> {
        let mut request = ExecRequest {
            command: args.command.clone(),
            input: args.input.clone(),
            output: args.output.clone(),
            env: args.env.clone(),
            platform: args.platform.clone(),
            platform_version: args.platform_version.clone(),
            custom_hook: args.custom_hook.clone(),
            // Both set from the settings once the cache is open.
            lock_timeout: mck_settings::DEFAULT_LOCK_TIMEOUT,
            ignore_args: args.ignore_args.clone(),
            compiler_check: args.compiler_check.clone(),
            verify_hits: 0.0,
        };
        let (settings, store) = match crate::bypass::open(&args.cache)? {
            CacheOpen::Open(open) => *open,
            CacheOpen::Off => {
                tracing::info!("caching is off (--no_cache): running the compiler");
                return Ok(Opened::Uncached(exit_code(mck_exec::run_uncached(
                    &request,
                )?)));
            }
            CacheOpen::Bypassed(reason) => {
                let code = crate::bypass::run_bypassed(&request.command, &reason)?;
                return Ok(Opened::Uncached(code));
            }
        };
        request.verify_hits = settings.verify_hits;
        request.lock_timeout = settings.lock_timeout;
        Ok(Opened::Cache(Box::new(Exec {
            args,
            request,
            cache: OpenCache::new(store, &settings),
            run_id: OnceCell::new(),
            registry: settings.registry.clone(),
            strict: settings.cache_errors == mck_settings::CacheErrors::Fail,
        })))
    }

    /// Where `record`'s result is to be recorded (`--address`), if anywhere.
    pub fn at(&self, record: &KeyRecord) -> Result<Option<AtAddress>, CliError> {
        let address_args = &self.args.address;
        Ok(match address_args.address(&record.module_name)? {
            Some(address) => Some(AtAddress {
                address,
                run: match self.run_id.get() {
                    Some(id) => id.clone(),
                    None => {
                        let id = address_args.run_id()?;
                        let _ = self.run_id.set(id.clone());
                        id
                    }
                },
                overwrite_conflicts: address_args.overwrite_cache_conflicts,
                cache_args: self.args.cache.as_args(),
                registry: self.registry.clone(),
                strict: self.strict,
            }),
            None => None,
        })
    }

    /// The direct-mode manifest key for the digest of the input's raw bytes (`raw_digest`).
    pub fn manifest(&self, raw_digest: &[u8; 32]) -> Result<CacheKey, CliError> {
        manifest_key(
            &self.request,
            raw_digest,
            &self.args.canon,
            self.args.module_name.as_deref(),
            &self.cache.digest_cache,
        )
    }

    /// A direct-mode hit, served (`None`: the module must be canonicalized). A regular file is
    /// hashed through bounded buffers; an input that can be read only once (stdin, a pipe) is
    /// read whole and returned in `read` for the canonical path.
    pub fn direct_hit(
        &self,
        read: &mut Option<(String, Vec<u8>)>,
    ) -> Result<Option<ExitCode>, CliError> {
        let digest = if input::is_stream(&self.args.input) {
            let whole = input::read_raw(&self.args.input)?;
            let digest = crate::raw_digest::of_bytes(&whole.1);
            *read = Some(whole);
            digest
        } else {
            input::digest_file(&self.args.input, self.cache.inode_cache.as_ref())?
        };
        let manifest = self.manifest(&digest)?;
        let at = |record: &KeyRecord| self.at(record);
        Ok(
            mck_exec::run_direct(&self.cache.store, &self.request, &manifest, at)?
                .map(finished_code),
        )
    }
}

/// The direct-mode manifest key of `request` (exec's or wrap's) for the digest of its input's
/// raw bytes. Besides the exec key's entries it covers the canonicalizer's version and options
/// and the module-name override: what else maps raw bytes to a canonical key.
pub fn manifest_key(
    request: &ExecRequest,
    raw_digest: &[u8; 32],
    canon: &CanonFlags,
    module_name: Option<&str>,
    digest_cache: &Path,
) -> Result<CacheKey, CliError> {
    let canon_identity = format!("{} {canon:?}", env!("CARGO_PKG_VERSION"));
    Ok(mck_exec::direct_key(
        request,
        raw_digest,
        &canon_identity,
        module_name,
        Some(digest_cache),
    )?)
}

/// The exit code of a finished exec (a conflict is reported here).
pub fn finished_code(finished: Finished) -> ExitCode {
    match finished {
        Finished::Status { code, .. } => exit_code(code),
        Finished::Conflict(report) => {
            eprintln!("mlir-cache-key: error: {report}");
            ExitCode::from(Failure::Conflict.code())
        }
    }
}
