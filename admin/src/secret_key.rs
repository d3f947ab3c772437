//! The secret key's file and its rotation: `jobwheel-admin secrets rotate-key` re-seals every
//! secret variable and group token under a new key, and the checks an existing key file must
//! pass before an admin uses it.
//!
//! Rotation order, so that no step loses the key the database needs:
//! 1. the new key is written to `secret-key.new` (mode 0600, fsync) — nothing else changed yet;
//! 2. every sealed value is opened with the old key and sealed with the new one in **one**
//!    database transaction (`GrantStore::reseal_all`): a value the old key does not open rolls
//!    it all back, and `secret-key.new` is removed;
//! 3. `secret-key.new` is renamed over `secret-key` (atomic) and the directory synced.
//!
//! A crash between 2 and 3 leaves `secret-key.new` holding the key the database now uses. An
//! admin refuses to start beside it, and running `rotate-key` again finishes the rename (it
//! checks which of the two keys opens the stored values). The old key is not kept: a rotation
//! is done because it may have leaked.
//!
//! With `--secret-key` (no key file) the new key must be given as `--new-key`: the command
//! cannot hand the operator a key it generated and be sure it was kept.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::credentials::SEAL_NAME;
use crate::sealing::{KEY_FILE, SealError, SecretBox};
use crate::store::{self, SealedValue, StoreError, VariableOwner};

/// Where step 1 writes the new key, beside [`KEY_FILE`].
pub const NEW_KEY_FILE: &str = "secret-key.new";

/// `jobwheel-admin secrets <task>`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum SecretsCommand {
    /// Re-seals every secret variable and group token under a new secret key, in one
    /// transaction, then replaces `{data-dir}/secret-key`. Stop every admin sharing the
    /// database first, and start them with the new key.
    RotateKey {
        /// The new key (64 hex characters); generated when the key is in a file. Required with
        /// `--secret-key`.
        #[arg(long, env = "JOBWHEEL_NEW_SECRET_KEY", hide_env_values = true)]
        new_key: Option<String>,
    },
}

/// Why a key file is refused or a rotation failed.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error(
        "{path} is owned by user {owner}, not by this admin's user {me}: another account could have \
         replaced the key. Check the file, then run `chown {me} {path}`"
    )]
    Owner { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{path} can be read or written by other users (mode {mode:o}): whoever reads it opens every \
         secret. Run `chmod 600 {path}`, and rotate the key (`jobwheel-admin secrets rotate-key`) if \
         someone may have read it"
    )]
    Mode { path: PathBuf, mode: u32 },
    #[error(
        "{path} is left from a key rotation that did not finish. Run `jobwheel-admin secrets rotate-key` \
         again to finish it before starting the admin"
    )]
    Unfinished { path: PathBuf },
    #[error("no secret key: {path} does not exist and --secret-key is not set (nothing to rotate)")]
    NoKey { path: PathBuf },
    #[error(
        "with --secret-key, give the new key as --new-key (64 hex characters, e.g. `openssl rand -hex 32`)"
    )]
    NewKeyRequired,
    #[error("--new-key: {0}")]
    BadNewKey(SealError),
    #[error("the current secret key: {0}")]
    BadKey(SealError),
    #[error("{0} does not open with the current secret key; nothing was changed")]
    WrongKey(String),
    #[error("neither secret-key nor secret-key.new opens {0}; nothing was changed")]
    NeitherKey(String),
    #[error("database: {0}")]
    Store(#[from] StoreError),
}

/// Refuses a key file that another user owns or may read or write, and a data directory with an
/// unfinished rotation.
pub fn check_key_file(path: &Path) -> Result<(), KeyError> {
    if let Some(dir) = path.parent() {
        let pending = dir.join(NEW_KEY_FILE);
        if pending.exists() {
            return Err(KeyError::Unfinished { path: pending });
        }
    }
    let meta = std::fs::metadata(path).map_err(|source| KeyError::Read { path: path.to_owned(), source })?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(KeyError::Owner { path: path.to_owned(), owner: meta.uid(), me });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::Mode { path: path.to_owned(), mode });
    }
    Ok(())
}

/// What the text of a sealed value is about, for messages (never its value).
fn describe(value: &SealedValue) -> String {
    if let Some(channel) = &value.channel {
        return format!("the URL and signing key of alarm channel {channel:?}");
    }
    match (&value.owner, &value.name) {
        (VariableOwner::Group(g), None) => format!("the access token of executor group {g}"),
        (VariableOwner::Group(g), Some(name)) => format!("secret `{name}` of executor group {g}"),
        (VariableOwner::Job(j), Some(name)) => format!("secret `{name}` of job {j}"),
        (VariableOwner::Job(j), None) => format!("a sealed value of job {j}"),
    }
}

/// The name a value is sealed under (group tokens use [`SEAL_NAME`]).
fn seal_name(value: &SealedValue) -> &str {
    value.name.as_deref().unwrap_or(SEAL_NAME)
}

fn opens(key: &SecretBox, value: &SealedValue) -> bool {
    open(key, value).is_ok()
}

/// `value` opened with `key`.
fn open(key: &SecretBox, value: &SealedValue) -> Result<String, crate::sealing::SealError> {
    match &value.channel {
        Some(channel) => key.open_channel(channel, &value.sealed),
        None => key.open(value.owner, seal_name(value), &value.sealed),
    }
}

/// `plain` sealed with `key` as `value` is.
fn seal(key: &SecretBox, value: &SealedValue, plain: &str) -> String {
    match &value.channel {
        Some(channel) => key.seal_channel(channel, plain),
        None => key.seal(value.owner, seal_name(value), plain),
    }
}

/// Runs `command` against the database at `database_url`; the text to print on stdout.
pub async fn run(
    database_url: &str,
    configured_key: Option<&str>,
    data_dir: &Path,
    command: &SecretsCommand,
) -> Result<String, KeyError> {
    let SecretsCommand::RotateKey { new_key } = command;
    let store = store::connect(database_url).await?;
    let key_path = data_dir.join(KEY_FILE);
    let pending = data_dir.join(NEW_KEY_FILE);
    let old_hex = match configured_key {
        Some(key) => key.to_owned(),
        None => read_key(&key_path)?.ok_or_else(|| KeyError::NoKey { path: key_path.clone() })?,
    };
    let old = SecretBox::from_hex(&old_hex).map_err(KeyError::BadKey)?;
    if configured_key.is_none()
        && let Some(staged) = read_key(&pending)?
    {
        return finish_unfinished(&*store, &old, &staged, &key_path, &pending).await;
    }
    let new_hex = match (new_key, configured_key) {
        (Some(key), _) => key.trim().to_owned(),
        (None, Some(_)) => return Err(KeyError::NewKeyRequired),
        (None, None) => SecretBox::generate_key(),
    };
    let new = SecretBox::from_hex(&new_hex).map_err(KeyError::BadNewKey)?;
    if configured_key.is_none() {
        write_private(&pending, &new_hex)?;
    }
    let outcome = store
        .reseal_all(&|value| {
            let plain = open(&old, value).ok()?;
            Some(seal(&new, value, &plain))
        })
        .await;
    let count = match outcome {
        Ok(Ok(count)) => count,
        Ok(Err(value)) => {
            let _ = std::fs::remove_file(&pending);
            return Err(KeyError::WrongKey(describe(&value)));
        }
        Err(e) => {
            let _ = std::fs::remove_file(&pending);
            return Err(e.into());
        }
    };
    tracing::info!(resealed = count, "secrets re-sealed under the new key");
    // Before the rename: interrupted here, the command run again finds both keys and finishes.
    let flights = flights_resealed(&*store, &old, &new).await?;
    if configured_key.is_some() {
        return Ok(format!(
            "re-sealed {count} secret value(s){flights} under the key given as --new-key. Start every \
             admin that shares this database with --secret-key set to that key."
        ));
    }
    replace_key_file(&pending, &key_path)?;
    Ok(format!(
        "re-sealed {count} secret value(s){flights} under a new key, now in {}. Start every admin that \
         shares this database with that key file (or its content as --secret-key).",
        key_path.display()
    ))
}

/// A rotation stopped between the database commit and the rename: whichever key opens the
/// stored values is the one to keep.
async fn finish_unfinished(
    store: &dyn store::Store,
    old: &SecretBox,
    staged_hex: &str,
    key_path: &Path,
    pending: &Path,
) -> Result<String, KeyError> {
    let staged = SecretBox::from_hex(staged_hex).map_err(KeyError::BadNewKey)?;
    // A read-only pass: every value is handed back unchanged unless it opens with neither key,
    // which aborts (and changes nothing either way).
    let first_opens_with_staged = std::sync::Mutex::new(None::<bool>);
    let outcome = store
        .reseal_all(&|value| {
            let with_staged = opens(&staged, value);
            first_opens_with_staged
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get_or_insert(with_staged);
            (with_staged || opens(old, value)).then(|| value.sealed.clone())
        })
        .await?;
    if let Err(value) = outcome {
        return Err(KeyError::NeitherKey(describe(&value)));
    }
    let opened_by_staged =
        first_opens_with_staged.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    if opened_by_staged == Some(false) {
        std::fs::remove_file(pending)
            .map_err(|source| KeyError::Write { path: pending.to_owned(), source })?;
        return Ok(format!(
            "the last rotation did not reach the database; removed {} and kept {}. Run the command again \
             to rotate.",
            pending.display(),
            key_path.display()
        ));
    }
    let flights = flights_resealed(store, old, &staged).await?;
    replace_key_file(pending, key_path)?;
    Ok(format!("finished the last rotation{flights}: the database's key is now in {}.", key_path.display()))
}

/// Re-seals the flight records (`replay/reseal.rs`); what it did, for the command's answer.
async fn flights_resealed(
    store: &dyn store::Store,
    old: &SecretBox,
    new: &SecretBox,
) -> Result<String, KeyError> {
    let done = crate::replay::reseal_flights(store, old, new).await?;
    tracing::info!(
        resealed = done.resealed,
        already = done.already,
        unopened = done.unopened,
        "flight records re-sealed"
    );
    let mut said = format!(" and {} flight record(s)", done.resealed + done.already);
    if done.unopened > 0 {
        said.push_str(&format!(
            " ({} record(s) opened by neither key were left as they were)",
            done.unopened
        ));
    }
    Ok(said)
}

/// The key in `path`; `None` if the file does not exist.
fn read_key(path: &Path) -> Result<Option<String>, KeyError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(KeyError::Read { path: path.to_owned(), source }),
    }
}

fn write_private(path: &Path, key: &str) -> Result<(), KeyError> {
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
        file.write_all(format!("{key}\n").as_bytes())?;
        file.sync_all()
    };
    write().map_err(|source| KeyError::Write { path: path.to_owned(), source })
}

/// Step 3: `pending` over `key_path`, then the directory synced so the rename survives a crash.
fn replace_key_file(pending: &Path, key_path: &Path) -> Result<(), KeyError> {
    std::fs::rename(pending, key_path)
        .map_err(|source| KeyError::Write { path: key_path.to_owned(), source })?;
    if let Some(dir) = key_path.parent()
        && let Ok(dir) = std::fs::File::open(dir)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}
