// Text search in the logs the admins keep of one job's runs (lines its executors shipped with
// --job-logs both|admin; GET /api/v1/jobs/{id}/log-search): the log page shows the box when a
// job is chosen and the matching lines above its runs, newest run first, a page at a time.

import { get } from '../api.js';
import { formatTime, h } from '../dom.js';
import { t } from '../i18n.js';
import { guarded, table } from '../ui.js';

const LIMIT = 50;

/** The search box of the filter form (only with a job chosen). */
export function textInput(filters) {
  if (!filters.jobId) return null;
  return h('input', {
    name: 'text', id: 'log-text', value: filters.text, maxlength: 200,
    placeholder: t('logs.textHint'), 'aria-label': t('logs.text'),
  });
}

function matchRow(match) {
  return h('tr', { dataset: { logId: match.logId, line: match.lineNum } },
    h('td', {}, h('a', { href: `#/logs/${match.logId}` }, String(match.logId))),
    h('td', {}, formatTime(match.triggerTime)),
    h('td', {}, String(match.lineNum)),
    h('td', { class: 'log-line' }, match.line));
}

/** The matches of `filters.text` in the job's runs between `from` and `to` (epoch ms or ''). */
export async function results(filters, from, to) {
  const query = { text: filters.text, limit: LIMIT };
  if (from !== '') query.from = from;
  if (to !== '') query.to = to;
  const first = await get(`/jobs/${filters.jobId}/log-search`, query);
  const body = table([t('logs.id'), t('logs.triggerTime'), t('logs.line'), t('logs.text')],
    first.matches.map(matchRow), { id: 'log-matches', empty: t('logs.noMatches') });
  const more = h('button', { type: 'button', class: 'btn btn-sm', id: 'log-text-more' }, t('logs.moreMatches'));
  let next = first.next;
  more.hidden = !next;
  more.addEventListener('click', () => guarded(async () => {
    const page = await get(`/jobs/${filters.jobId}/log-search`, { ...query, after: next });
    body.querySelector('tbody').append(...page.matches.map(matchRow));
    next = page.next;
    more.hidden = !next;
  }));
  return h('div', { class: 'card', id: 'log-text-results' },
    h('h3', {}, t('logs.matchesTitle', { text: filters.text })), body, more);
}
