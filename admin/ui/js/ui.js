// Shared widgets: modal dialogs, confirmations, notices, form rows, pagers, badges.

import { h, append } from './dom.js';
import { t } from './i18n.js';

/**
 * Opens a modal `<dialog>` with `title`, `body` nodes and `buttons`
 * (`{label, kind, action}`; `action(close)` may be async, and an error it throws is shown
 * inside the dialog). Returns `{dialog, close, error}`.
 */
export function modal(title, body, buttons = [], { wide = false, id } = {}) {
  const errorBox = h('div', { class: 'alert alert-error', hidden: true, role: 'alert' });
  const close = () => {
    dialog.close();
    dialog.remove();
  };
  const showError = (message) => {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  };
  const footer = h('div', { class: 'modal-footer' });
  for (const button of buttons) {
    const el = h('button', { type: 'button', class: `btn ${button.kind || ''}`, dataset: { action: button.name || '' } },
      button.label);
    el.addEventListener('click', async () => {
      showError('');
      el.disabled = true;
      try {
        await button.action(close);
      } catch (e) {
        showError(e.message || String(e));
      } finally {
        el.disabled = false;
      }
    });
    footer.append(el);
  }
  footer.append(h('button', { type: 'button', class: 'btn', onclick: close }, t('common.close')));
  const dialog = h('dialog', { class: `modal${wide ? ' modal-wide' : ''}`, id },
    h('div', { class: 'modal-header' },
      h('h3', {}, title),
      h('button', { type: 'button', class: 'modal-x', 'aria-label': t('common.close'), onclick: close }, '×')),
    h('div', { class: 'modal-body' }, errorBox, body),
    footer);
  dialog.addEventListener('cancel', (e) => {
    e.preventDefault();
    close();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, close, error: showError };
}

/** Asks `message`; resolves true on OK. */
export function confirmDialog(message) {
  return new Promise((resolve) => {
    const m = modal(t('common.confirm'), h('p', {}, message), [
      { name: 'ok', label: t('common.ok'), kind: 'btn-primary', action: (close) => { close(); resolve(true); } },
    ]);
    m.dialog.addEventListener('close', () => resolve(false));
  });
}

/** A short notice at the top right; errors stay longer. */
export function notify(message, kind = 'success') {
  let area = document.getElementById('notices');
  if (!area) {
    area = h('div', { id: 'notices', 'aria-live': 'polite' });
    document.body.append(area);
  }
  const note = h('div', { class: `notice notice-${kind}` }, message);
  area.append(note);
  setTimeout(() => note.remove(), kind === 'error' ? 8000 : 4000);
}

/** Runs `fn`; an error becomes an error notice instead of an unhandled rejection. */
export async function guarded(fn) {
  try {
    return await fn();
  } catch (e) {
    notify(e.message || String(e), 'error');
    return undefined;
  }
}

/** A labelled form row. */
export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  if (!input.id && ['INPUT', 'SELECT', 'TEXTAREA'].includes(input.tagName)) input.id = id;
  return h('div', { class: 'form-row' },
    h('label', { for: input.id || null }, label),
    h('div', { class: 'form-control' }, input, hint ? h('div', { class: 'hint' }, hint) : null));
}

/** A `<select>` of `options` (`{value, label}`), `selected` pre-chosen. */
export function select(name, options, selected, attrs = {}) {
  return h('select', { name, ...attrs },
    options.map((o) => h('option', { value: String(o.value), selected: String(o.value) === String(selected) }, o.label)));
}

/** Previous/next paging for a `{total}` list at `offset`/`limit`. */
export function pager(total, offset, limit, onPage) {
  const from = total === 0 ? 0 : offset + 1;
  const to = Math.min(offset + limit, total);
  return h('div', { class: 'pager' },
    h('span', { class: 'pager-info' }, t('common.pageInfo', { from, to, total })),
    h('button', { type: 'button', class: 'btn btn-sm', disabled: offset === 0, onclick: () => onPage(Math.max(0, offset - limit)) },
      t('common.prev')),
    h('button', { type: 'button', class: 'btn btn-sm', disabled: offset + limit >= total, onclick: () => onPage(offset + limit) },
      t('common.next')));
}

/** A colored label. */
export function badge(text, kind) {
  return h('span', { class: `badge badge-${kind}` }, text);
}

/** A table with `headers` and `rows` (arrays of cells); `empty` when there are none. */
export function table(headers, rows, { id, empty } = {}) {
  const body = h('tbody', {});
  if (rows.length === 0) {
    body.append(h('tr', {}, h('td', { colspan: headers.length, class: 'empty' }, empty || t('common.noData'))));
  }
  for (const row of rows) {
    const tr = row instanceof Node ? row : h('tr', {}, row.map((cell) => h('td', {}, cell)));
    body.append(tr);
  }
  return h('table', { class: 'table', id }, h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))), body);
}

/** A page title with optional tools on the right. */
export function pageHeader(title, ...tools) {
  return h('div', { class: 'page-header' }, h('h2', {}, title), append(h('div', { class: 'tools' }), tools));
}

/** A disclosure menu of row actions (`{label, action, name, hidden}`). */
export function actionMenu(label, items) {
  const menu = h('details', { class: 'action-menu' }, h('summary', { class: 'btn btn-sm' }, label));
  const list = h('div', { class: 'action-list' });
  for (const item of items) {
    if (item.hidden) continue;
    list.append(h('button', {
      type: 'button',
      class: `action-item ${item.kind || ''}`,
      dataset: { action: item.name },
      onclick: () => {
        menu.open = false;
        item.action();
      },
    }, item.label));
  }
  menu.append(list);
  return menu;
}

/** Collects the named inputs of `form` into an object (strings; checkboxes as booleans). */
export function formValues(form) {
  const out = {};
  for (const el of form.querySelectorAll('[name]')) {
    if (el.type === 'checkbox') out[el.name] = el.checked;
    else if (el.type === 'radio') { if (el.checked) out[el.name] = el.value; }
    else out[el.name] = el.value;
  }
  return out;
}
