// API tokens of the logged-in user: create (shown once), list, revoke.

import { del, get, post } from '../api.js';
import { formatTime, h } from '../dom.js';
import { t } from '../i18n.js';
import { confirmDialog, guarded, modal, notify, pageHeader, select, table } from '../ui.js';

export async function render({ main, app }) {
  const list = await get('/tokens');
  const items = Array.isArray(list) ? list : list.items || [];
  const name = h('input', { id: 'token-name', maxlength: 100, placeholder: t('tokens.namePlaceholder') });
  // `approve` skips the approval of new capabilities: an administrator's deploy token only.
  const scopes = app.isAdmin() ? ['read', 'run', 'write', 'approve'] : ['read', 'run', 'write'];
  const scope = select('scope', scopes.map((s) => ({ value: s, label: t(`tokens.scope.${s}`) })), 'write', { id: 'token-scope' });
  // Optional expiry (review N4): a token that stops working by itself.
  const expiry = select('expiry', [['', t('tokens.expiry.never')], ['30', t('tokens.expiry.days', { days: 30 })],
    ['90', t('tokens.expiry.days', { days: 90 })], ['365', t('tokens.expiry.days', { days: 365 })]]
    .map(([value, label]) => ({ value, label })), '', { id: 'token-expiry' });
  const form = h('form', { class: 'filters', id: 'token-form' }, name, scope, expiry,
    h('button', { type: 'submit', class: 'btn btn-primary', id: 'token-create' }, t('tokens.create')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    guarded(async () => {
      const value = name.value.trim();
      if (!value || value.length > 100) throw new Error(t('tokens.nameRule'));
      const body = { name: value, scope: scope.value };
      if (expiry.value) body.expiresInDays = Number(expiry.value);
      const created = await post('/tokens', body);
      const box = h('input', { class: 'mono token-value', id: 'token-value', readonly: true, value: created.token });
      const copy = h('button', { type: 'button', class: 'btn btn-sm' }, t('tokens.copy'));
      copy.addEventListener('click', () => {
        box.select();
        if (navigator.clipboard) navigator.clipboard.writeText(created.token).then(() => notify(t('tokens.copied')), () => {});
      });
      const m = modal(t('tokens.createdTitle'), h('div', {},
        h('p', {}, t('tokens.shownOnce')), h('div', { class: 'token-row' }, box, copy),
        h('p', { class: 'muted' }, t('tokens.usage'))), [], { id: 'token-modal' });
      m.dialog.addEventListener('close', () => app.refresh());
    });
  });
  const rows = items.map((tk) => [
    tk.name,
    t(`tokens.scope.${tk.scope || 'write'}`),
    formatTime(tk.createdAt),
    tk.lastUsedAt ? formatTime(tk.lastUsedAt) : t('tokens.never'),
    tk.expiresAt ? formatTime(tk.expiresAt) : t('tokens.expiry.never'),
    h('button', {
      type: 'button', class: 'btn btn-sm btn-danger', onclick: () => guarded(async () => {
        if (!(await confirmDialog(t('tokens.confirmDelete', { name: tk.name })))) return;
        await del(`/tokens/${tk.id}`);
        notify(t('tokens.deleted'));
        app.refresh();
      }),
    }, t('tokens.revoke')),
  ]);
  main.append(
    pageHeader(t('menu.tokens')),
    h('p', { class: 'muted' }, t('tokens.intro')),
    form,
    h('div', { class: 'card' }, table([t('tokens.name'), t('tokens.scopeLabel'), t('tokens.createdAt'), t('tokens.lastUsedAt'), t('tokens.expiresAt'), t('common.actions')], rows, { id: 'token-table', empty: t('tokens.none') })));
}
