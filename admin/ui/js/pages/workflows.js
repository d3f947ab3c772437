// Workflows (GET /workflows): the list with each one's schedule and graph size, and its
// actions — edit, run now with a context, switch the schedule on or off, instances, delete.
// docs/workflows.md has the model and the API.

import { all, del, get, post } from '../api.js';
import { formatTime, h, routeHref, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { actionMenu, badge, confirmDialog, field, guarded, modal, notify, pageHeader, select, table } from '../ui.js';
import { backfillDialog } from './backfills.js';

export async function render({ main, app }) {
  const q = routeQuery();
  const groups = await all('/groups');
  const jobGroup = q.get('jobGroup') || '';
  const workflows = await get('/workflows', jobGroup ? { jobGroup } : {});
  const groupName = new Map(groups.map((g) => [g.id, g.title]));
  const filter = select('jobGroup', [{ value: '', label: t('common.allGroups') }, ...groups.map((g) => ({ value: g.id, label: g.title }))],
    jobGroup, { 'aria-label': t('job.jobGroup'), id: 'workflow-group' });
  filter.addEventListener('change', () => app.navigate(routeHref('/workflows', { jobGroup: filter.value })));
  const rows = workflows.map((w) => h('tr', { dataset: { workflow: w.id } },
    h('td', {}, String(w.id)),
    h('td', {}, h('a', { href: `#/workflows/${w.id}/instances`, class: 'workflow-name' }, w.name)),
    h('td', {}, groupName.get(w.jobGroup) || String(w.jobGroup)),
    h('td', {}, scheduleText(app, w)),
    h('td', {}, t('wf.nodeCount', { nodes: w.graph.nodes.length, edges: w.graph.edges.length })),
    h('td', { class: 'workflow-status' }, w.triggerStatus === 1
      ? [badge(t('jobs.running'), 'green'), h('div', { class: 'hint' }, t('wf.nextStart', { time: formatTime(w.triggerNextTime) }))]
      : badge(t('jobs.stopped'), 'grey')),
    h('td', {}, actionMenu(t('common.actions'), [
      { name: 'edit', label: t('common.edit'), action: () => app.navigate(`#/workflows/${w.id}/edit`) },
      { name: 'run', label: t('wf.runNow'), action: () => runDialog(app, w) },
      { name: 'instances', label: t('wf.instances'), action: () => app.navigate(`#/workflows/${w.id}/instances`) },
      {
        name: 'backfill', label: t('backfill.action'), hidden: !['CRON', 'FIX_RATE'].includes(w.scheduleType),
        action: () => backfillDialog(app, { workflowId: w.id }, w.name),
      },
      {
        name: 'start', label: t('jobs.start'), hidden: w.triggerStatus === 1 || w.scheduleType === 'NONE',
        action: () => guarded(async () => {
          await post(`/workflows/${w.id}/start`);
          notify(t('jobs.started'));
          app.refresh();
        }),
      },
      {
        name: 'stop', label: t('jobs.stop'), hidden: w.triggerStatus !== 1,
        action: () => guarded(async () => {
          await post(`/workflows/${w.id}/stop`);
          notify(t('jobs.stoppedNotice'));
          app.refresh();
        }),
      },
      {
        name: 'delete', label: t('common.delete'), kind: 'danger',
        action: () => guarded(async () => {
          if (!(await confirmDialog(t('wf.confirmDelete', { name: w.name })))) return;
          await del(`/workflows/${w.id}`);
          notify(t('common.deleted'));
          app.refresh();
        }),
      },
    ]))));
  main.append(
    pageHeader(t('menu.workflows'), filter,
      h('a', { class: 'btn btn-primary', id: 'workflow-add', href: routeHref('/workflows/new', { jobGroup }) }, t('wf.add'))),
    h('p', { class: 'muted' }, t('wf.intro')),
    h('div', { class: 'card' }, table(
      [t('job.id'), t('wf.name'), t('job.jobGroup'), t('job.schedule'), t('wf.graph'), t('jobs.status'), t('common.actions')],
      rows, { id: 'workflow-table', empty: t('wf.none') })));
}

/** "CRON 0 0 2 * * ?" in the UI's words; "None" for API/manual only. */
export function scheduleText(app, w) {
  const kind = app.enumTitle('scheduleTypes', w.scheduleType);
  return w.scheduleType === 'NONE' ? kind : `${kind}: ${w.scheduleConf || ''}`;
}

/** Starts an instance now with a context typed as JSON, then shows it. */
export function runDialog(app, w) {
  const context = h('textarea', { id: 'workflow-run-context', rows: 6, class: 'mono', placeholder: '{"day": "2030-01-01"}' });
  context.value = '{}';
  modal(t('wf.runTitle', { name: w.name }), h('div', { class: 'form' },
    field(t('wf.context'), context, t('wf.contextHint'))), [{
    name: 'run', label: t('wf.runNow'), kind: 'btn-primary', action: async (close) => {
      let value;
      try {
        value = JSON.parse(context.value.trim() || '{}');
      } catch (e) {
        throw new Error(t('wf.contextNotJson', { reason: e.message }));
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(t('wf.contextNotObject'));
      let started;
      try {
        started = await post(`/workflows/${w.id}/instances`, { context: value });
      } catch (e) {
        // 409 answers `{"outcome":"SKIPPED"}`: max instances are running and the overflow is SKIP.
        throw e.status === 409 ? new Error(t('wf.skipped')) : e;
      }
      close();
      notify(started.outcome === 'QUEUED' ? t('wf.queued') : t('wf.started'));
      app.navigate(`#/workflow-instances/${started.instanceId}`);
    },
  }], { id: 'workflow-run-modal' });
}

/** What a node shows under its name: `#7 Load rows`. */
export function jobLabel(jobs, jobId) {
  const job = jobs.get(jobId);
  return job ? `#${jobId} ${job.jobDesc}` : `#${jobId}`;
}
