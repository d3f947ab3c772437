// What a GLUE_WASM job is granted (docs/guest-abi.md): its network policy (one entry per
// line), per-run limits, plain variables (NAME=value per line), the executor group's variables
// and secrets it uses (by name; the others are not sent to it) and write-only secrets — the
// list shows only their names; a value goes in and never comes back. Saved through
// /api/v1/jobs/{id}/grant and /api/v1/jobs/{id}/secrets/{name}; the history shows who changed
// what, never a secret value.

import { del, get, put } from '../api.js';
import { formatTime, h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { badge, confirmDialog, field, guarded, notify, table } from '../ui.js';

const LIMITS = ['httpMaxRequests', 'httpMaxResponseBytes', 'httpTimeoutMs', 'fuel', 'memoryBytes'];

/** The grant card of job `id`; reloads itself after every change. */
export async function grantCard(id) {
  const card = h('div', { class: 'card form', id: 'grant-card' });
  const load = async () => replace(card, ...render(id, await get(`/jobs/${id}/grant`), load));
  await load();
  return card;
}

function render(id, grant, reload) {
  const policy = h('textarea', { id: 'grant-policy', rows: 4, spellcheck: 'false', placeholder: 'https://api.example.com' },
    (grant.httpAllow || []).join('\n'));
  const variables = h('textarea', { id: 'grant-variables', rows: 4, spellcheck: 'false', placeholder: 'CHECK_URL=https://api.example.com/health' },
    Object.entries(grant.variables || {}).map(([k, v]) => `${k}=${v}`).join('\n'));
  const uses = h('input', { id: 'grant-uses', spellcheck: 'false', placeholder: 'DB_PASSWORD, REGION', value: (grant.uses || []).join(', ') });
  const limits = Object.fromEntries(LIMITS.map((name) => [name,
    h('input', { id: `grant-${name}`, type: 'number', min: 1, value: grant[name] ?? '', placeholder: t('grant.default') })]));
  const error = h('div', { class: 'alert alert-error', hidden: true, role: 'alert', id: 'grant-error' });
  const showError = (message) => {
    error.textContent = message;
    error.hidden = !message;
  };
  const save = h('button', { type: 'button', class: 'btn btn-primary', id: 'grant-save' }, t('common.save'));
  save.addEventListener('click', () => guarded(async () => {
    showError('');
    const vars = {};
    for (const line of variables.value.split('\n').map((l) => l.trim()).filter(Boolean)) {
      const at = line.indexOf('=');
      if (at < 1) {
        showError(t('grant.badVariable', { line }));
        return;
      }
      vars[line.slice(0, at).trim()] = line.slice(at + 1);
    }
    const body = {
      httpAllow: policy.value.split('\n').map((l) => l.trim()).filter(Boolean),
      variables: vars,
      uses: uses.value.split(/[\s,]+/).filter(Boolean),
    };
    for (const name of LIMITS) {
      if (limits[name].value !== '') body[name] = Number(limits[name].value);
    }
    try {
      const answer = await put(`/jobs/${id}/grant`, body);
      // 202: the change widens what the job may reach and waits for an administrator.
      if (answer && answer.widening) {
        notify(t('approvals.held', { what: answer.widening.join('; ') }), 'warning');
        await reload();
        return;
      }
    } catch (e) {
      showError(e.message);
      return;
    }
    notify(t('grant.saved'));
    await reload();
  }));

  const secretName = h('input', { id: 'grant-secret-name', placeholder: 'API_TOKEN', autocomplete: 'off' });
  const secretValue = h('input', { id: 'grant-secret-value', type: 'password', autocomplete: 'new-password' });
  const setSecret = h('button', { type: 'button', class: 'btn', id: 'grant-secret-set' }, t('grant.setSecret'));
  setSecret.addEventListener('click', () => guarded(async () => {
    showError('');
    const name = secretName.value.trim();
    try {
      await put(`/jobs/${id}/secrets/${encodeURIComponent(name)}`, { value: secretValue.value });
    } catch (e) {
      showError(e.message);
      return;
    }
    notify(t('grant.secretSet', { name }));
    await reload();
  }));
  const secrets = table([t('grant.secret'), '', t('grant.updated'), ''], (grant.secrets || []).map((s) => [
    h('span', { class: 'mono' }, s.name), badge(t('grant.isSet'), 'green'), formatTime(s.updateTime),
    h('button', {
      type: 'button', class: 'btn btn-sm', dataset: { deleteSecret: s.name },
      onclick: () => guarded(async () => {
        if (!(await confirmDialog(t('grant.confirmDelete', { name: s.name })))) return;
        await del(`/jobs/${id}/secrets/${encodeURIComponent(s.name)}`);
        await reload();
      }),
    }, t('common.delete')),
  ]), { id: 'grant-secrets', empty: t('grant.noSecrets') });
  const history = table([t('grant.when'), t('grant.who'), t('grant.change')],
    (grant.history || []).map((e) => [formatTime(e.time), e.author, e.change]),
    { id: 'grant-history', empty: t('grant.noHistory') });

  return [
    h('h3', {}, t('grant.title')),
    h('p', { class: 'muted' }, t('grant.rules')),
    error,
    field(t('grant.policy'), policy, t('grant.policyHint')),
    ...LIMITS.map((name) => field(t(`grant.${name}`), limits[name])),
    field(t('grant.variables'), variables, t('grant.variablesHint')),
    field(t('grant.uses'), uses, t('grant.usesHint')),
    h('div', { class: 'form-actions' }, save),
    h('h4', {}, t('grant.secrets')),
    secrets,
    h('div', { class: 'inline-form' }, field(t('grant.secret'), secretName), field(t('grant.value'), secretValue), setSecret),
    h('h4', {}, t('grant.history')),
    history,
  ];
}
