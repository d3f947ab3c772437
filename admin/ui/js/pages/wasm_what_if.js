// What-if (docs/replay.md): a module version — typically a candidate, uploaded but not run by
// triggers — replayed against the job's newest recorded runs, with the network off and no new
// runs. The dialog shows, per run, whether the version would have done the same, and if not
// what differs and the first line where it parts from the original.

import { post } from '../api.js';
import { formatSize, h } from '../dom.js';
import { t } from '../i18n.js';
import { badge, modal, table } from '../ui.js';

/** Runs the what-if of `version` over `jobId`'s newest recorded runs and shows the table. */
export async function whatIfDialog(jobId, version) {
  const body = h('div', { id: 'what-if' }, h('p', { class: 'muted' }, t('whatIf.running')));
  const dialog = modal(t('whatIf.title', { id: version }), body, [], { wide: true, id: 'what-if-modal' });
  try {
    const answer = await post(`/jobs/${jobId}/wasm/what-if`, { version, runs: 10 });
    body.replaceChildren(...resultNodes(answer));
  } catch (e) {
    dialog.error(e.message || String(e));
    body.replaceChildren();
  }
}

function resultNodes(answer) {
  const summary = h('p', { id: 'what-if-summary' },
    t('whatIf.summary', { identical: answer.identical, different: answer.different, notReplayed: answer.notReplayed }));
  const rows = answer.runs.map((run) => {
    const link = h('a', { href: `#/logs/${run.logId}` }, `#${run.logId}`);
    if (!run.replay) return [link, badge(t('whatIf.notReplayed'), 'grey'), run.error || '', '', '', '', ''];
    const { comparison, original, replay, unanswered } = run.replay;
    const verdict = comparison.identical
      ? badge(t('whatIf.same'), 'green')
      : badge(t('whatIf.different', { what: comparison.differs.join(', ') }), 'red');
    const first = comparison.firstLine
      ? `${comparison.firstLine.line}: ${comparison.firstLine.original ?? '—'} → ${comparison.firstLine.replay ?? '—'}`
      : '';
    const memory = `${formatSize(original.peakMemoryBytes)} → ${formatSize(replay.peakMemoryBytes)}`;
    // Host calls the journal could not answer: what the version asks for that the original did not.
    const asked = h('span', { class: 'mono', dataset: { unanswered: run.logId } }, (unanswered || []).join(', '));
    return [link, verdict, `${original.outcome} → ${replay.outcome}`, `${original.fuel} → ${replay.fuel}`, memory, asked, first];
  });
  return [summary,
    table([t('whatIf.run'), t('whatIf.result'), t('whatIf.outcome'), t('whatIf.fuel'), t('whatIf.memory'),
      t('whatIf.unanswered'), t('whatIf.firstLine')], rows,
      { id: 'what-if-table', empty: t('whatIf.noRuns') })];
}
