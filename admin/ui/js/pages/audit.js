// The audit log (admin only): who changed what, when and from where, newest first, with the
// fields each change touched; filter by user, kind of change and target.

import { get } from '../api.js';
import { formatTime, h, routeHref, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { modal, pageHeader, pager, select, table } from '../ui.js';

const LIMIT = 50;
const KINDS = ['session.', 'job.', 'glue.', 'grant.', 'secret.', 'wasm.', 'group.', 'variables.', 'user.', 'token.', 'calendar.', 'log.'];

export async function render({ main, app }) {
  const q = routeQuery();
  const filters = { username: q.get('username') || '', action: q.get('action') || '', target: q.get('target') || '' };
  const offset = Number(q.get('offset') || 0);
  const form = h('form', { class: 'filters', id: 'audit-filters' },
    h('input', { name: 'username', placeholder: t('audit.user'), value: filters.username }),
    select('action', [{ value: '', label: t('audit.allActions') }, ...KINDS.map((k) => ({ value: k, label: k.slice(0, -1) }))],
      filters.action, { 'aria-label': t('audit.action') }),
    h('input', { name: 'target', placeholder: t('audit.targetHint'), value: filters.target }),
    h('button', { type: 'submit', class: 'btn btn-primary' }, t('common.search')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    app.navigate(routeHref('/audit', Object.fromEntries(new FormData(form))));
  });
  const page = await get('/audit', { ...filters, offset, limit: LIMIT });
  const rows = page.items.map((e) => h('tr', { dataset: { auditId: e.id, action: e.action } },
    h('td', {}, formatTime(e.time)),
    h('td', {}, e.username || '—'),
    h('td', {}, e.client),
    h('td', {}, h('code', {}, e.action)),
    h('td', {}, e.target),
    h('td', { class: 'audit-changes' }, ...summary(e).map((line) => h('div', {}, line))),
    h('td', { class: 'row-actions' },
      h('button', { type: 'button', class: 'btn btn-sm', onclick: () => details(e) }, t('audit.details')))));
  main.append(
    pageHeader(t('menu.audit')),
    form,
    h('div', { class: 'card' },
      table([t('audit.time'), t('audit.user'), t('audit.client'), t('audit.action'), t('audit.target'), t('audit.changes'), t('common.actions')],
        rows, { id: 'audit-table' }),
      pager(page.total, offset, LIMIT, (o) => app.navigate(routeHref('/audit', { ...filters, offset: o })))));
}

/** One line per changed field ("jobDesc: a → b"), or what the request said. */
function summary(entry) {
  const before = entry.before || {};
  const after = entry.after || {};
  if (entry.before && !entry.after) return [t('audit.removed')];
  if (entry.after && !entry.before && entry.action.endsWith('.create')) return [t('audit.created')];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  const changed = keys.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
  if (entry.before && changed.length) {
    return changed.slice(0, 4).map((k) => `${k}: ${short(before[k])} → ${short(after[k])}`)
      .concat(changed.length > 4 ? [t('audit.more', { n: changed.length - 4 })] : []);
  }
  if (entry.detail) return [short(entry.detail, 120)];
  return [];
}

function short(value, max = 40) {
  const text = value === undefined ? '—' : typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function details(entry) {
  const block = (title, value) => (value === null || value === undefined ? null
    : h('div', {}, h('h4', {}, title), h('pre', { class: 'audit-json' }, JSON.stringify(value, null, 2))));
  modal(`${entry.action} · ${entry.target || '—'}`, h('div', { id: 'audit-details' },
    block(t('audit.detail'), entry.detail), block(t('audit.before'), entry.before), block(t('audit.after'), entry.after)),
  [], { wide: true, id: 'audit-modal' });
}
