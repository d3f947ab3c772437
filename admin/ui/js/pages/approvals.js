// Approvals (docs/replay.md, "Capabilities and approval"): module versions and grant changes
// that would let a job reach further — a new kind of host call, a new host, a group secret, a
// raised limit — held until an administrator decides. Each row shows what is new (the
// capability diff); a held module has a What if button (wasm_what_if.js: the version replayed
// against the job's recorded runs) so the decision is made on what it would have done. The
// page (#/approvals) lists every job's; the module page shows one job's (`approvalsCard`).

import { get, post } from '../api.js';
import { formatTime, h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { badge, guarded, notify, pageHeader, table } from '../ui.js';
import { whatIfDialog } from './wasm_what_if.js';

const STATUS_KIND = { pending: 'amber', approved: 'green', refused: 'red' };

export async function render({ main, app }) {
  const box = h('div', { id: 'approvals' });
  const reload = async () => replace(box, approvalsTable(await get('/approvals'), reload, true, app.isAdmin()));
  main.append(pageHeader(t('approvals.title')), h('div', { class: 'card' }, box));
  await reload();
}

/** The approvals of job `jobId`, with `onDecided` called after a decision (the module page
 * reloads its versions); `isAdmin` shows the decision buttons. */
export async function approvalsCard(jobId, isAdmin, onDecided) {
  const box = h('div', { id: 'job-approvals' });
  const reload = async () => {
    replace(box, approvalsTable(await get('/approvals', { jobId }), async () => {
      await reload();
      if (onDecided) await onDecided();
    }, false, isAdmin));
  };
  await reload();
  return h('div', { class: 'card' }, h('h3', {}, t('approvals.title')), box);
}

function approvalsTable(approvals, reload, withJob, isAdmin) {
  const rows = approvals.map((a) => {
    const actions = h('span', { class: 'row-actions' });
    if (a.kind === 'module' && a.versionId) {
      actions.append(h('button', {
        type: 'button', class: 'btn btn-sm', dataset: { approvalWhatIf: a.id },
        onclick: () => guarded(() => whatIfDialog(a.jobId, a.versionId)),
      }, t('wasm.whatIf')));
    }
    if (a.status === 'pending' && isAdmin) {
      for (const [verb, label, kind] of [['approve', 'approvals.approve', 'btn-primary'], ['refuse', 'approvals.refuse', '']]) {
        actions.append(h('button', {
          type: 'button', class: `btn btn-sm ${kind}`, dataset: { [verb]: a.id },
          onclick: () => guarded(async () => {
            await post(`/approvals/${a.id}/${verb}`, {});
            notify(t(`approvals.${verb}d`, { id: a.id }));
            await reload();
          }),
        }, t(label)));
      }
    }
    const what = h('ul', { class: 'widening' }, ...(a.widening || []).map((line) => h('li', {}, line)));
    const row = [
      String(a.id),
      t(`approvals.kind.${a.kind}`) + (a.versionId ? ` (${t('approvals.version', { id: a.versionId })})` : ''),
      what,
      `${a.requestedBy} · ${formatTime(a.requestedAt)}`,
      badge(t(`approvals.status.${a.status}`), STATUS_KIND[a.status] || 'grey'),
      a.decidedBy ? `${a.decidedBy} · ${formatTime(a.decidedAt)}${a.note ? ` — ${a.note}` : ''}` : '',
      actions,
    ];
    if (withJob) row.splice(1, 0, h('a', { href: `#/jobs/${a.jobId}/wasm` }, a.jobName ? `${a.jobName} (#${a.jobId})` : `#${a.jobId}`));
    return row;
  });
  const headers = [t('approvals.id'), t('approvals.kindLabel'), t('approvals.widening'), t('approvals.requested'),
    t('approvals.statusLabel'), t('approvals.decided'), ''];
  if (withJob) headers.splice(1, 0, t('approvals.job'));
  return table(headers, rows, { id: 'approvals-table', empty: t('approvals.none') });
}
