//! Kubernetes, tested (issue 60 item 3; docs/kubernetes.md). The manifests of
//! `deploy/kubernetes/` are validated offline against Kubernetes 1.34's schemas with PyPI's
//! `kubernetes-validate` (strict: an unknown field fails), and each daemon is run as its image
//! and manifest would run it, with no container runtime: the Containerfile's user and
//! environment, the manifest's arguments and environment (secrets filled by the test), its
//! user, and a read-only root file system with the manifest's volumes as the only writable
//! places (bubblewrap). Two admins on PostgreSQL and a dial-out executor then answer the probes
//! the manifests name, run a job, and the executor drains on SIGTERM: a run in flight finishes
//! and is reported before the process exits, well within the pod's grace period.
//!
//! What differs from a pod, and why: ports are free loopback ports (the manifests' 8080/9999
//! would clash between tests), and the executor dials the admins at those ports instead of
//! their names in the headless Service (no cluster DNS here).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use jobwheel_tests::api::Api;
use jobwheel_tests::cluster::{binary, free_port};
use jobwheel_tests::sample_jobs::sample_job;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::API_TOKEN;

const KUBERNETES_VERSION: &str = "1.34.0";
const MANIFESTS: [&str; 3] = ["postgres.yaml", "admin.yaml", "executor.yaml"];
const SECRET_KEY: &str = "7d3f0c2b9a8e4d6f1b0a9c8e7d6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f";

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// `kubernetes-validate` from scripts/test.sh's venv; `None` outside CI without it.
fn validator() -> anyhow::Result<Option<PathBuf>> {
    match std::env::var_os("JOBWHEEL_KUBERNETES_VALIDATE") {
        Some(path) => Ok(Some(PathBuf::from(path))),
        None if std::env::var_os("CI").is_some() => bail!("JOBWHEEL_KUBERNETES_VALIDATE must be set in CI"),
        None => Ok(None),
    }
}

/// The documents of a YAML file as JSON, parsed by the validator venv's PyYAML.
async fn documents(validator: &Path, file: &Path) -> anyhow::Result<Vec<Value>> {
    let python = validator.with_file_name("python");
    let script =
        "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))";
    let out = Command::new(python).args(["-c", script]).arg(file).output().await?;
    ensure!(out.status.success(), "cannot read {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    Ok(serde_json::from_slice(&out.stdout)?)
}

async fn validate(validator: &Path, file: &Path) -> anyhow::Result<std::process::Output> {
    Ok(Command::new(validator)
        .args(["--strict", "--quiet", "-k", KUBERNETES_VERSION])
        .arg(file)
        .output()
        .await?)
}

pub(crate) async fn manifests_validate() -> anyhow::Result<()> {
    let Some(validator) = validator()? else { return Ok(()) };
    let dir = repository().join("deploy/kubernetes");
    for name in MANIFESTS {
        let out = validate(&validator, &dir.join(name)).await?;
        ensure!(
            out.status.success(),
            "{name} is not valid Kubernetes {KUBERNETES_VERSION}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The validator does refuse: a misspelt field fails it.
    let tmp = tempfile::tempdir()?;
    let broken = tmp.path().join("broken.yaml");
    let text = std::fs::read_to_string(dir.join("executor.yaml"))?;
    std::fs::write(&broken, text.replacen("readOnlyRootFilesystem", "readOnlyRootFilesytem", 1))?;
    ensure!(!validate(&validator, &broken).await?.status.success(), "a misspelt field passed");
    Ok(())
}

/// What a Containerfile says about how the image runs its binary.
#[derive(Debug)]
struct Image {
    user: (u32, u32),
    env: BTreeMap<String, String>,
    entrypoint: String,
}

fn image(name: &str) -> anyhow::Result<Image> {
    let text = std::fs::read_to_string(repository().join(format!("deploy/container/{name}.Containerfile")))?;
    // The final stage only.
    let last = text.rsplit_once("\nFROM ").map_or(text.as_str(), |(_, stage)| stage);
    let (mut user, mut env, mut entrypoint) = (None, BTreeMap::new(), None);
    for line in last.lines() {
        if let Some(rest) = line.strip_prefix("USER ") {
            let (uid, gid) = rest.trim().split_once(':').context("USER uid:gid")?;
            user = Some((uid.parse()?, gid.parse()?));
        } else if let Some(rest) = line.strip_prefix("ENV ") {
            let (key, value) = rest.trim().split_once('=').context("ENV KEY=value")?;
            env.insert(key.to_owned(), value.to_owned());
        } else if let Some(rest) = line.strip_prefix("ENTRYPOINT ") {
            let list: Vec<String> = serde_json::from_str(rest.trim())?;
            entrypoint = list.into_iter().next();
        }
    }
    Ok(Image { user: user.context("no USER")?, env, entrypoint: entrypoint.context("no ENTRYPOINT")? })
}

/// The first container of the workload `kind` in a manifest, with its pod spec.
async fn workload(validator: &Path, file: &str, kind: &str) -> anyhow::Result<(Value, Value)> {
    let docs = documents(validator, &repository().join("deploy/kubernetes").join(file)).await?;
    let doc = docs.into_iter().find(|d| d["kind"] == kind).with_context(|| format!("no {kind} in {file}"))?;
    let pod = doc["spec"]["template"]["spec"].clone();
    Ok((pod["containers"][0].clone(), pod))
}

/// A daemon started as its pod would run it.
struct Pod {
    child: Child,
    log: PathBuf,
    /// The manifest's probes, as URLs on the daemon's port.
    liveness: String,
    readiness: String,
    grace: Duration,
}

impl Pod {
    /// Runs `container` of `pod` from `image` under bubblewrap; `secrets` fill `secretKeyRef`s
    /// by key, `overrides` replace environment values that name the cluster (ports, addresses).
    async fn start(
        image: &Image,
        (container, pod): &(Value, Value),
        secrets: &BTreeMap<&str, String>,
        overrides: &BTreeMap<&str, String>,
        port: u16,
        log: PathBuf,
    ) -> anyhow::Result<Pod> {
        let security = &container["securityContext"];
        let pod_security = &pod["securityContext"];
        ensure!(pod_security["runAsNonRoot"] == true, "the pod must run as non-root");
        ensure!(security["readOnlyRootFilesystem"] == true, "the root file system must be read-only");
        ensure!(
            security["allowPrivilegeEscalation"] == false
                && security["capabilities"]["drop"] == json!(["ALL"])
        );
        let uid = u32::try_from(pod_security["runAsUser"].as_u64().context("runAsUser")?)?;
        let gid = u32::try_from(pod_security["runAsGroup"].as_u64().context("runAsGroup")?)?;
        ensure!((uid, gid) == image.user, "the manifest's user {uid}:{gid} is the image's {:?}", image.user);

        let mut env = image.env.clone();
        for var in container["env"].as_array().into_iter().flatten() {
            let name = var["name"].as_str().context("env name")?.to_owned();
            let value = match (&var["value"], &var["valueFrom"]["secretKeyRef"]["key"]) {
                (Value::String(value), _) => value.clone(),
                (_, Value::String(key)) => {
                    secrets.get(key.as_str()).with_context(|| format!("secret {key}"))?.clone()
                }
                _ => bail!("env {name}: neither a value nor a secret"),
            };
            env.insert(name, value);
        }
        for (name, value) in overrides {
            ensure!(env.contains_key(*name), "{name} is not set by the image or the manifest");
            env.insert((*name).to_owned(), value.clone());
        }
        let program =
            Path::new(&image.entrypoint).file_name().context("entrypoint")?.to_string_lossy().into_owned();
        let args: Vec<String> = container["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();

        // A read-only root; the pod's volumes (emptyDir) writable, as the kubelet makes them.
        let mut command = Command::new("bwrap");
        command.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--die-with-parent"]);
        let mounts: Vec<&str> = container["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["mountPath"].as_str().context("mountPath"))
            .collect::<anyhow::Result<_>>()?;
        // A mount point this machine lacks (the image would have it) is made on an empty
        // read-only layer over its nearest existing ancestor, as a runtime creates it.
        for path in &mounts {
            let missing = Path::new(path);
            if missing.exists() {
                continue;
            }
            let ancestor = missing.ancestors().find(|a| a.exists()).context("an existing ancestor")?;
            let ancestor = ancestor.to_str().context("path")?;
            command.args(["--tmpfs", ancestor, "--dir", path, "--remount-ro", ancestor]);
        }
        for path in &mounts {
            command.args(["--perms", "1777", "--tmpfs", path]);
        }
        command
            .args([
                "--",
                "setpriv",
                "--reuid",
                &uid.to_string(),
                "--regid",
                &gid.to_string(),
                "--clear-groups",
            ])
            .args(["--no-new-privs", "--"])
            .arg(binary(&program)?)
            .args(&args)
            .env_clear()
            .envs(&env)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .kill_on_drop(true);
        let child = command.spawn().context("bwrap (scripts/test.sh installs bubblewrap)")?;
        let probe = |kind: &str| -> anyhow::Result<String> {
            let path = container[kind]["httpGet"]["path"].as_str().with_context(|| format!("{kind} path"))?;
            Ok(format!("http://127.0.0.1:{port}{path}"))
        };
        let grace =
            Duration::from_secs(pod["terminationGracePeriodSeconds"].as_u64().context("grace period")?);
        Ok(Pod { child, log, liveness: probe("livenessProbe")?, readiness: probe("readinessProbe")?, grace })
    }

    /// The daemon's own process: bubblewrap's child (setpriv execs the daemon).
    fn daemon_pid(&self) -> anyhow::Result<u32> {
        let bwrap = self.child.id().context("bwrap exited")?;
        let children = std::fs::read_to_string(format!("/proc/{bwrap}/task/{bwrap}/children"))?;
        let pid: u32 = children.split_whitespace().next().context("no child yet")?.parse()?;
        // bubblewrap may keep a process of its own in between.
        let grandchildren =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        Ok(grandchildren.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(pid))
    }

    async fn wait_probe(&mut self, url: &str, what: &str) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if reqwest::get(url).await.is_ok_and(|r| r.status() == 200) {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!("{what} exited with {status}:\n{}", std::fs::read_to_string(&self.log)?);
            }
            ensure!(tokio::time::Instant::now() < deadline, "{what}: {url} not 200 within 60 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The daemon runs as `uid` with `/` mounted read-only.
    fn check_confined(&self, uid: u32) -> anyhow::Result<()> {
        let pid = self.daemon_pid()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let uids = status.lines().find(|l| l.starts_with("Uid:")).context("Uid")?;
        ensure!(uids.split_whitespace().skip(1).all(|u| u == uid.to_string()), "runs as {uids}");
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo"))?;
        let root = mounts.lines().find(|l| l.split_whitespace().nth(4) == Some("/")).context("root mount")?;
        let options = root.split_whitespace().nth(5).unwrap_or_default();
        ensure!(options.split(',').any(|o| o == "ro"), "the root is mounted {options}");
        Ok(())
    }

    /// SIGTERM to the daemon, as the kubelet sends it; how long it took to exit and its status.
    async fn terminate(&mut self) -> anyhow::Result<(Duration, std::process::ExitStatus)> {
        let pid = i32::try_from(self.daemon_pid()?)?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM)?;
        let started = tokio::time::Instant::now();
        let status = tokio::time::timeout(self.grace, self.child.wait())
            .await
            .context("not exited within the pod's grace period")??;
        Ok((started.elapsed(), status))
    }
}

pub(crate) async fn run(url: &str) -> anyhow::Result<()> {
    let Some(validator) = validator()? else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(url).await?;
    jobwheel_tests::fixtures::api_administrator(&*store, "ops", API_TOKEN).await?;
    let admin_workload = workload(&validator, "admin.yaml", "StatefulSet").await?;
    let executor_workload = workload(&validator, "executor.yaml", "Deployment").await?;
    let app = executor_workload.0["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == "JOBWHEEL_APP_NAME")
        .and_then(|v| v["value"].as_str())
        .context("the executor's AppName")?
        .to_owned();
    let group = i64::from(jobwheel_tests::fixtures::auto_group(&*store, &app).await?.0);
    let secrets = BTreeMap::from([
        ("database-url", url.to_owned()),
        ("access-token", jobwheel_tests::TOKEN.to_owned()),
        ("secret-key", SECRET_KEY.to_owned()),
    ]);

    // Two admins, as the StatefulSet's two pods.
    let admin_image = image("admin")?;
    let mut admins = Vec::new();
    for n in 0..2 {
        let port = free_port()?;
        let overrides = BTreeMap::from([("JOBWHEEL_LISTEN", format!("127.0.0.1:{port}"))]);
        let log = dir.path().join(format!("admin-{n}.log"));
        let mut pod = Pod::start(&admin_image, &admin_workload, &secrets, &overrides, port, log).await?;
        let (liveness, readiness) = (pod.liveness.clone(), pod.readiness.clone());
        pod.wait_probe(&liveness, "an admin").await?;
        pod.wait_probe(&readiness, "an admin").await?;
        pod.check_confined(admin_image.user.0)?;
        admins.push((format!("http://127.0.0.1:{port}/"), pod));
    }

    // A dial-out executor, as one pod of the Deployment, with a socket to each admin.
    let executor_image = image("executor")?;
    let port = free_port()?;
    let addresses: Vec<String> = admins.iter().map(|(base, _)| base.clone()).collect();
    let overrides = BTreeMap::from([
        ("JOBWHEEL_LISTEN", format!("127.0.0.1:{port}")),
        ("JOBWHEEL_ADMIN_ADDRESSES", addresses.join(",")),
    ]);
    let log = dir.path().join("executor.log");
    let mut executor =
        Pod::start(&executor_image, &executor_workload, &secrets, &overrides, port, log).await?;
    let (liveness, readiness) = (executor.liveness.clone(), executor.readiness.clone());
    executor.wait_probe(&liveness, "the executor").await?;
    executor.wait_probe(&readiness, "the executor").await?;
    executor.check_confined(executor_image.user.0)?;

    // A run long enough to be in flight at SIGTERM: SHA-256 over 256 MiB in the Wasm sandbox
    // (about 4 s here).
    let api = Api::new(addresses[1].trim_end_matches('/'), API_TOKEN);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !api.get(&format!("/groups/{group}")).await?["addressList"]
        .as_str()
        .unwrap_or_default()
        .contains("dial://")
    {
        ensure!(tokio::time::Instant::now() < deadline, "the executor did not register");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let job = api
        .job(group, "in flight at SIGTERM", json!({"glueType": "GLUE_WASM", "executorHandler": ""}))
        .await?;
    let upload = reqwest::Client::new()
        .post(format!("{}api/v1/jobs/{job}/wasm?remark=kubernetes", addresses[1]))
        .bearer_auth(API_TOKEN)
        .header("content-type", "application/wasm")
        .body(sample_job("sha256"))
        .send()
        .await?;
    ensure!(upload.status().is_success(), "upload: {}", upload.text().await?);
    api.post(&format!("/jobs/{job}/trigger"), json!({"executorParam": "256"})).await?;
    api.wait_logs(job, Duration::from_secs(30), "the run started", |logs| {
        logs.iter().any(|l| l["triggerCode"] == 200)
    })
    .await?;
    let running = api.logs(job).await?;
    ensure!(running[0]["handleCode"] == 0, "still running at SIGTERM: {running:#?}");
    let (took, status) = executor.terminate().await?;
    ensure!(
        status.success(),
        "the executor exited with {status}:\n{}",
        std::fs::read_to_string(&executor.log)?
    );
    let logs = api.logs(job).await?;
    ensure!(logs.len() == 1 && logs[0]["handleCode"] == 200, "the run finished and was reported: {logs:#?}");
    let content = api.content(logs[0]["id"].as_i64().context("log id")?).await?;
    ensure!(content.contains("sha256 of 256 MiB"), "its log is kept by the admins: {content}");
    ensure!(took < executor.grace, "drained in {took:?}, within {:?}", executor.grace);

    for (_, mut admin) in admins {
        let (_, status) = admin.terminate().await?;
        ensure!(status.success(), "an admin exited with {status}:\n{}", std::fs::read_to_string(&admin.log)?);
    }
    Ok(())
}
