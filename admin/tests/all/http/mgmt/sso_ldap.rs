//! LDAP sign-in (docs/sso.md) against Debian's OpenLDAP `slapd` with a real directory: the admin
//! binds as the user, searches their groups and maps them to the role and executor groups;
//! someone in no mapped group, a wrong or empty password and a local name are refused; with
//! `local_passwords = "administrators"` only administrators keep their jobwheel passwords; a
//! change in the directory takes effect at the next login.

use jobwheel_admin::sso::SsoConfig;
use jobwheel_tests::sso_servers::{SLAPD_ROOT_DN, SLAPD_ROOT_PASSWORD, Slapd};
use serde_json::{Value, json};

use super::{Client, Env};

const LDIF: &str = "\
dn: dc=example,dc=org\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n\n\
dn: ou=people,dc=example,dc=org\nobjectClass: organizationalUnit\nou: people\n\n\
dn: ou=groups,dc=example,dc=org\nobjectClass: organizationalUnit\nou: groups\n\n\
dn: uid=carol,ou=people,dc=example,dc=org\nobjectClass: inetOrgPerson\nuid: carol\ncn: Carol\nsn: C\nuserPassword: carol-pw\n\n\
dn: uid=dave,ou=people,dc=example,dc=org\nobjectClass: inetOrgPerson\nuid: dave\ncn: Dave\nsn: D\nuserPassword: dave-pw\n\n\
dn: uid=eve,ou=people,dc=example,dc=org\nobjectClass: inetOrgPerson\nuid: eve\ncn: Eve\nsn: E\nuserPassword: eve-pw\n\n\
dn: uid=frank,ou=people,dc=example,dc=org\nobjectClass: inetOrgPerson\nuid: frank\ncn: Frank\nsn: F\nuserPassword: frank-pw\n\n\
dn: cn=Jobwheel-Admins,ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: Jobwheel-Admins\n\
member: uid=carol,ou=people,dc=example,dc=org\n\n\
dn: cn=team-billing,ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: team-billing\n\
member: uid=dave,ou=people,dc=example,dc=org\nmember: uid=frank,ou=people,dc=example,dc=org\n\n\
dn: ou=team,ou=groups,dc=example,dc=org\nobjectClass: organizationalUnit\nou: team\n\n\
dn: cn=jobwheel-admins,ou=team,ou=groups,dc=example,dc=org\nobjectClass: groupOfNames\ncn: jobwheel-admins\n\
member: uid=eve,ou=people,dc=example,dc=org\n\n\
dn: cn=staff,ou=groups,dc=example,dc=org\nobjectClass: posixGroup\ncn: staff\ngidNumber: 500\n\
memberUid: carol\nmemberUid: dave\nmemberUid: eve\n";

fn settings(url: &str) -> SsoConfig {
    SsoConfig::parse(&format!(
        r#"
local_passwords = "administrators"

[[ldap]]
id = "corp"
name = "Corporate directory"
url = "{url}"
insecure = true
bind_dn = "uid={{username}},ou=people,dc=example,dc=org"
group_base = "ou=groups,dc=example,dc=org"

[[ldap.map]]
group = "cn=jobwheel-admins, ou=groups, dc=example, dc=org"
role = "admin"

[[ldap.map]]
group = "cn=team-billing,ou=groups,dc=example,dc=org"
executor_groups = ["billing-app"]
"#
    ))
    .expect("valid settings")
}

async fn ldap_login(env: &Env, username: &str, password: &str) -> (u16, Value) {
    env.anonymous()
        .post("/api/v1/session", json!({"username": username, "password": password, "provider": "corp"}))
        .await
}

/// A client holding the session a 200 login answered with.
async fn signed_in(env: &Env, username: &str, password: &str) -> (Client, Value) {
    let mut client = env.anonymous();
    let response = client
        .request(reqwest::Method::POST, "/api/v1/session")
        .json(&json!({"username": username, "password": password, "provider": "corp"}))
        .send()
        .await
        .expect("admin answers");
    let cookie = response.headers().get("set-cookie").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (status, body) = super::reply(response).await;
    assert_eq!(status, 200, "LDAP login of {username}: {body}");
    client.cookie = cookie.and_then(|c| c.split(';').next().map(str::to_owned));
    client.csrf = body["csrfToken"].as_str().map(str::to_owned);
    (client, body)
}

#[tokio::test]
async fn directory_users_sign_in_with_the_rights_their_groups_map_to() -> anyhow::Result<()> {
    let Some(slapd) = Slapd::start(LDIF).await? else { return Ok(()) };
    let config = settings(&slapd.url);
    let env = Env::start_configured(|c| c.sso = Some(config)).await?;
    env.admin_user("root").await;
    let billing = env.group("billing-app").await;
    let other = env.group("other-app").await;
    env.normal_user("frank", &[other]).await;

    let (status, offered) = env.anonymous().get("/api/v1/sso").await;
    assert_eq!(status, 200);
    assert_eq!(
        offered,
        json!({"localPasswords": "administrators",
               "providers": [{"id": "corp", "name": "Corporate directory", "kind": "ldap"}]})
    );

    // Carol's group is `Jobwheel-Admins` in the directory: LDAP names compare ignoring case.
    let (_, carol) = signed_in(&env, "carol", "carol-pw").await;
    assert_eq!(
        (carol["user"]["username"].as_str(), carol["user"]["role"].as_i64()),
        (Some("carol"), Some(1))
    );

    let (dave, body) = signed_in(&env, "dave", "dave-pw").await;
    assert_eq!(body["user"]["role"], 0);
    assert_eq!(body["user"]["permission"], json!([billing.0]));
    assert_eq!(dave.get(&format!("/api/v1/jobs?jobGroup={}", billing.0)).await.0, 200);
    assert_eq!(dave.get(&format!("/api/v1/jobs?jobGroup={}", other.0)).await.0, 403);

    // The directory makes dave an administrator: his next login says so, on the same account.
    add_member(
        &slapd.url,
        "cn=Jobwheel-Admins,ou=groups,dc=example,dc=org",
        "uid=dave,ou=people,dc=example,dc=org",
    )
    .await?;
    let (_, body) = signed_in(&env, "dave", "dave-pw").await;
    assert_eq!(body["user"]["role"], 1, "{body}");
    let root = env.login("root").await;
    let (_, users) = root.get("/api/v1/users?username=dave").await;
    assert_eq!(users["total"], 1, "the same account, not a second one: {users}");
    let (_, audit) = root.get("/api/v1/audit?action=session.login&username=dave").await;
    assert_eq!(audit["items"][0]["detail"]["provider"], "corp", "{audit}");

    // Outside every mapped group — eve is only in a look-alike `cn=jobwheel-admins` that someone
    // created in another branch of the directory (review N5): the right password, no account.
    let (status, refused) = ldap_login(&env, "eve", "eve-pw").await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused["msg"].as_str().is_some_and(|m| m.contains("none of the groups")), "{refused}");
    assert_eq!(env.store().find_user("eve").await?, None, "no account is made for eve");

    // A local account of the same name is not taken over by the directory's frank.
    let (status, body) = ldap_login(&env, "frank", "frank-pw").await;
    assert_eq!(status, 403, "{body}");
    assert!(body["msg"].as_str().is_some_and(|m| m.contains("already exists")), "{body}");

    // Local passwords: administrators only.
    let (status, body) = env
        .anonymous()
        .post("/api/v1/session", json!({"username": "frank", "password": super::PASSWORD}))
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(body["msg"].as_str().is_some_and(|m| m.contains("password sign-in is turned off")), "{body}");
    assert_eq!(env.login("root").await.get("/api/v1/session").await.0, 200, "administrators keep theirs");

    // Wrong, empty (an "unauthenticated bind" the directory would accept), wildcard and unknown
    // names, and a directory account's password tried as a jobwheel one: refused, and counted
    // by the same throttle as password logins, which stops the sixth.
    let (status, _) =
        env.anonymous().post("/api/v1/session", json!({"username": "dave", "password": "dave-pw"})).await;
    assert_eq!(status, 401, "directory accounts have no jobwheel password");
    for (name, password) in [("dave", "wrong"), ("dave", ""), ("*", "dave-pw"), ("nobody", "x")] {
        let (status, body) = ldap_login(&env, name, password).await;
        assert_eq!(status, 401, "{name}/{password:?}: {body}");
    }
    assert_eq!(ldap_login(&env, "dave", "dave-pw").await.0, 429, "the throttle holds for LDAP logins");
    env.admin.stop().await
}

async fn add_member(url: &str, group: &str, member: &str) -> anyhow::Result<()> {
    change_member(url, group, ldap3::Mod::Add("member", std::collections::HashSet::from([member]))).await
}

async fn remove_member(url: &str, group: &str, member: &str) -> anyhow::Result<()> {
    change_member(url, group, ldap3::Mod::Delete("member", std::collections::HashSet::from([member]))).await
}

async fn change_member(url: &str, group: &str, change: ldap3::Mod<&str>) -> anyhow::Result<()> {
    let (conn, mut ldap) = ldap3::LdapConnAsync::new(url).await?;
    ldap3::drive!(conn);
    ldap.simple_bind(SLAPD_ROOT_DN, SLAPD_ROOT_PASSWORD).await?.success()?;
    ldap.modify(group, vec![change]).await?.success()?;
    ldap.unbind().await?;
    Ok(())
}

const ADMINS: &str = "cn=Jobwheel-Admins,ou=groups,dc=example,dc=org";

/// A `write` API token made by `client`'s user, and the proof that it acts as an administrator
/// (it adds a user, the review's example of what a departed administrator could still do).
async fn admin_token(env: &Env, client: &Client, probe: &str) -> String {
    let (status, made) = client.post("/api/v1/tokens", json!({"name": probe, "scope": "write"})).await;
    assert_eq!(status, 201, "{made}");
    let token = made["token"].as_str().expect("token").to_owned();
    let (status, added) = env
        .anonymous()
        .with_token(&token)
        .post("/api/v1/users", json!({"username": probe, "password": "pw-12345", "role": 0}))
        .await;
    assert!(status == 201 || status == 200, "{added}");
    token
}

/// Review N4, from the departed administrator's side: removed from the directory's admin group,
/// carol keeps a session and a `write` token. Her next sign-in attempt is refused and takes
/// both away with her rights at once; dave, who never signs in again, loses his within the
/// configured `reconfirm_secs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_removed_at_the_directory_loses_role_sessions_and_tokens() -> anyhow::Result<()> {
    let Some(slapd) = Slapd::start(LDIF).await? else { return Ok(()) };
    let patient = settings(&slapd.url);
    let env = Env::start_configured(|c| c.sso = Some(patient)).await?;
    let (carol, _) = signed_in(&env, "carol", "carol-pw").await;
    let token = admin_token(&env, &carol, "probe-one").await;
    // A `groupOfNames` keeps at least one member.
    add_member(&slapd.url, ADMINS, "uid=frank,ou=people,dc=example,dc=org").await?;
    remove_member(&slapd.url, ADMINS, "uid=carol,ou=people,dc=example,dc=org").await?;
    let (status, refused) = ldap_login(&env, "carol", "carol-pw").await;
    assert_eq!(status, 403, "{refused}");
    let with_token = env.anonymous().with_token(&token);
    let (status, _) = with_token
        .post("/api/v1/users", json!({"username": "probe-two", "password": "pw-12345", "role": 1}))
        .await;
    assert_eq!(status, 401, "the token went with her rights");
    assert_eq!(carol.get("/api/v1/session").await.0, 401, "and her session");
    let row = env.store().find_user("carol").await?.expect("the account stays, without rights");
    assert_eq!((row.user.role, row.user.permission), (0, None));
    env.admin.stop().await?;

    // Dave never tries to sign in again: the provider's word runs out after reconfirm_secs.
    let mut hasty = settings(&slapd.url);
    hasty.reconfirm_secs = 3;
    let env = Env::start_configured(|c| c.sso = Some(hasty)).await?;
    add_member(&slapd.url, ADMINS, "uid=dave,ou=people,dc=example,dc=org").await?;
    let (dave, body) = signed_in(&env, "dave", "dave-pw").await;
    assert_eq!(body["user"]["role"], 1, "{body}");
    let token = admin_token(&env, &dave, "probe-three").await;
    remove_member(&slapd.url, ADMINS, "uid=dave,ou=people,dc=example,dc=org").await?;
    let with_token = env.anonymous().with_token(&token);
    crate::http::eventually("dave's token refused without a sign-in", || async {
        (with_token.get("/api/v1/session").await.0 == 401).then_some(())
    })
    .await;
    let (status, body) = dave.get("/api/v1/session").await;
    assert_eq!(status, 401, "and his session: {body}");
    assert!(body["msg"].as_str().unwrap_or_default().contains("sign in through it again"), "{body}");
    env.admin.stop().await
}
