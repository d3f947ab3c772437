// Alarm channels (administrators; docs/alarms.md): the channels — DingTalk, Feishu, WeCom,
// Slack, e-mail, a templated webhook — with add/edit/test/delete, and the delivery log below
// them: what each message said, when, how often it was tried and what the vendor answered.
// A channel's URL and signing key are write-only: the form leaves them empty and keeps the
// stored ones unless something is typed.

import { del, get, post, put } from '../api.js';
import { formatTime, h, routeHref, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { badge, confirmDialog, field, guarded, modal, notify, pageHeader, pager, select, table } from '../ui.js';

const KINDS = ['dingtalk', 'feishu', 'wecom', 'slack', 'webhook', 'email'];
const EVENTS = ['FAILED', 'MISSED', 'LOST', 'OVERDUE', 'RECOVERED', 'WORKFLOW_FAILED', 'WORKFLOW_MISSED', 'WORKFLOW_OVERDUE'];
const DEFAULT_EVENTS = EVENTS.filter((e) => e !== 'RECOVERED');
const STATUS_BADGE = { SENT: 'green', FAILED: 'red', PENDING: 'amber', SENDING: 'blue', SKIPPED: 'grey' };
const LIMIT = 20;

export async function render({ main, app }) {
  const q = routeQuery();
  const channelFilter = q.get('channel') || '';
  const offset = Number(q.get('offset') || 0);
  const [channels, deliveries] = await Promise.all([
    get('/alarm-channels'),
    get('/alarm-deliveries', { channel: channelFilter, offset, limit: LIMIT }),
  ]);
  const rows = channels.map((c) => h('tr', { dataset: { channel: c.name } },
    h('td', {}, c.name),
    h('td', {}, t(`alarms.kind.${c.kind}`)),
    h('td', { class: 'mono' }, c.urlHost || (c.kind === 'email' ? (c.recipients || []).join(', ') : '')),
    h('td', {}, c.events.map((e) => t(`alarms.event.${e}`)).join(', ')),
    h('td', {}, c.foldSecs ? t('alarms.foldShown', { secs: c.foldSecs }) : t('alarms.noFold')),
    h('td', {}, c.enabled ? badge(t('alarms.enabled'), 'green') : badge(t('alarms.disabled'), 'grey')),
    h('td', { class: 'row-actions' },
      h('button', { type: 'button', class: 'btn btn-sm', dataset: { action: 'test' }, disabled: !c.enabled, onclick: () => guarded(async () => {
        await post(`/alarm-channels/${c.id}/test`, {});
        notify(t('alarms.testQueued'));
        app.refresh();
      }) }, t('alarms.test')),
      h('button', { type: 'button', class: 'btn btn-sm', dataset: { action: 'edit' }, onclick: () => edit(c, app) }, t('common.edit')),
      h('button', { type: 'button', class: 'btn btn-sm btn-danger', dataset: { action: 'delete' }, onclick: () => guarded(async () => {
        if (!(await confirmDialog(t('alarms.confirmDelete', { name: c.name })))) return;
        await del(`/alarm-channels/${c.id}`);
        notify(t('common.deleted'));
        app.refresh();
      }) }, t('common.delete')))));

  const filter = select('channel', [{ value: '', label: t('alarms.allChannels') }, ...channels.map((c) => ({ value: c.id, label: c.name }))],
    channelFilter, { id: 'delivery-channel' });
  filter.addEventListener('change', () => app.navigate(routeHref('/alarms', { channel: filter.value })));
  const refresh = h('button', { type: 'button', class: 'btn btn-sm', id: 'delivery-refresh', onclick: () => app.refresh() }, t('alarms.refresh'));
  const deliveryRows = deliveries.items.map((d) => h('tr', { dataset: { delivery: d.id, status: d.status } },
    h('td', {}, formatTime(d.sendTime || d.dueTime)),
    h('td', {}, d.channelName || `#${d.channelId}`),
    h('td', {}, t(`alarms.event.${d.event}`)),
    h('td', { class: 'mono' }, d.subject),
    h('td', {}, badge(t(`alarms.status.${d.status}`), STATUS_BADGE[d.status] || 'grey'),
      d.status === 'PENDING' && d.attempts > 0 ? h('div', { class: 'muted' }, t('alarms.retryAt', { time: formatTime(d.dueTime) })) : null),
    h('td', {}, String(d.attempts)),
    h('td', {}, d.folded ? String(d.folded) : ''),
    h('td', { class: 'delivery-answer' }, d.answerCode ? `${d.answerCode} ` : '', d.answer || ''),
    h('td', {}, h('button', { type: 'button', class: 'btn btn-sm', dataset: { action: 'show' }, onclick: () => shown(d) }, t('alarms.show')))));

  main.append(
    pageHeader(t('menu.alarms'), h('button', { type: 'button', class: 'btn btn-primary', id: 'channel-add', onclick: () => edit(null, app) }, t('alarms.add'))),
    h('p', { class: 'muted' }, t('alarms.intro')),
    h('div', { class: 'card' }, table(
      [t('alarms.name'), t('alarms.kindLabel'), t('alarms.target'), t('alarms.events'), t('alarms.fold'), t('alarms.state'), t('common.actions')],
      rows, { id: 'channel-table', empty: t('alarms.none') })),
    h('h3', {}, t('alarms.deliveries')),
    h('div', { class: 'filters' }, filter, refresh),
    h('div', { class: 'card' },
      table([t('alarms.time'), t('alarms.channel'), t('alarms.eventLabel'), t('alarms.subject'), t('alarms.statusLabel'),
        t('alarms.attempts'), t('alarms.folded'), t('alarms.answer'), ''], deliveryRows, { id: 'delivery-table', empty: t('alarms.noDeliveries') }),
      pager(deliveries.total, offset, LIMIT, (o) => app.navigate(routeHref('/alarms', { channel: channelFilter, offset: o })))));
}

/** `text` indented if it is JSON (vendor bodies are), else as it is. */
function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text || '';
  }
}

/** What a delivery sent and what came back. */
function shown(d) {
  modal(t('alarms.sentTitle', { id: d.id }), h('div', { class: 'form' },
    field(t('alarms.sent'), h('pre', { class: 'delivery-request' }, pretty(d.request))),
    field(t('alarms.answer'), h('pre', { class: 'delivery-answer-full' }, `${d.answerCode || ''} ${d.answer || ''}`.trim()))), [], { wide: true, id: 'delivery-modal' });
}

/** Lines or commas of a textarea as a list. */
function list(text) {
  return String(text || '').split(/[\s,]+/).map((w) => w.trim()).filter(Boolean);
}

/** The add/edit dialog; `channel` null for a new one. */
function edit(channel, app) {
  const c = channel || { name: '', kind: 'dingtalk', events: DEFAULT_EVENTS, foldSecs: 300, enabled: true };
  const name = h('input', { id: 'channel-name', maxlength: 64, value: c.name });
  const kind = select('kind', KINDS.map((k) => ({ value: k, label: t(`alarms.kind.${k}`) })), c.kind, { id: 'channel-kind' });
  const keep = channel ? t('alarms.keepSecret') : '';
  const url = h('input', { id: 'channel-url', type: 'password', autocomplete: 'off', placeholder: channel && channel.urlSet ? keep : 'https://' });
  const key = h('input', { id: 'channel-key', type: 'password', autocomplete: 'off', placeholder: channel && channel.signingKeySet ? keep : '' });
  const recipients = h('textarea', { id: 'channel-recipients', rows: 2, placeholder: 'ops@example.com' });
  recipients.value = (c.recipients || []).join('\n');
  const mobiles = h('input', { id: 'channel-mobiles', value: (c.atMobiles || []).join(', '), placeholder: '13800000000' });
  const atAll = h('input', { type: 'checkbox', id: 'channel-atall', checked: Boolean(c.atAll) });
  const template = h('textarea', { id: 'channel-template', rows: 5, class: 'mono', placeholder: '{"text": {{ subjectLine|tojson }}, "job": {{ jobId }}}' });
  template.value = c.template || '';
  const contentType = h('input', { id: 'channel-content-type', value: c.contentType || '', placeholder: 'application/json' });
  const boxes = EVENTS.map((e) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', value: e, checked: c.events.includes(e), dataset: { event: e } }), ` ${t(`alarms.event.${e}`)}`));
  const fold = h('input', { id: 'channel-fold', inputmode: 'numeric', maxlength: 5, value: String(c.foldSecs) });
  const enabled = h('input', { type: 'checkbox', id: 'channel-enabled', checked: c.enabled });
  const rows = {
    url: field(t('alarms.url'), url, t('alarms.urlHint')),
    key: field(t('alarms.signingKey'), key, t('alarms.signingKeyHint')),
    recipients: field(t('alarms.recipients'), recipients, t('alarms.recipientsHint')),
    mobiles: field(t('alarms.atMobiles'), mobiles),
    atAll: field(t('alarms.atAll'), atAll),
    template: field(t('alarms.template'), template, t('alarms.templateHint')),
    contentType: field(t('alarms.contentType'), contentType),
  };
  const sync = () => {
    const k = kind.value;
    rows.url.hidden = k === 'email';
    rows.key.hidden = !['dingtalk', 'feishu', 'webhook'].includes(k);
    rows.recipients.hidden = k !== 'email';
    rows.mobiles.hidden = k !== 'dingtalk';
    rows.atAll.hidden = k !== 'dingtalk';
    rows.template.hidden = k !== 'webhook';
    rows.contentType.hidden = k !== 'webhook';
  };
  kind.addEventListener('change', sync);
  sync();
  modal(channel ? t('alarms.editTitle', { name: c.name }) : t('alarms.add'), h('div', { class: 'form' },
    field(t('alarms.name'), name),
    field(t('alarms.kindLabel'), kind, t('alarms.kindHint')),
    rows.url, rows.key, rows.recipients, rows.mobiles, rows.atAll, rows.template, rows.contentType,
    field(t('alarms.events'), h('div', { class: 'checks' }, boxes)),
    field(t('alarms.fold'), fold, t('alarms.foldHint')),
    field(t('alarms.enabled'), enabled)), [{
    name: 'save', label: t('common.save'), kind: 'btn-primary', action: async (close) => {
      const k = kind.value;
      const body = {
        name: name.value.trim(),
        kind: k,
        events: boxes.map((b) => b.querySelector('input')).filter((b) => b.checked).map((b) => b.value),
        foldSecs: Number(fold.value.trim() || 0),
        enabled: enabled.checked,
      };
      if (!Number.isInteger(body.foldSecs) || body.foldSecs < 0) throw new Error(t('alarms.foldRule'));
      if (url.value.trim()) body.url = url.value.trim();
      if (key.value.trim()) body.signingKey = key.value.trim();
      if (k === 'email') body.recipients = list(recipients.value);
      if (k === 'dingtalk') {
        body.atMobiles = list(mobiles.value);
        body.atAll = atAll.checked;
      }
      if (k === 'webhook') {
        body.template = template.value;
        if (contentType.value.trim()) body.contentType = contentType.value.trim();
      }
      if (channel) await put(`/alarm-channels/${channel.id}`, body);
      else await post('/alarm-channels', body);
      close();
      notify(t('common.saved'));
      app.refresh();
    },
  }], { id: 'channel-modal', wide: true });
}
