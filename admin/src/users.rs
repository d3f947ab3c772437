//! `jobwheel-admin users …`: account tasks run from the command line against the database,
//! for when nobody can log in (a forgotten administrator password, an adopted database whose
//! passwords nobody knows).

use rand::Rng as _;

use crate::secrets::{self, SecretsError};
use crate::store::{self, StoreError};

/// `jobwheel-admin users <task>`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum UsersCommand {
    /// Gives USER a new random password, printed once on stdout, and ends its sessions.
    ResetPassword {
        /// The username.
        username: String,
    },
}

/// Why a task failed.
#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    /// No such user.
    #[error("no user named `{0}` in this database")]
    NoSuchUser(String),
    /// The database failed.
    #[error("database: {0}")]
    Store(#[from] StoreError),
    /// Hashing failed.
    #[error("cannot hash the new password: {0}")]
    Hash(#[from] SecretsError),
}

/// Characters of generated passwords: letters and digits without look-alikes (0/O, 1/l/I).
const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// 20 characters of a 57-letter alphabet: about 116 bits.
const PASSWORD_LEN: usize = 20;

/// Runs `command` on the database at `database_url`; what to print on stdout.
pub async fn run(database_url: &str, command: &UsersCommand) -> Result<String, UsersError> {
    let store = store::connect(database_url).await?;
    match command {
        UsersCommand::ResetPassword { username } => {
            let mut user =
                store.find_user(username).await?.ok_or_else(|| UsersError::NoSuchUser(username.clone()))?;
            let password = new_password();
            user.user.password = secrets::hash_password(&password)?;
            store.update_user(user.id, &user.user).await?;
            let ended = store.delete_user_sessions(user.id, None).await?;
            tracing::info!(username = %username, sessions_ended = ended, "password reset from the command line");
            Ok(password)
        }
    }
}

fn new_password() -> String {
    let mut rng = rand::rng();
    (0..PASSWORD_LEN).map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())])).collect()
}
