// A workflow's instances, newest first (GET /workflows/{id}/instances), each linking to its
// instance page; "run now" starts another.

import { get } from '../api.js';
import { formatTime, h, routeHref, routeQuery } from '../dom.js';
import { hasText, t } from '../i18n.js';
import { badge, pageHeader, pager, table } from '../ui.js';
import { runDialog, scheduleText } from './workflows.js';

const LIMIT = 20;

/** The colour of an instance's or a node's state. */
export function statusBadge(status) {
  const kind = {
    SUCCEEDED: 'green', PASSED: 'green', FAILED: 'red', RUNNING: 'blue', FIRED: 'blue', DUE: 'amber',
    QUEUED: 'amber', MISSED: 'red', STOPPED: 'grey', SKIPPED: 'grey', REVOKED: 'grey',
  }[status] || 'grey';
  return badge(t(`wf.status${status}`), kind);
}

/** How an instance started: by hand, by its schedule, late, or as a rerun of another. */
export function triggerText(type) {
  const rerun = /^RERUN of (\d+)$/.exec(type);
  if (rerun) return t('wf.trigger.RERUN', { id: rerun[1] });
  const parent = /^WORKFLOW of (\d+)$/.exec(type);
  if (parent) return t('wf.trigger.WORKFLOW', { id: parent[1] });
  return hasText(`wf.trigger.${type}`) ? t(`wf.trigger.${type}`) : type;
}

export async function render({ main, params, app }) {
  const id = Number(params[0]);
  const offset = Number(routeQuery().get('offset') || 0);
  const workflow = await get(`/workflows/${id}`);
  const page = await get(`/workflows/${id}/instances`, { offset, limit: LIMIT });
  const rows = page.rows.map((i) => h('tr', { dataset: { instance: i.id } },
    h('td', {}, h('a', { href: `#/workflow-instances/${i.id}` }, `#${i.id}`)),
    h('td', { class: 'instance-status' }, statusBadge(i.status)),
    h('td', {}, triggerText(i.triggerType)),
    h('td', {}, formatTime(i.fireTime)),
    h('td', {}, formatTime(i.startTime)),
    h('td', {}, formatTime(i.endTime))));
  const run = h('button', { type: 'button', class: 'btn btn-primary', id: 'workflow-run' }, t('wf.runNow'));
  run.addEventListener('click', () => runDialog(app, workflow));
  main.append(
    pageHeader(t('wf.instancesOf', { name: workflow.name }),
      h('a', { class: 'btn', href: `#/workflows/${id}/edit` }, t('common.edit')), run),
    h('p', { class: 'muted' }, scheduleText(app, workflow)),
    h('div', { class: 'card' },
      table([t('wf.instance'), t('jobs.status'), t('wf.triggerType'), t('wf.fireTime'), t('wf.startTime'), t('wf.endTime')],
        rows, { id: 'instance-table', empty: t('wf.noInstances') }),
      pager(page.total, offset, LIMIT, (next) => app.navigate(routeHref(`/workflows/${id}/instances`, { offset: next })))));
}
