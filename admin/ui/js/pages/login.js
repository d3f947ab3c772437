// Login (upstream /auth/login): username, password, "remember me".

import { post } from '../api.js';
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
  const error = h('div', { class: 'alert alert-error', hidden: true, role: 'alert', id: 'login-error' });
  const username = h('input', { name: 'username', id: 'login-username', autocomplete: 'username', required: true, maxlength: 20 });
  const password = h('input', { name: 'password', id: 'login-password', type: 'password', autocomplete: 'current-password', required: true, maxlength: 20 });
  const remember = h('input', { type: 'checkbox', name: 'remember', id: 'login-remember' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block', id: 'login-submit' }, t('login.submit'));
  const form = h('form', { class: 'login-form', id: 'login-form', novalidate: true },
    h('h1', { class: 'login-brand' }, 'jobwheel'),
    h('p', { class: 'login-sub' }, t('login.subtitle')),
    error,
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
