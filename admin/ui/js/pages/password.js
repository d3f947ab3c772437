// Change one's own password (upstream /auth/updatePwd): 4–20 characters.

import { put } from '../api.js';
import { h } from '../dom.js';
import { t } from '../i18n.js';
import { field, notify, pageHeader } from '../ui.js';

export async function render({ main }) {
  const oldPassword = h('input', { type: 'password', name: 'oldPassword', autocomplete: 'current-password', maxlength: 20 });
  const password = h('input', { type: 'password', name: 'password', autocomplete: 'new-password', maxlength: 20 });
  const confirm = h('input', { type: 'password', name: 'confirm', autocomplete: 'new-password', maxlength: 20 });
  const error = h('div', { class: 'alert alert-error', hidden: true, role: 'alert' });
  const form = h('form', { class: 'card form', novalidate: true },
    error,
    field(t('password.old'), oldPassword),
    field(t('password.new'), password, t('password.rule')),
    field(t('password.confirm'), confirm),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, t('common.save'))));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const problem = !oldPassword.value ? t('password.oldRequired')
      : password.value.length < 4 || password.value.length > 20 ? t('password.rule')
        : password.value !== confirm.value ? t('password.mismatch') : null;
    if (problem) {
      error.textContent = problem;
      error.hidden = false;
      return;
    }
    try {
      await put('/session/password', { oldPassword: oldPassword.value, password: password.value });
      form.reset();
      notify(t('password.changed'));
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    }
  });
  main.append(pageHeader(t('menu.password')), form);
}
