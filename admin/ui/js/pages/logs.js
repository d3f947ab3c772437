// Log list (upstream /joblog): filters (group, job, status, trigger time range — today by
// default), the runs with trigger and handle results, their messages, rolling log, kill, and
// the nine clear-log options.

import { all, get, post } from '../api.js';
import { brText, formatLocalInput, formatTime, h, routeHref, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { badge, confirmDialog, field, guarded, modal, notify, pageHeader, pager, select, table } from '../ui.js';
import * as logSearch from './log_search.js';

const LIMIT = 20;

function todayRange() {
  const now = new Date();
  const start = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const end = new Date(now.getFullYear(), now.getMonth(), now.getDate(), 23, 59, 59);
  return [formatLocalInput(start), formatLocalInput(end)];
}

export async function render({ main, app }) {
  const q = routeQuery();
  const [today0, today1] = todayRange();
  const groups = await all('/groups');
  // Only administrators may read every group's logs at once; a normal user starts on their
  // first group (the API refuses a normal user's list without one).
  const filters = {
    jobGroup: q.get('jobGroup') || (app.isAdmin() || !groups.length ? '' : String(groups[0].id)),
    jobId: q.get('jobId') || '',
    status: q.get('status') || 'all',
    from: q.get('from') || today0,
    to: q.get('to') || today1,
    executorAddress: q.get('executorAddress') || '',
    text: q.get('text') || '',
  };
  const offset = Number(q.get('offset') || 0);
  const jobs = await all('/jobs', { jobGroup: filters.jobGroup });
  const jobName = new Map(jobs.map((j) => [j.id, j.jobDesc]));

  const groupSelect = select('jobGroup', [...(app.isAdmin() ? [{ value: '', label: t('common.allGroups') }] : []), ...groups.map((g) => ({ value: g.id, label: g.title }))],
    filters.jobGroup, { 'aria-label': t('job.jobGroup'), id: 'log-group' });
  const jobSelect = select('jobId', [{ value: '', label: t('logs.allJobs') }, ...jobs.map((j) => ({ value: j.id, label: `#${j.id} ${j.jobDesc}` }))],
    filters.jobId, { 'aria-label': t('logs.job'), id: 'log-job' });
  groupSelect.addEventListener('change', () => app.navigate(routeHref('/logs', { ...filters, jobGroup: groupSelect.value, jobId: '' })));
  const form = h('form', { class: 'filters', id: 'log-filters' },
    groupSelect, jobSelect,
    select('status', ['all', 'success', 'fail', 'running'].map((s) => ({ value: s, label: t(`logs.status.${s}`) })), filters.status,
      { 'aria-label': t('logs.statusLabel'), id: 'log-status' }),
    h('input', { type: 'datetime-local', step: 1, name: 'from', value: filters.from, 'aria-label': t('common.from') }),
    h('span', {}, '–'),
    h('input', { type: 'datetime-local', step: 1, name: 'to', value: filters.to, 'aria-label': t('common.to') }),
    h('input', { name: 'executorAddress', id: 'log-executor', value: filters.executorAddress, placeholder: t('logs.executorHint'), 'aria-label': t('logs.executor') }),
    logSearch.textInput(filters),
    h('button', { type: 'submit', class: 'btn btn-primary', id: 'log-search' }, t('common.search')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    app.navigate(routeHref('/logs', Object.fromEntries(new FormData(form))));
  });

  const toMs = (value) => (value ? new Date(value).getTime() : '');
  const page = await get('/logs', {
    jobGroup: filters.jobGroup,
    jobId: filters.jobId,
    status: filters.status,
    from: toMs(filters.from),
    to: toMs(filters.to),
    executorAddress: filters.executorAddress,
    offset,
    limit: LIMIT,
  });
  const rows = page.items.map((log) => logRow(log, jobName, app));
  const matches = filters.jobId && filters.text.trim()
    ? await logSearch.results(filters, toMs(filters.from), toMs(filters.to)) : null;
  main.append(
    pageHeader(t('menu.logs'),
      h('button', { type: 'button', class: 'btn btn-danger', id: 'log-clear', onclick: () => clearModal(filters, groups, jobs, app) }, t('logs.clear'))),
    form,
    matches || '',
    h('div', { class: 'card' },
      table([t('logs.id'), t('logs.job'), t('logs.triggerTime'), t('logs.triggerResult'), t('logs.handleTime'), t('logs.handleResult'), t('common.actions')],
        rows, { id: 'log-table' }),
      pager(page.total, offset, LIMIT, (o) => app.navigate(routeHref('/logs', { ...filters, offset: o })))));
}

/** `code` as upstream shows it: 200 success, 0 not yet / running, anything else a failure. */
export function resultBadge(code, pendingLabel) {
  if (code === 200) return badge(t('logs.success'), 'green');
  if (!code) return badge(pendingLabel, 'amber');
  return badge(`${t('logs.fail')} (${code})`, 'red');
}

function messageButton(title, text) {
  if (!text) return null;
  return h('button', {
    type: 'button', class: 'btn btn-link btn-sm', dataset: { msg: title },
    onclick: () => modal(title, h('div', { class: 'message' }, brText(text)), [], { wide: true }),
  }, t('logs.viewMsg'));
}

function logRow(log, jobName, app) {
  const running = log.triggerCode === 200 && !log.handleCode;
  return h('tr', { dataset: { logId: log.id } },
    h('td', {}, String(log.id)),
    h('td', { class: 'job-desc' }, log.jobDesc || jobName.get(log.jobId) || `#${log.jobId}`),
    h('td', {}, formatTime(log.triggerTime)),
    h('td', { class: 'trigger-result' }, resultBadge(log.triggerCode, t('logs.pending')), ' ', messageButton(t('logs.triggerMsg'), log.triggerMsg)),
    h('td', {}, formatTime(log.handleTime)),
    h('td', { class: 'handle-result' }, log.triggerCode === 200 || log.handleCode ? resultBadge(log.handleCode, t('logs.running')) : '',
      ' ', messageButton(t('logs.handleMsg'), log.handleMsg)),
    h('td', {},
      log.triggerCode === 200 ? h('a', { class: 'btn btn-sm', href: `#/logs/${log.id}`, dataset: { rolling: log.id } }, t('logs.rolling')) : null,
      running ? h('button', {
        type: 'button', class: 'btn btn-sm btn-danger', dataset: { kill: log.id },
        onclick: () => guarded(async () => {
          if (!(await confirmDialog(t('logs.confirmKill')))) return;
          const answer = await post(`/logs/${log.id}/kill`);
          notify(answer && answer.msg ? answer.msg : t('logs.killed'));
          app.refresh();
        }),
      }, t('logs.kill')) : null));
}

/** Upstream's clear-log modal: the current group/job scope and one of nine rules. */
function clearModal(filters, groups, jobs, app) {
  const type = select('type', Array.from({ length: 9 }, (_, i) => ({ value: i + 1, label: t(`logs.clearType.${i + 1}`) })), 1, { id: 'clear-type' });
  const group = groups.find((g) => String(g.id) === filters.jobGroup);
  const job = jobs.find((j) => String(j.id) === filters.jobId);
  modal(t('logs.clear'), h('div', { class: 'form' },
    field(t('job.jobGroup'), h('span', {}, group ? group.title : t('common.allGroups'))),
    field(t('logs.job'), h('span', {}, job ? `#${job.id} ${job.jobDesc}` : t('logs.allJobs'))),
    field(t('logs.clearTypeLabel'), type)), [
    {
      name: 'clear', label: t('logs.clear'), kind: 'btn-danger', action: async (close) => {
        const answer = await post('/logs/clear', {
          jobGroup: Number(filters.jobGroup || 0),
          jobId: filters.jobId ? Number(filters.jobId) : null,
          type: Number(type.value),
        });
        close();
        notify(t('logs.cleared', { n: answer.deleted }));
        app.refresh();
      },
    },
  ], { id: 'clear-modal' });
}
