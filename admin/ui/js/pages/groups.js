// Executor groups (upstream /jobgroup, admin only): search, add/edit (appname, title, automatic
// or manual addresses), delete, the executors registered under each appname, and the group's
// own access token (xxl-job 3.5), shown once when set.

import { del, get, post, put } from '../api.js';
import { h, routeHref, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { confirmDialog, field, guarded, modal, notify, pageHeader, pager, table } from '../ui.js';
import { channelSelect, chosen } from './job_form.js';

const LIMIT = 20;
/** The alarm channels the edit dialog offers (read with the page). */
let channelList = [];

export async function render({ main, app }) {
  const q = routeQuery();
  const filters = { appname: q.get('appname') || '', title: q.get('title') || '' };
  const offset = Number(q.get('offset') || 0);
  const form = h('form', { class: 'filters', id: 'group-filters' },
    h('input', { name: 'appname', placeholder: t('groups.appname'), value: filters.appname }),
    h('input', { name: 'title', placeholder: t('groups.title'), value: filters.title }),
    h('button', { type: 'submit', class: 'btn btn-primary' }, t('common.search')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    app.navigate(routeHref('/groups', Object.fromEntries(new FormData(form))));
  });
  const [page, channels] = await Promise.all([get('/groups', { ...filters, offset, limit: LIMIT }), get('/alarm-channels')]);
  channelList = channels;
  const rows = page.items.map((g) => h('tr', { dataset: { groupId: g.id } },
    h('td', {}, String(g.id)),
    h('td', { class: 'mono' }, g.appname),
    h('td', {}, g.title, g.maxRunning ? h('div', { class: 'muted group-cap' }, t('groups.capShown', { max: g.maxRunning })) : null),
    h('td', {}, g.addressType === 1 ? t('groups.manual') : t('groups.auto')),
    h('td', { class: 'mono addresses' }, (g.addressList || '').split(',').filter(Boolean).map((a) => h('div', {}, a))),
    h('td', { class: 'token-state' }, g.accessTokenSet ? t('groups.tokenOwn') : t('groups.tokenGlobal'),
      // A stored token everybody knows (an adopted 3.5 database's default_token) is refused: say so and why.
      g.accessTokenRefused ? h('div', { class: 'badge badge-red token-refused', title: g.accessTokenRefused }, t('groups.tokenRefused')) : null),
    h('td', { class: 'row-actions' },
      h('button', { type: 'button', class: 'btn btn-sm', onclick: () => guarded(() => nodes(g)) }, t('groups.registered')),
      h('button', { type: 'button', class: 'btn btn-sm group-token', onclick: () => token(g, app) }, t('groups.token')),
      h('button', { type: 'button', class: 'btn btn-sm', onclick: () => edit(g, app) }, t('common.edit')),
      h('button', {
        type: 'button', class: 'btn btn-sm btn-danger', onclick: () => guarded(async () => {
          if (!(await confirmDialog(t('groups.confirmDelete', { name: g.title })))) return;
          await del(`/groups/${g.id}`);
          notify(t('common.deleted'));
          app.refresh();
        }),
      }, t('common.delete')))));
  main.append(
    pageHeader(t('menu.groups'), h('button', { type: 'button', class: 'btn btn-primary', id: 'group-add', onclick: () => edit(null, app) }, t('groups.add'))),
    form,
    h('div', { class: 'card' },
      table([t('groups.id'), t('groups.appname'), t('groups.title'), t('groups.addressType'), t('groups.addresses'), t('groups.token'), t('common.actions')], rows, { id: 'group-table' }),
      pager(page.total, offset, LIMIT, (o) => app.navigate(routeHref('/groups', { ...filters, offset: o })))));
}

async function nodes(group) {
  const [full, executors] = await Promise.all([get(`/groups/${group.id}`), get(`/groups/${group.id}/executors`)]);
  const registered = full.registered || [];
  // What each executor of the address list is doing: runs, queue, and the --max-concurrent-runs slots.
  const rows = executors.map((e) => [
    h('span', { class: 'mono' }, e.address),
    h('span', {},
      h('span', { class: `badge ${e.kind === 'jobwheel' ? 'badge-blue' : 'badge-grey'}` }, t(`groups.kind.${e.kind}`)),
      e.glueEnabled === false ? h('span', { class: 'badge badge-amber' }, t('groups.beanOnly')) : null),
    e.reachable ? String(e.running) : '—',
    e.reachable ? String(e.queued) : '—',
    e.reachable ? (e.cap == null ? t('groups.noCap') : `${e.running}/${e.cap}`) : '—',
    e.reachable ? String(e.waitingForSlot) : (e.error || t('groups.unreachable')),
  ]);
  modal(t('groups.registeredTitle', { name: group.title }), h('div', {},
    registered.length
      ? h('ul', { class: 'plain-list mono', id: 'registered-nodes' }, registered.map((a) => h('li', {}, a)))
      : h('p', {}, t('groups.noNodes')),
    h('h4', {}, t('groups.activity')),
    table([t('groups.address'), t('groups.kind'), t('groups.running'), t('groups.queued'), t('groups.slots'), t('groups.waiting')], rows,
      { id: 'executor-activity', empty: t('groups.noAddresses') })), [], { wide: true, id: 'nodes-modal' });
}

/** The group's own access token: set (given or generated, then shown once) or remove. */
function token(group, app) {
  const value = h('input', { id: 'group-token-value', maxlength: 255, placeholder: t('groups.tokenPlaceholder') });
  const actions = [
    {
      name: 'set', label: t('groups.tokenSet'), kind: 'btn-primary', action: async (close) => {
        const given = value.value.trim();
        if (given && !/^[\x21-\x7e]{8,255}$/.test(given)) throw new Error(t('groups.tokenRule'));
        const saved = await put(`/groups/${group.id}/access-token`, given ? { accessToken: given } : {});
        close();
        const box = h('input', { class: 'mono token-value', id: 'group-token-shown', readonly: true, value: saved.accessToken });
        const shown = modal(t('groups.tokenTitle', { name: group.title }), h('div', {},
          h('p', {}, t('groups.tokenShownOnce')), h('p', { class: 'mono' }, `XXL-JOB-APPNAME: ${saved.appname}`), box), [], { id: 'group-token-once' });
        shown.dialog.addEventListener('close', () => app.refresh());
      },
    },
  ];
  if (group.accessTokenSet) {
    actions.push({
      name: 'remove', label: t('groups.tokenRemove'), kind: 'btn-danger', action: async (close) => {
        if (!(await confirmDialog(t('groups.confirmTokenRemove', { name: group.title })))) return;
        await del(`/groups/${group.id}/access-token`);
        close();
        notify(t('groups.tokenRemoved'));
        app.refresh();
      },
    });
  }
  modal(t('groups.tokenTitle', { name: group.title }), h('div', { class: 'form' },
    h('p', { class: 'muted' }, t('groups.tokenIntro')),
    h('p', { id: 'group-token-state' }, group.accessTokenSet ? t('groups.tokenIsSet') : t('groups.tokenNotSet')),
    field(t('groups.tokenValue'), value)), actions, { id: 'group-token-modal' });
}

function edit(group, app) {
  const appname = h('input', { id: 'group-appname', maxlength: 64, value: group ? group.appname : '' });
  const title = h('input', { id: 'group-title', maxlength: 64, value: group ? group.title : '' });
  const manual = group && group.addressType === 1;
  const auto = h('input', { type: 'radio', name: 'addressType', value: '0', id: 'group-auto', checked: !manual });
  const man = h('input', { type: 'radio', name: 'addressType', value: '1', id: 'group-manual', checked: manual });
  const addresses = h('textarea', { id: 'group-addresses', rows: 3, placeholder: 'http://127.0.0.1:9999' });
  addresses.value = group && group.addressList ? group.addressList : '';
  const addressRow = field(t('groups.addresses'), addresses, t('groups.addressHint'));
  const alarmChannels = channelSelect('groupAlarmChannels', channelList, group ? group.alarmChannels : []);
  const cap = h('input', { id: 'group-maxRunning', inputmode: 'numeric', maxlength: 6, placeholder: '0', value: group && group.maxRunning ? String(group.maxRunning) : '' });
  const sync = () => {
    addressRow.hidden = !man.checked;
  };
  auto.addEventListener('change', sync);
  man.addEventListener('change', sync);
  sync();
  modal(group ? t('groups.editTitle') : t('groups.add'), h('div', { class: 'form' },
    field(t('groups.appname'), appname, t('groups.appnameRule')),
    field(t('groups.title'), title),
    field(t('groups.addressType'), h('div', { class: 'radios' },
      h('label', {}, auto, ' ', t('groups.auto')), h('label', {}, man, ' ', t('groups.manual')))),
    addressRow,
    field(t('groups.maxRunning'), cap, t('groups.maxRunningHint')),
    field(t('alarms.channelsField'), alarmChannels, t('alarms.groupChannelsHint'))), [
    {
      name: 'save', label: t('common.save'), kind: 'btn-primary', action: async (close) => {
        const body = {
          appname: appname.value.trim(),
          title: title.value.trim(),
          addressType: man.checked ? 1 : 0,
          addressList: man.checked ? addresses.value.split(/[\s,]+/).filter(Boolean).join(',') : '',
          maxRunning: cap.value.trim() === '' ? 0 : Number(cap.value.trim()),
          alarmChannels: chosen(alarmChannels),
        };
        if (!Number.isInteger(body.maxRunning) || body.maxRunning < 0 || body.maxRunning > 100000) throw new Error(t('groups.maxRunningRule'));
        const problem = validate(body);
        if (problem) throw new Error(problem);
        if (group) await put(`/groups/${group.id}`, body);
        else await post('/groups', body);
        close();
        notify(t('common.saved'));
        app.refresh();
      },
    },
  ], { id: 'group-modal' });
}

/** Upstream's rules; the admin checks them again. */
function validate(g) {
  if (!/^[A-Za-z0-9_.-]{4,64}$/.test(g.appname)) return t('groups.appnameRule');
  if (!g.title || g.title.length > 64) return t('groups.titleRule');
  if (g.addressType === 1) {
    const list = g.addressList.split(',').filter(Boolean);
    if (list.length === 0) return t('groups.addressRequired');
    const bad = list.find((a) => !/^https?:\/\//.test(a));
    if (bad) return t('groups.addressRule', { address: bad });
  }
  return null;
}
