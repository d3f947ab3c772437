// Backfills (POST/GET /backfills, docs/backfill.md): the dialog that asks for one (opened from a
// job's or a workflow's actions), the list of the user's backfills, and one backfill's page with
// its progress — done / failed / running of the range's times — and its cancel. The pages
// refresh every two seconds while a backfill runs.

import { get, post } from '../api.js';
import { formatTime, h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { badge, confirmDialog, field, guarded, modal, notify, pageHeader, select, table } from '../ui.js';

const REFRESH_MS = 2000;
const DAY_MS = 86_400_000;

/** A `datetime-local` value (the browser's zone) for epoch ms. */
function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** Asks for a backfill of `target` (`{ jobId }` or `{ workflowId }`, named `title`) and opens its page. */
export function backfillDialog(app, target, title) {
  const now = Date.now();
  const from = h('input', { type: 'datetime-local', id: 'backfill-from', value: localInput(now - 7 * DAY_MS) });
  const to = h('input', { type: 'datetime-local', id: 'backfill-to', value: localInput(now - 60_000) });
  const parallelism = h('input', { type: 'number', id: 'backfill-parallelism', min: 1, max: 50, value: 1 });
  const existing = select('existing', ['SKIP', 'RERUN'].map((v) => ({ value: v, label: t(`backfill.existing${v}`) })), 'SKIP', { id: 'backfill-existing' });
  modal(t('backfill.title', { name: title }), h('div', { class: 'form' },
    h('p', { class: 'hint' }, t('backfill.hint')),
    field(t('backfill.from'), from), field(t('backfill.to'), to),
    field(t('backfill.parallelism'), parallelism, t('backfill.parallelismHint')),
    field(t('backfill.existing'), existing)), [{
    name: 'backfill', label: t('backfill.start'), kind: 'btn-primary', action: async (close) => {
      const body = {
        ...target,
        from: new Date(from.value).getTime(),
        to: new Date(to.value).getTime(),
        parallelism: Number(parallelism.value || 1),
        existing: existing.value,
      };
      const made = await post('/backfills', body);
      close();
      notify(t('backfill.started', { total: made.total }));
      app.navigate(`#/backfills/${made.id}`);
    },
  }], { id: 'backfill-modal' });
}

/** What a backfill runs: a link to the job's logs or the workflow's instances. */
function targetLink(b) {
  return b.jobId
    ? h('a', { href: `#/logs?jobId=${b.jobId}&jobGroup=${b.jobGroup}` }, `${t('logs.job')} #${b.jobId}`)
    : h('a', { href: `#/workflows/${b.workflowId}/instances` }, `${t('menu.workflows')} #${b.workflowId}`);
}

const COLOURS = { RUNNING: 'blue', DONE: 'green', CANCELLED: 'grey', FAILED: 'red' };

function statusBadge(status) {
  return badge(t(`backfill.status${status}`), COLOURS[status] || 'grey');
}

/** `done / failed / running of N` and a bar. */
function progress(b) {
  const pct = b.total > 0 ? Math.round(((b.succeeded + b.failed + b.skipped) * 100) / b.total) : 100;
  return h('div', { class: 'backfill-progress' },
    h('div', { class: 'progress', role: 'progressbar', 'aria-valuenow': pct, 'aria-valuemin': 0, 'aria-valuemax': 100 },
      h('div', { class: 'progress-bar', style: `width: ${pct}%` })),
    h('span', { class: 'backfill-counts' }, t('backfill.counts', {
      succeeded: b.succeeded, failed: b.failed, running: b.running, skipped: b.skipped, total: b.total,
    })));
}

export async function render({ main, params, app }) {
  if (params[0]) return renderOne({ main, id: Number(params[0]), app });
  const rows = (await get('/backfills')).map((b) => h('tr', { dataset: { backfill: b.id } },
    h('td', {}, h('a', { href: `#/backfills/${b.id}` }, `#${b.id}`)),
    h('td', {}, targetLink(b)),
    h('td', {}, `${formatTime(b.from)} – ${formatTime(b.to)}`),
    h('td', {}, statusBadge(b.status)),
    h('td', {}, progress(b)),
    h('td', {}, b.author)));
  main.append(pageHeader(t('backfill.list')),
    h('div', { class: 'card' }, table([t('backfill.id'), t('backfill.target'), t('backfill.range'), t('jobs.status'), t('backfill.progress'), t('job.author')],
      rows, { id: 'backfill-table', empty: t('backfill.none') })));
  return undefined;
}

async function renderOne({ main, id, app }) {
  let b = await get(`/backfills/${id}`);
  let timer = null;
  const body = h('div', { class: 'card', id: 'backfill-detail' });
  const cancel = h('button', { type: 'button', class: 'btn btn-danger', id: 'backfill-cancel' }, t('backfill.cancel'));
  cancel.addEventListener('click', () => guarded(async () => {
    if (!(await confirmDialog(t('backfill.confirmCancel')))) return;
    b = await post(`/backfills/${id}/cancel`);
    notify(t('backfill.cancelled'));
    draw();
  }));
  const draw = () => {
    cancel.hidden = b.status !== 'RUNNING';
    replace(body,
      h('p', {}, h('span', { id: 'backfill-status' }, statusBadge(b.status)), ' ', targetLink(b)),
      h('p', {}, t('backfill.range'), ': ', formatTime(b.from), ' – ', formatTime(b.to), ' · ',
        t('backfill.parallelism'), ': ', String(b.parallelism), ' · ', t(`backfill.existing${b.existing}`)),
      progress(b),
      b.message ? h('p', { class: 'alert alert-error' }, b.message) : null);
  };
  main.append(pageHeader(t('backfill.one', { id }), cancel, h('a', { class: 'btn', href: '#/backfills' }, t('backfill.list'))), body);
  draw();
  if (b.status === 'RUNNING' || b.running > 0) {
    timer = setInterval(async () => {
      try {
        b = await get(`/backfills/${id}`);
        draw();
      } catch {
        // Retried at the next tick.
      }
      if (b.status !== 'RUNNING' && b.running === 0) {
        clearInterval(timer);
        timer = null;
      }
    }, REFRESH_MS);
  }
  return () => {
    if (timer) clearInterval(timer);
    timer = null;
  };
}
