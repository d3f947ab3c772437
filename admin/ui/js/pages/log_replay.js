// The log page's replay (docs/replay.md): a recorded Wasm run is run again from its journal on
// an executor of its group — no network, no new run in the history — and the page shows whether
// the replay is identical to the original and, if not, what differs and the first line where
// the two part. A run whose record cannot be replayed shows why instead of the button.

import { post } from '../api.js';
import { h } from '../dom.js';
import { t } from '../i18n.js';
import { badge, guarded, table } from '../ui.js';

/** The replay button (or why there is none) and the card the result goes in, for `log`. */
export function replayPanel(log) {
  const result = h('div', { class: 'card', id: 'replay-result', hidden: true });
  if (!log.flight) return { button: null, result };
  if (!log.flight.replayable) {
    const why = h('span', { class: 'muted', id: 'replay-unavailable' }, t('replay.unavailable', { reason: log.flight.reason || '' }));
    return { button: why, result };
  }
  const button = h('button', { type: 'button', class: 'btn', id: 'log-replay', title: t('replay.hint') }, t('replay.button'));
  button.addEventListener('click', () => guarded(async () => {
    button.disabled = true;
    result.hidden = false;
    result.replaceChildren(h('p', { class: 'muted' }, t('replay.running')));
    try {
      const answer = await post(`/logs/${log.id}/replay`);
      result.replaceChildren(...resultNodes(answer));
    } catch (e) {
      result.replaceChildren(h('div', { class: 'alert alert-error', id: 'replay-error' }, e.message || String(e)));
    } finally {
      button.disabled = false;
    }
  }));
  return { button, result };
}

function resultNodes(answer) {
  const { comparison, original, replay } = answer;
  const verdict = comparison.identical
    ? badge(t('replay.identical'), 'green')
    : badge(t('replay.differs', { what: comparison.differs.join(', ') }), 'red');
  const row = (label, key) => [label, String(original[key] ?? ''), String(replay[key] ?? '')];
  const nodes = [
    h('h3', {}, t('replay.title')),
    h('p', { id: 'replay-verdict' }, verdict, ' ', h('span', { class: 'muted mono' }, t('replay.on', { executor: answer.executor }))),
    table([t('replay.what'), t('replay.original'), t('replay.replay')], [
      row(t('replay.outcome'), 'outcome'),
      row(t('replay.fuel'), 'fuel'),
      row(t('replay.memory'), 'peakMemoryBytes'),
      row(t('replay.lines'), 'lines'),
    ], { id: 'replay-table' }),
  ];
  const first = comparison.firstLine;
  if (first) {
    nodes.push(h('div', { id: 'replay-first-line' },
      h('p', {}, t('replay.firstLine', { line: first.line })),
      h('pre', { class: 'log-console' }, `- ${first.original ?? t('replay.noLine')}\n+ ${first.replay ?? t('replay.noLine')}`)));
  }
  if (answer.unanswered.length) {
    nodes.push(h('p', { class: 'muted' }, t('replay.unanswered', { calls: answer.unanswered.join('; ') })));
  }
  if (answer.originalLog) nodes.push(h('p', { class: 'muted' }, answer.originalLog));
  return nodes;
}
