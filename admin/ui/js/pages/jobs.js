// Job list (upstream /jobinfo): filters (plus jobwheel's fuzzy search and tag filter), the job
// table with tags, and each row's actions — edit, copy, start/stop, trigger once, next fire
// times, logs, GLUE / Wasm module, registered nodes, delete.

import { all, del, get, post } from '../api.js';
import { h, routeHref, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import {
  actionMenu, badge, confirmDialog, field, guarded, modal, notify, pageHeader, pager, select, table,
} from '../ui.js';
import { formatTime } from '../dom.js';
import { exportJobs, importDialog } from './transfer.js';
import { backfillDialog } from './backfills.js';

const LIMIT = 20;

/** Whether `glueType` is a script edited in the GLUE IDE. */
export function isScript(glueType) {
  return glueType.startsWith('GLUE_') && glueType !== 'GLUE_WASM';
}

export async function render({ main, app }) {
  const q = routeQuery();
  const groups = await all('/groups');
  if (groups.length === 0) {
    main.append(pageHeader(t('menu.jobs')),
      h('div', { class: 'alert alert-info' }, t('jobs.noGroups'), ' ',
        app.isAdmin() ? h('a', { href: '#/groups' }, t('jobs.createGroup')) : null));
    return;
  }
  // Only administrators may list all groups at once; a normal user starts on their first group,
  // as upstream's page does (the API refuses a normal user's list without one).
  const filters = {
    jobGroup: q.get('jobGroup') || (app.isAdmin() ? '' : String(groups[0].id)),
    triggerStatus: q.get('triggerStatus') || '-1',
    jobDesc: q.get('jobDesc') || '',
    executorHandler: q.get('executorHandler') || '',
    author: q.get('author') || '',
    tag: q.get('tag') || '',
    q: q.get('q') || '',
  };
  const offset = Number(q.get('offset') || 0);
  const groupName = new Map(groups.map((g) => [g.id, g.title]));

  // Tags of the chosen group (all groups only for administrators, as the API allows).
  const tagScope = filters.jobGroup;
  const tags = await get('/jobs/tags', tagScope ? { jobGroup: tagScope } : {});
  const form = h('form', { class: 'filters', id: 'job-filters' },
    h('input', { name: 'q', type: 'search', placeholder: t('jobs.fuzzySearch'), value: filters.q, 'aria-label': t('jobs.fuzzySearch') }),
    select('jobGroup', [...(app.isAdmin() ? [{ value: '', label: t('common.allGroups') }] : []), ...groups.map((g) => ({ value: g.id, label: g.title }))],
      filters.jobGroup, { 'aria-label': t('job.jobGroup') }),
    select('triggerStatus', [
      { value: '-1', label: t('jobs.statusAll') },
      { value: '0', label: t('jobs.stopped') },
      { value: '1', label: t('jobs.running') },
    ], filters.triggerStatus, { 'aria-label': t('jobs.status') }),
    h('input', { name: 'jobDesc', placeholder: t('job.jobDesc'), value: filters.jobDesc }),
    h('input', { name: 'executorHandler', placeholder: t('job.executorHandler'), value: filters.executorHandler }),
    h('input', { name: 'author', placeholder: t('job.author'), value: filters.author }),
    select('tag', [{ value: '', label: t('jobs.allTags') }, ...tags.map((x) => ({ value: x.tag, label: `${x.tag} (${x.jobs})` }))],
      filters.tag, { 'aria-label': t('job.tags') }),
    h('button', { type: 'submit', class: 'btn btn-primary', id: 'job-search' }, t('common.search')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = Object.fromEntries(new FormData(form));
    app.navigate(routeHref('/jobs', data));
  });

  const page = await get('/jobs', {
    ...filters,
    jobGroup: filters.jobGroup,
    offset,
    limit: LIMIT,
  });
  const rows = page.items.map((job) => jobRow(job, groupName, app));
  main.append(
    pageHeader(t('menu.jobs'),
      h('button', {
        type: 'button', class: 'btn', id: 'job-export', disabled: !filters.jobGroup, title: filters.jobGroup ? '' : t('transfer.exportNeedsGroup'),
        onclick: () => exportJobs(filters.jobGroup),
      }, t('transfer.export')),
      h('button', { type: 'button', class: 'btn', id: 'job-import', onclick: () => importDialog(app) }, t('transfer.import')),
      h('a', { class: 'btn btn-primary', id: 'job-add', href: routeHref('/jobs/new', { jobGroup: filters.jobGroup }) }, t('jobs.add'))),
    form,
    h('div', { class: 'card' },
      table([t('job.id'), t('job.jobDesc'), t('job.jobGroup'), t('job.schedule'), t('job.glueType'), t('jobs.status'), t('job.author'), t('common.actions')],
        rows, { id: 'job-table' }),
      pager(page.total, offset, LIMIT, (o) => app.navigate(routeHref('/jobs', { ...filters, offset: o })))));
}

function jobRow(job, groupName, app) {
  const schedule = job.scheduleType === 'NONE'
    ? app.enumTitle('scheduleTypes', 'NONE')
    : `${app.enumTitle('scheduleTypes', job.scheduleType)}: ${job.scheduleConf || ''}`;
  const glue = job.glueType === 'BEAN'
    ? `${app.enumTitle('glueTypes', 'BEAN')}: ${job.executorHandler || ''}`
    : app.enumTitle('glueTypes', job.glueType);
  const running = job.triggerStatus === 1;
  const reload = () => app.refresh();
  const actions = actionMenu(t('common.actions'), [
    { name: 'trigger', label: t('jobs.trigger'), action: () => triggerModal(job) },
    { name: 'start', label: t('jobs.start'), hidden: running, action: () => guarded(async () => { await post(`/jobs/${job.id}/start`); notify(t('jobs.started')); reload(); }) },
    { name: 'stop', label: t('jobs.stop'), hidden: !running, action: () => guarded(async () => { await post(`/jobs/${job.id}/stop`); notify(t('jobs.stoppedNotice')); reload(); }) },
    { name: 'logs', label: t('jobs.logs'), action: () => app.navigate(routeHref('/logs', { jobGroup: job.jobGroup, jobId: job.id })) },
    { name: 'nodes', label: t('jobs.registeredNodes'), action: () => guarded(() => nodesModal(job.jobGroup)) },
    { name: 'backfill', label: t('backfill.action'), hidden: !['CRON', 'FIX_RATE'].includes(job.scheduleType), action: () => backfillDialog(app, { jobId: job.id }, job.jobDesc) },
    { name: 'next', label: t('jobs.nextTimes'), hidden: job.scheduleType === 'NONE', action: () => guarded(() => nextTimesModal(job.scheduleType, job.scheduleConf, job.timeZone, job)) },
    { name: 'glue', label: t('jobs.glue'), hidden: !isScript(job.glueType), action: () => app.navigate(`#/jobs/${job.id}/glue`) },
    { name: 'wasm', label: t('jobs.wasm'), hidden: job.glueType !== 'GLUE_WASM', action: () => app.navigate(`#/jobs/${job.id}/wasm`) },
    { name: 'edit', label: t('common.edit'), action: () => app.navigate(`#/jobs/${job.id}/edit`) },
    { name: 'copy', label: t('jobs.copy'), action: () => app.navigate(routeHref('/jobs/new', { copy: job.id })) },
    {
      name: 'delete', label: t('common.delete'), kind: 'danger', action: () => guarded(async () => {
        if (!(await confirmDialog(t('jobs.confirmDelete', { name: job.jobDesc })))) return;
        await del(`/jobs/${job.id}`);
        notify(t('common.deleted'));
        reload();
      }),
    },
  ]);
  return h('tr', { dataset: { jobId: job.id } },
    h('td', {}, String(job.id)),
    h('td', { class: 'job-desc' }, job.jobDesc,
      (job.tags || []).length ? h('div', { class: 'tags' }, job.tags.map((tag) => h('span', { class: 'tag' }, tag))) : null),
    h('td', {}, groupName.get(job.jobGroup) || String(job.jobGroup)),
    h('td', {}, schedule),
    h('td', {}, glue),
    h('td', {}, running ? badge(t('jobs.running'), 'green') : badge(t('jobs.stopped'), 'grey')),
    h('td', {}, job.author),
    h('td', {}, actions));
}

/** Upstream's "trigger once": a parameter for this run and optional executor addresses. */
export function triggerModal(job) {
  const param = h('textarea', { name: 'executorParam', id: 'trigger-param', rows: 4, maxlength: 2048 });
  param.value = job.executorParam || '';
  const addresses = h('textarea', { name: 'addressList', id: 'trigger-addresses', rows: 2, maxlength: 512, placeholder: t('jobs.addressHint') });
  modal(t('jobs.triggerTitle', { name: job.jobDesc }), h('div', { class: 'form' },
    field(t('job.executorParam'), param),
    field(t('jobs.addressList'), addresses, t('jobs.addressHint'))), [
    {
      name: 'trigger', label: t('jobs.trigger'), kind: 'btn-primary', action: async (close) => {
        await post(`/jobs/${job.id}/trigger`, {
          executorParam: param.value,
          addressList: addresses.value.trim() || null,
        });
        close();
        notify(t('jobs.triggered'));
      },
    },
  ], { id: 'trigger-modal' });
}

/** The next five fire times of a schedule, computed by the admin. */
export async function nextTimesModal(scheduleType, scheduleConf, timeZone, days = {}) {
  const list = (v) => (v || []).join(',');
  const answer = await get('/schedule/next', {
    scheduleType, scheduleConf, timeZone,
    onlyOn: list(days.onlyOn), neverOn: list(days.neverOn), exclusionWindows: list(days.exclusionWindows),
  });
  modal(t('jobs.nextTimes'), h('ol', { class: 'next-times', id: 'next-times' },
    answer.times.map((ms) => h('li', {}, formatTime(ms)))), [], { id: 'next-times-modal' });
}

/** The executor addresses registered for a group (upstream's "registered nodes"). */
async function nodesModal(groupId) {
  const group = await get(`/groups/${groupId}`);
  const registered = group.registered || [];
  modal(t('jobs.registeredNodes'), registered.length
    ? h('ul', { class: 'plain-list' }, registered.map((a) => h('li', {}, a)))
    : h('p', {}, t('groups.noNodes')));
}
