// Rolling log (upstream /joblog/logDetailPage): pulls the run's log from the executor that ran
// it, from line 1, every 3 s; appends each new part; stops at the end ("[Rolling Log End]"),
// after one pull if the run had already finished ("[Rolling Log Finish]"), or after more than
// 20 failed pulls in a row. A failed trigger has no executor log: its message is shown instead.

import { get, post } from '../api.js';
import { brText, formatTime, h } from '../dom.js';
import { t } from '../i18n.js';
import { confirmDialog, guarded, notify, pageHeader } from '../ui.js';
import { replayPanel } from './log_replay.js';
import { resultBadge } from './logs.js';

const INTERVAL_MS = 3000;
const MAX_FAILURES = 20;

export async function render({ main, params }) {
  const id = Number(params[0]);
  const log = await get(`/logs/${id}`);
  const facts = h('dl', { class: 'facts facts-inline' },
    h('dt', {}, t('logs.job')), h('dd', {}, `#${log.jobId} ${log.jobDesc || ''}`),
    h('dt', {}, t('logs.triggerTime')), h('dd', {}, formatTime(log.triggerTime)),
    h('dt', {}, t('logs.executor')), h('dd', { class: 'mono' }, log.executorAddress || ''),
    h('dt', {}, t('job.executorParam')), h('dd', { class: 'mono' }, log.executorParam || ''),
    h('dt', {}, t('logs.handleResult')), h('dd', { id: 'log-handle' }, resultBadge(log.handleCode, t('logs.running'))));
  const consoleBox = h('pre', { class: 'log-console', id: 'log-console' });
  const status = h('div', { class: 'log-status', id: 'log-status' }, t('logs.rollingNow'));
  const kill = h('button', { type: 'button', class: 'btn btn-danger', id: 'log-kill', hidden: !(log.triggerCode === 200 && !log.handleCode) },
    t('logs.kill'));
  kill.addEventListener('click', () => guarded(async () => {
    if (!(await confirmDialog(t('logs.confirmKill')))) return;
    const answer = await post(`/logs/${id}/kill`);
    notify(answer && answer.msg ? answer.msg : t('logs.killed'));
  }));
  const replay = replayPanel(log);
  main.append(
    pageHeader(t('logs.rollingTitle', { id }), kill, replay.button, h('a', { class: 'btn', href: `#/logs?jobGroup=${log.jobGroup}&jobId=${log.jobId}` }, t('common.back'))),
    h('div', { class: 'card' }, facts),
    h('div', { class: 'card' }, consoleBox, status),
    replay.result);

  if (log.triggerCode !== 200) {
    status.replaceChildren(h('div', { class: 'alert alert-error' }, t('logs.triggerFailed')), h('div', { class: 'message' }, brText(log.triggerMsg)));
    return undefined;
  }

  const finishedAtLoad = Boolean(log.handleCode);
  let fromLine = 1;
  let failures = 0;
  let timer = null;
  let stopped = false;
  const stop = (text, kind) => {
    stopped = true;
    kill.hidden = true;
    status.replaceChildren(h('span', { class: `log-end log-end-${kind}` }, text));
  };
  const pull = async () => {
    timer = null;
    try {
      const part = await get(`/logs/${id}/content`, { fromLine });
      if (stopped) return;
      failures = 0;
      if (part.fromLineNum === fromLine && fromLine <= part.toLineNum) {
        // The executor's own lines carry upstream's `<br>` separators; shown as line breaks, all
        // other markup (a job's output included) stays text.
        consoleBox.append(...brText(part.logContent));
        fromLine = part.toLineNum + 1;
        consoleBox.scrollTop = consoleBox.scrollHeight;
      }
      if (part.end && fromLine > part.toLineNum) {
        stop('[Rolling Log End]', 'end');
        guarded(async () => {
          const done = await get(`/logs/${id}`);
          document.getElementById('log-handle')?.replaceChildren(resultBadge(done.handleCode, t('logs.running')));
        });
        return;
      }
      if (finishedAtLoad) {
        stop('[Rolling Log Finish]', 'end');
        return;
      }
    } catch (e) {
      if (stopped) return;
      failures += 1;
      if (failures > MAX_FAILURES) {
        stop(t('logs.pullFailed', { reason: e.message }), 'error');
        return;
      }
    }
    if (!stopped) timer = setTimeout(pull, INTERVAL_MS);
  };
  await pull();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
