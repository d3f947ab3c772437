//! Contract checks for login sessions and API tokens.

use anyhow::ensure;
use jobwheel_admin::store::{NewApiToken, NewSession, UserId};

use crate::store::Admins;

pub(crate) async fn check(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let alice = UserId(7);
    let bob = UserId(8);
    let session = |hash: &str, user: UserId, expires_ms: i64| NewSession {
        id_hash: hash.to_owned(),
        user_id: user,
        csrf_token: format!("csrf-{hash}"),
        created_ms: 1_000,
        expires_ms,
    };
    a.insert_session(&session("s1", alice, 10_000)).await?;
    a.insert_session(&session("s2", alice, 20_000)).await?;
    a.insert_session(&session("s3", bob, 20_000)).await?;

    // Visible to the other admin until it expires.
    let loaded = b.load_session("s1", 9_999).await?.expect("live session");
    ensure!(loaded.user_id == alice && loaded.csrf_token == "csrf-s1" && loaded.expires_ms == 10_000);
    ensure!(b.load_session("s1", 10_000).await?.is_none(), "expired at its expiry instant");
    ensure!(b.load_session("nope", 0).await?.is_none());

    // A password change ends the user's other sessions only.
    ensure!(b.delete_user_sessions(alice, Some("s2")).await? == 1);
    ensure!(a.load_session("s2", 0).await?.is_some() && a.load_session("s3", 0).await?.is_some());
    ensure!(a.delete_session("s2").await? && !a.delete_session("s2").await?);
    ensure!(a.purge_sessions(20_000).await? == 1, "bob's expired session purged");
    ensure!(a.load_session("s3", 0).await?.is_none());
    a.insert_session(&session("s4", bob, 30_000)).await?;
    ensure!(a.delete_user_sessions(bob, None).await? == 1);

    // API tokens.
    let token = |name: &str, hash: &str, user: UserId| NewApiToken {
        user_id: user,
        name: name.to_owned(),
        token_hash: hash.to_owned(),
        created_ms: 5_000,
        scope: "write".to_owned(),
        expires_ms: None,
    };
    let t1 = a.add_api_token(&token("ci", "h1", alice)).await?;
    let t2 = b.add_api_token(&token("deploy", "h2", alice)).await?;
    let t3 = a.add_api_token(&token("bob's", "h3", bob)).await?;
    ensure!(t1 != t2 && t2 != t3);
    ensure!(a.add_api_token(&token("dup", "h1", bob)).await.is_err(), "token digests are unique");
    let listed: Vec<String> = b.list_api_tokens(alice).await?.into_iter().map(|t| t.name).collect();
    ensure!(listed == ["deploy", "ci"], "newest first: {listed:?}");
    let found = b.find_api_token("h3").await?.expect("token");
    ensure!(found.id == t3 && found.user_id == bob && found.last_used_ms.is_none());
    a.touch_api_token(t3, 6_000).await?;
    ensure!(b.find_api_token("h3").await?.expect("token").last_used_ms == Some(6_000));
    ensure!(!a.delete_api_token(t3, alice).await?, "one user cannot delete another's token");
    ensure!(a.delete_api_token(t1, alice).await?);
    ensure!(b.find_api_token("h1").await?.is_none());
    ensure!(a.delete_user_tokens(alice).await? == 1);
    ensure!(a.list_api_tokens(alice).await?.is_empty() && a.list_api_tokens(bob).await?.len() == 1);
    Ok(())
}
