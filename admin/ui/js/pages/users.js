// Users (upstream /user, admin only): filter by name and role; add/edit with role and the
// groups a normal user may use; one's own account is changed on the password page instead.

import { all, del, get, post, put } from '../api.js';
import { h, routeHref, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { badge, confirmDialog, field, guarded, modal, notify, pageHeader, pager, select, table } from '../ui.js';

const LIMIT = 20;

export async function render({ main, app }) {
  const q = routeQuery();
  const filters = { username: q.get('username') || '', role: q.get('role') || '-1' };
  const offset = Number(q.get('offset') || 0);
  const groups = await all('/groups');
  const groupTitle = new Map(groups.map((g) => [g.id, g.title]));
  const form = h('form', { class: 'filters', id: 'user-filters' },
    h('input', { name: 'username', placeholder: t('users.username'), value: filters.username }),
    select('role', [{ value: '-1', label: t('users.roleAll') }, { value: '1', label: t('users.admin') }, { value: '0', label: t('users.normal') }],
      filters.role, { 'aria-label': t('users.role') }),
    h('button', { type: 'submit', class: 'btn btn-primary' }, t('common.search')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    app.navigate(routeHref('/users', Object.fromEntries(new FormData(form))));
  });
  const page = await get('/users', { ...filters, offset, limit: LIMIT });
  const rows = page.items.map((u) => {
    const self = app.user && u.id === app.user.id;
    return h('tr', { dataset: { userId: u.id } },
      h('td', {}, String(u.id)),
      h('td', {}, u.username, self ? h('span', { class: 'muted' }, ` (${t('users.you')})`) : null,
        u.publishedPassword ? h('div', { class: 'badge badge-red published-password' }, t('users.publishedPassword')) : null),
      h('td', {}, u.role === 1 ? badge(t('users.admin'), 'blue') : badge(t('users.normal'), 'grey')),
      h('td', {}, u.role === 1 ? t('users.allGroups') : (u.permission || []).map((id) => groupTitle.get(id) || `#${id}`).join(', ')),
      h('td', { class: 'row-actions' },
        h('button', { type: 'button', class: 'btn btn-sm', disabled: self, onclick: () => edit(u, groups, app) }, t('common.edit')),
        h('button', {
          type: 'button', class: 'btn btn-sm btn-danger', disabled: self, onclick: () => guarded(async () => {
            if (!(await confirmDialog(t('users.confirmDelete', { name: u.username })))) return;
            await del(`/users/${u.id}`);
            notify(t('common.deleted'));
            app.refresh();
          }),
        }, t('common.delete'))));
  });
  main.append(
    pageHeader(t('menu.users'), h('button', { type: 'button', class: 'btn btn-primary', id: 'user-add', onclick: () => edit(null, groups, app) }, t('users.add'))),
    form,
    h('div', { class: 'card' },
      table([t('users.id'), t('users.username'), t('users.role'), t('users.permission'), t('common.actions')], rows, { id: 'user-table' }),
      pager(page.total, offset, LIMIT, (o) => app.navigate(routeHref('/users', { ...filters, offset: o })))));
}

function edit(user, groups, app) {
  const username = h('input', { id: 'user-username', maxlength: 20, value: user ? user.username : '', readonly: Boolean(user) });
  const password = h('input', { id: 'user-password', type: 'password', maxlength: 20, autocomplete: 'new-password', placeholder: user ? t('users.passwordKeep') : '' });
  const isAdmin = user && user.role === 1;
  const roleNormal = h('input', { type: 'radio', name: 'role', value: '0', checked: !isAdmin });
  const roleAdmin = h('input', { type: 'radio', name: 'role', value: '1', checked: isAdmin });
  const permitted = new Set(user ? user.permission || [] : []);
  const boxes = groups.map((g) => h('label', { class: 'checkbox' },
    h('input', { type: 'checkbox', value: String(g.id), checked: permitted.has(g.id) }), ' ', g.title));
  const permissionRow = field(t('users.permission'), h('div', { class: 'checkboxes' }, boxes), t('users.permissionHint'));
  const sync = () => {
    permissionRow.hidden = roleAdmin.checked;
  };
  roleNormal.addEventListener('change', sync);
  roleAdmin.addEventListener('change', sync);
  sync();
  modal(user ? t('users.editTitle', { name: user.username }) : t('users.add'), h('div', { class: 'form' },
    field(t('users.username'), username, user ? null : t('users.usernameRule')),
    field(t('users.password'), password, t('users.passwordRule')),
    field(t('users.role'), h('div', { class: 'radios' },
      h('label', {}, roleNormal, ' ', t('users.normal')), h('label', {}, roleAdmin, ' ', t('users.admin')))),
    permissionRow), [
    {
      name: 'save', label: t('common.save'), kind: 'btn-primary', action: async (close) => {
        const name = username.value.trim();
        if (!user && !/^[A-Za-z0-9_.@-]{4,20}$/.test(name)) throw new Error(t('users.usernameRule'));
        if ((!user || password.value) && (password.value.length < 4 || password.value.length > 20)) throw new Error(t('users.passwordRule'));
        const body = {
          username: name,
          role: roleAdmin.checked ? 1 : 0,
          permission: roleAdmin.checked ? [] : boxes.map((b) => b.querySelector('input')).filter((i) => i.checked).map((i) => Number(i.value)),
        };
        if (password.value) body.password = password.value;
        if (user) await put(`/users/${user.id}`, body);
        else await post('/users', body);
        close();
        notify(t('common.saved'));
        app.refresh();
      },
    },
  ], { id: 'user-modal' });
}
