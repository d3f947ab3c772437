//! Single sign-on with OpenID Connect (docs/sso.md) in the browser, against the npm
//! `oidc-provider` running locally: the login page offers the provider; `alice` (in
//! `jobwheel-admins`) comes back an administrator, `bob` (in `team-billing`) a normal user who
//! manages the story's executor group only, and `mallory` (in neither) is sent back to the login
//! page with the reason, without an account.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure};

use crate::driver::Browser;
use crate::stack::IDP;

/// How long one trip through the provider's pages may take.
const TRIP: Duration = Duration::from_secs(30);

pub(crate) async fn run(browser: &Browser, group_title: &str) -> anyhow::Result<()> {
    sign_out(browser).await?;

    sign_in(browser, "alice").await?;
    browser.wait_hash("/dashboard").await?;
    browser.wait_contains("#user-menu", "alice").await?;
    browser.find("#menu-users").await?;
    browser.screenshot("sso-signed-in").await?;
    sign_out(browser).await?;

    sign_in(browser, "bob").await?;
    browser.wait_hash("/dashboard").await?;
    browser.wait_contains("#user-menu", "bob").await?;
    let admin_menu = browser.js("return document.querySelector('#menu-users') !== null;").await?;
    ensure!(admin_menu == false, "bob is no administrator, yet the users menu is shown");
    // The story's group is bob's through the mapping of team-billing to its AppName.
    browser.route("#/jobs").await?;
    browser.wait_contains("#main", group_title).await?;
    sign_out(browser).await?;

    sign_in(browser, "mallory").await?;
    browser.wait_hash_containing("/login?error=").await?;
    let message = browser.wait_text("#login-error", "the refusal", |t| !t.is_empty()).await?;
    ensure!(message.contains("none of the groups"), "mallory's refusal says {message:?}");
    browser.screenshot("sso-refused").await?;
    // A crafted link's words are never shown on the real login page (review N15): the page
    // says its own text for the admin's codes, and a generic refusal for anything else.
    browser.go("/#/about-to-be-replaced").await?;
    browser.go("/#/login?error=Your+account+is+locked%3B+call+the+helpdesk+on+555-0100").await?;
    let shown = browser.wait_text("#login-error", "the page's own refusal", |t| !t.is_empty()).await?;
    ensure!(!shown.contains("helpdesk") && !shown.contains("555"), "the URL's words were shown: {shown:?}");
    // A provider user name with a zero-width space, a look-alike of `admin` (review N16): refused
    // for its name (`refused`), not only for its groups (`not_mapped`).
    // Out of the provider first: mallory is still signed in there.
    browser.client.delete_all_cookies().await?;
    sign_in(browser, "ad\u{200b}min").await?;
    browser.wait_hash_containing("/login?error=refused").await?;
    Ok(())
}

/// Out of jobwheel and out of the provider: its session cookie lives on 127.0.0.1 too, and
/// would otherwise sign the next user in as the last one.
async fn sign_out(browser: &Browser) -> anyhow::Result<()> {
    browser.click("#user-menu").await?;
    browser.click("#logout").await?;
    browser.find("#login-form").await?;
    browser.client.delete_all_cookies().await?;
    Ok(())
}

/// Clicks the provider's button and signs in as `name` at its development login page (any
/// password), granting consent when it asks.
async fn sign_in(browser: &Browser, name: &str) -> anyhow::Result<()> {
    browser.go("/#/login").await?;
    browser.click(&format!("#sso-{IDP}")).await?;
    browser.fill("input[name=login]", name).await?;
    browser.fill("input[name=password]", "any-password").await?;
    browser.click("button[type=submit]").await?;
    let deadline = Instant::now() + TRIP;
    loop {
        let url = browser.client.current_url().await?;
        if url.as_str().starts_with(&browser.base) {
            return Ok(());
        }
        // The consent page: one "Continue" button in the form that answers the consent prompt.
        let consent = "form:has(input[name=prompt][value=consent]) button[type=submit]";
        if let Ok(button) = browser.client.find(fantoccini::Locator::Css(consent)).await {
            let _ = button.click().await;
        }
        if Instant::now() > deadline {
            let page = browser.js("return document.body.innerText;").await?;
            bail!("{name} did not come back from the provider within {TRIP:?}; at {url}: {page}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
