// Login (upstream /auth/login): username, password, "remember me"; and the single sign-on
// providers of GET /sso (docs/sso.md): a button per OpenID Connect provider, and LDAP
// directories as a choice of where the username and password are checked.

import { get, post } from '../api.js';
import { h, routeQuery } from '../dom.js';
import { t } from '../i18n.js';

let languageSelect = () => null;

/** The app hands in its language picker so the login page can offer it too. */
export function setLanguageSelect(make) {
  languageSelect = make;
}

export async function render({ main, app }) {
  if (app.user) {
    location.hash = '#/dashboard';
    return;
  }
  const offered = await get('/sso').catch(() => ({ providers: [] }));
  const providers = offered.providers || [];
  const error = h('div', { class: 'alert alert-error', hidden: true, role: 'alert', id: 'login-error' });
  // A single sign-on that failed comes back here with a code from the admin's fixed list; the
  // page shows its own text for it, never words from the URL (review N15: a crafted link could
  // otherwise put any message on the real login page).
  const ssoError = routeQuery().get('error');
  if (ssoError) {
    const known = ['provider', 'refused', 'not_mapped', 'name_taken', 'expired', 'internal'];
    error.textContent = t(known.includes(ssoError) ? `login.sso.${ssoError}` : 'login.sso.refused');
    error.hidden = false;
  }
  const username = h('input', { name: 'username', id: 'login-username', autocomplete: 'username', required: true, maxlength: 50 });
  const password = h('input', { name: 'password', id: 'login-password', type: 'password', autocomplete: 'current-password', required: true, maxlength: 128 });
  const remember = h('input', { type: 'checkbox', name: 'remember', id: 'login-remember' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block', id: 'login-submit' }, t('login.submit'));
  const directories = providers.filter((p) => p.kind === 'ldap');
  const source = h('select', { id: 'login-provider', name: 'provider' },
    directories.map((p) => h('option', { value: p.id }, p.name)),
    h('option', { value: '' }, t(offered.localPasswords === 'administrators' ? 'login.localAdmins' : 'login.local')));
  const buttons = providers.filter((p) => p.kind === 'oidc').map((p) =>
    h('a', { class: 'btn btn-block sso-button', id: `sso-${p.id}`, href: `/api/v1/sso/oidc/${encodeURIComponent(p.id)}/login` },
      t('login.with', { name: p.name })));
  const form = h('form', { class: 'login-form', id: 'login-form', novalidate: true },
    h('h1', { class: 'login-brand' }, 'jobwheel'),
    h('p', { class: 'login-sub' }, t('login.subtitle')),
    error,
    buttons,
    buttons.length ? h('p', { class: 'login-or' }, t('login.or')) : null,
    directories.length ? [h('label', { for: 'login-provider' }, t('login.provider')), source] : null,
    h('label', { for: 'login-username' }, t('login.username')), username,
    h('label', { for: 'login-password' }, t('login.password')), password,
    h('label', { class: 'checkbox' }, remember, ' ', t('login.remember')),
    submit,
    h('div', { class: 'login-lang' }, languageSelect()));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    if (!username.value.trim() || !password.value) {
      error.textContent = t('login.required');
      error.hidden = false;
      return;
    }
    submit.disabled = true;
    try {
      const session = await post('/session', {
        username: username.value.trim(),
        password: password.value,
        remember: remember.checked,
        provider: directories.length && source.value ? source.value : undefined,
      });
      await app.signedIn(session);
      const next = routeQuery().get('next');
      location.hash = next && next.startsWith('#/') && !next.startsWith('#/login') ? next : '#/dashboard';
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    } finally {
      submit.disabled = false;
    }
  });
  main.classList.add('login-page');
  main.append(form);
  username.focus();
}
