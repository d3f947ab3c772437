//! The real identity servers the single sign-on tests sign in against: Debian's OpenLDAP
//! `slapd` with a directory loaded from LDIF, and the npm `oidc-provider` package run by
//! `admin/tests/interop/oidc_provider.mjs`. Both listen on free ports of 127.0.0.1 and stop when
//! dropped. scripts/test.sh installs both; without them a test is skipped with a note, except
//! under `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

use crate::cluster::free_port;

/// How long a server may take to start listening.
const START: Duration = Duration::from_secs(20);

/// `Ok(None)` (skip) when `what` is missing outside CI; an error under `CI=true`.
fn missing<T>(what: &str) -> anyhow::Result<Option<T>> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        bail!("{what} is missing; scripts/test.sh installs it");
    }
    #[allow(clippy::print_stderr, reason = "a skipped test tells the person running it why")]
    {
        eprintln!("skipped: {what} is missing (scripts/test.sh installs it)");
    }
    Ok(None)
}

/// An OpenLDAP server with the suffix `dc=example,dc=org`.
pub struct Slapd {
    /// `ldap://127.0.0.1:PORT`.
    pub url: String,
    _child: Child,
    _dir: tempfile::TempDir,
}

/// The directory's administrator (for changes a test makes while the admin runs).
pub const SLAPD_ROOT_DN: &str = "cn=admin,dc=example,dc=org";
pub const SLAPD_ROOT_PASSWORD: &str = "root-secret";

impl Slapd {
    /// Loads `ldif` (entries below `dc=example,dc=org`, the suffix entry included) with
    /// `slapadd` and starts `slapd` on it.
    pub async fn start(ldif: &str) -> anyhow::Result<Option<Slapd>> {
        let slapd = Path::new("/usr/sbin/slapd");
        if !slapd.exists() {
            return missing("slapd (Debian's slapd package)");
        }
        let dir = tempfile::tempdir()?;
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data)?;
        let conf = dir.path().join("slapd.conf");
        std::fs::write(&conf, slapd_conf(dir.path(), &data))?;
        std::fs::write(dir.path().join("data.ldif"), ldif)?;
        let loaded = Command::new("/usr/sbin/slapadd")
            .args(["-q", "-f"])
            .arg(&conf)
            .arg("-l")
            .arg(dir.path().join("data.ldif"))
            .output()
            .await
            .context("cannot run slapadd")?;
        if !loaded.status.success() {
            bail!("slapadd failed: {}", String::from_utf8_lossy(&loaded.stderr));
        }
        let port = free_port()?;
        let url = format!("ldap://127.0.0.1:{port}");
        // `-d 0`: stay in the foreground (a child we can stop) without debug output.
        let child = Command::new(slapd)
            .args(["-d", "0", "-h", &format!("{url}/"), "-f"])
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start slapd")?;
        let deadline = tokio::time::Instant::now() + START;
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            if tokio::time::Instant::now() > deadline {
                bail!("slapd did not listen on {url} within {START:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Some(Slapd { url, _child: child, _dir: dir }))
    }
}

fn slapd_conf(dir: &Path, data: &Path) -> String {
    format!(
        "include /etc/ldap/schema/core.schema\n\
         include /etc/ldap/schema/cosine.schema\n\
         include /etc/ldap/schema/inetorgperson.schema\n\
         include /etc/ldap/schema/nis.schema\n\
         pidfile {pid}\n\
         modulepath /usr/lib/ldap\n\
         moduleload back_mdb\n\
         database mdb\n\
         maxsize 10485760\n\
         suffix \"dc=example,dc=org\"\n\
         rootdn \"{SLAPD_ROOT_DN}\"\n\
         rootpw {SLAPD_ROOT_PASSWORD}\n\
         directory {data}\n\
         access to attrs=userPassword by anonymous auth by self read by * none\n\
         access to * by users read by * none\n",
        pid = dir.join("slapd.pid").display(),
        data = data.display(),
    )
}

/// The npm `oidc-provider` with the accounts of `oidc_provider.mjs`: any name signs in at its
/// login page; `alice` is in `jobwheel-admins`, `bob` in `team-billing`, `mallory` in neither.
pub struct OidcProvider {
    /// The issuer URL.
    pub issuer: String,
    _child: Child,
}

impl OidcProvider {
    /// Starts the provider for the client `jobwheel` with `client_secret`, redirecting to
    /// `redirect_uri`. The package comes from `JOBWHEEL_OIDC_PROVIDER` (its directory).
    pub async fn start(redirect_uri: &str, client_secret: &str) -> anyhow::Result<Option<OidcProvider>> {
        let Some(package) = std::env::var_os("JOBWHEEL_OIDC_PROVIDER").map(PathBuf::from) else {
            return missing("the npm package oidc-provider (JOBWHEEL_OIDC_PROVIDER)");
        };
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../admin/tests/interop/oidc_provider.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .arg(&package)
            .arg(redirect_uri)
            .arg(client_secret)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("cannot start node")?;
        let stdout = child.stdout.take().context("the provider's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(START, lines.next_line())
            .await
            .context("oidc-provider did not start in time")??
            .context("oidc-provider stopped before listening")?;
        let started: serde_json::Value = serde_json::from_str(&line).context("oidc-provider's first line")?;
        let issuer =
            started["issuer"].as_str().context("no issuer in oidc-provider's first line")?.to_owned();
        // The package logs notices to stdout later; a closed pipe would kill it (EPIPE).
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Some(OidcProvider { issuer, _child: child }))
    }
}
