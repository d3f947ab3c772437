// One workflow instance (GET /workflow-instances/{id}): its graph coloured by each node's
// state, the picked node's runs (attempt, state, times, log, output, message), the context,
// and the operations — stop, rerun from failure, rerun, mark a failed node done, decide a
// waiting approval — with links between a sub-workflow's run and its child instance. Refreshes
// every two seconds while the instance is queued or running.

import { get, post } from '../api.js';
import { formatTime, h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { drawGraph } from '../graph.js';
import { confirmDialog, field, guarded, modal, notify, pageHeader, table } from '../ui.js';
import { statusBadge, triggerText } from './workflow_instances.js';

const REFRESH_MS = 2000;

/** Each node's state: its newest run's, leaving out runs a rerun revoked. */
function nodeStates(instance) {
  const states = new Map();
  for (const run of [...instance.runs].sort((a, b) => a.id - b.id)) {
    if (run.status !== 'REVOKED') states.set(run.node, run.status);
  }
  return states;
}

/** JSON shown as indented text; a string output (an upstream handle message, say) as itself. */
function json(value) {
  return h('pre', { class: 'wf-json' }, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
}

export async function render({ main, params, app }) {
  const id = Number(params[0]);
  let instance = await get(`/workflow-instances/${id}`);
  const workflow = await get(`/workflows/${instance.workflowId}`).catch(() => null);
  let picked = null;
  let timer = null;

  const header = h('div', {});
  const canvas = h('div', { class: 'wf-canvas', id: 'instance-canvas' });
  const detail = h('div', { class: 'card', id: 'instance-node' });
  const context = h('div', { id: 'instance-context' });

  const operation = (path, confirmText, after) => guarded(async () => {
    if (confirmText && !(await confirmDialog(confirmText))) return;
    const answer = await post(`/workflow-instances/${id}${path}`);
    after(answer);
  });

  function draw() {
    const states = nodeStates(instance);
    const running = ['QUEUED', 'RUNNING'].includes(instance.status);
    const failed = ['FAILED', 'STOPPED'].includes(instance.status);
    replace(header,
      pageHeader(t('wf.instanceTitle', { id, name: workflow ? workflow.name : `#${instance.workflowId}` }),
        h('button', {
          type: 'button', class: 'btn btn-danger', id: 'instance-stop', hidden: !running,
          onclick: () => operation('/stop', t('wf.confirmStop'), (i) => { instance = i; notify(t('wf.stopped')); draw(); }),
        }, t('wf.stop')),
        h('button', {
          type: 'button', class: 'btn', id: 'instance-rerun-failed', hidden: !failed,
          onclick: () => operation('/rerun-failed', null, (i) => { instance = i; notify(t('wf.rerunningFailed')); draw(); poll(); }),
        }, t('wf.rerunFailed')),
        h('button', {
          type: 'button', class: 'btn', id: 'instance-rerun',
          onclick: () => operation('/rerun', t('wf.confirmRerun'), (started) => {
            notify(t('wf.started'));
            app.navigate(`#/workflow-instances/${started.instanceId}`);
          }),
        }, t('wf.rerun')),
        h('a', { class: 'btn', href: `#/workflows/${instance.workflowId}/instances` }, t('wf.instances'))),
      h('div', { class: 'card wf-summary' },
        h('span', { id: 'instance-status' }, statusBadge(instance.status)), ' ',
        h('span', { class: 'muted' }, triggerText(instance.triggerType)), ' · ',
        instance.parentInstanceId ? [h('a', { href: `#/workflow-instances/${instance.parentInstanceId}`, id: 'instance-parent' },
          t('wf.parentInstance', { id: instance.parentInstanceId })), ' · '] : null,
        t('wf.startTime'), ' ', formatTime(instance.startTime),
        instance.endTime > 0 ? [' · ', t('wf.endTime'), ' ', formatTime(instance.endTime)] : null,
        h('div', { class: 'wf-legend' }, ['SUCCEEDED', 'FAILED', 'FIRED', 'DUE', 'WAITING', 'SKIPPED', 'PASSED', 'STOPPED'].map((s) =>
          h('span', { class: `wf-key wf-${s}` }, t(`wf.status${s}`))))));
    replace(canvas, drawGraph(instance.graph, {
      status: (name) => states.get(name) || '',
      subtitle: (n) => {
        const state = states.get(n.name);
        return state ? t(`wf.status${state}`) : t('wf.notYet');
      },
      selected: picked,
      onSelect: (name) => { picked = name; draw(); },
    }));
    replace(context, h('h4', {}, t('wf.context')), json(instance.context));
    drawDetail(states);
  }

  function drawDetail(states) {
    if (!picked) {
      replace(detail, h('p', { class: 'muted' }, t('wf.pickNode')));
      return;
    }
    const node = instance.graph.nodes.find((n) => n.name === picked);
    const runs = instance.runs.filter((r) => r.node === picked).sort((a, b) => a.id - b.id);
    const state = states.get(picked);
    const canMarkDone = ['FAILED', 'STOPPED'].includes(state) && instance.status !== 'QUEUED';
    const canDecide = state === 'WAITING' && instance.status === 'RUNNING' && node && node.kind === 'APPROVAL';
    const rows = runs.map((r) => h('tr', { dataset: { run: r.id } },
      h('td', {}, String(r.attempt)),
      h('td', { class: 'run-status' }, statusBadge(r.status)),
      h('td', {}, formatTime(r.firedTime)),
      h('td', {}, formatTime(r.endTime)),
      h('td', {}, r.logId ? h('a', { href: `#/logs/${r.logId}`, class: 'run-log' }, `#${r.logId}`) : ''),
      h('td', { class: 'run-message' }, r.message || '',
        r.childInstanceId ? [' ', h('a', { href: `#/workflow-instances/${r.childInstanceId}`, class: 'run-child' },
          t('wf.childInstance', { id: r.childInstanceId }))] : null)));
    const lastOutput = [...runs].reverse().find((r) => r.output !== null && r.output !== undefined);
    const mapped = [...runs].reverse().find((r) => r.items);
    replace(detail,
      h('h3', {}, picked, ' ', state ? statusBadge(state) : h('span', { class: 'muted' }, t('wf.notYet'))),
      node && node.kind === 'WORKFLOW' ? h('p', { class: 'muted' }, `↳ ${t('wf.childWorkflow')} #${node.workflowId}`) : null,
      node && node.kind !== 'WORKFLOW' ? h('p', { class: 'muted' }, `#${node.jobId}`, node.param ? ` · ${t('job.executorParam')}: ${node.param}` : '') : null,
      node && node.kind === 'MAP' ? mapProgress(node, mapped) : null,
      table([t('wf.attempt'), t('jobs.status'), t('wf.firedTime'), t('wf.endTime'), t('jobs.logs'), t('logs.handleMsg')],
        rows, { id: 'instance-runs', empty: t('wf.notYet') }),
      h('h4', {}, t('wf.output')),
      lastOutput ? h('div', { id: 'instance-output' }, json(lastOutput.output)) : h('p', { class: 'muted', id: 'instance-output' }, t('wf.noOutput')),
      canMarkDone ? h('button', { type: 'button', class: 'btn', id: 'instance-mark-done', onclick: () => markDone(picked) }, t('wf.markDone')) : null,
      canDecide ? h('button', { type: 'button', class: 'btn btn-primary', id: 'instance-decide', onclick: () => decide(picked) }, t('wf.decide')) : null);
  }

  /** A map node's progress: done, failed and running of all its items, and its failed items. */
  function mapProgress(node, run) {
    const c = run ? run.items : { total: 0, succeeded: 0, failed: 0, running: 0 };
    const pct = (n) => (c.total > 0 ? `${(100 * n) / c.total}%` : '0%');
    const box = h('div', { class: 'wf-map-progress', id: 'instance-map-progress' },
      h('p', { class: 'muted' }, `⇉ ${node.items} · ${t('wf.parallelism')} ${node.parallelism ?? 10}`),
      h('div', { class: 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': c.total, 'aria-valuenow': c.succeeded + c.failed },
        h('span', { class: 'progress-done', style: `width: ${pct(c.succeeded)}` }),
        h('span', { class: 'progress-failed', style: `width: ${pct(c.failed)}` })),
      h('p', { id: 'instance-map-counts' }, t('wf.itemsProgress', { done: c.succeeded, failed: c.failed, running: c.running, total: c.total })));
    if (run && c.failed > 0) {
      const list = h('div', { id: 'instance-failed-items' }, h('p', { class: 'muted' }, '…'));
      box.append(h('h4', {}, t('wf.failedItems')), list);
      get(`/workflow-instances/${id}/nodes/${encodeURIComponent(node.name)}/items?status=FAILED&run=${run.id}&limit=20`).then((page) => {
        replace(list, table([t('wf.itemIndex'), t('wf.item'), t('jobs.logs'), t('logs.handleMsg')], page.rows.map((item) => h('tr', {},
          h('td', {}, String(item.index)),
          h('td', {}, h('code', {}, JSON.stringify(item.item))),
          h('td', {}, item.logId ? h('a', { href: `#/logs/${item.logId}` }, `#${item.logId}`) : ''),
          h('td', {}, item.message || ''))), { id: 'instance-failed-items-table' }));
      }).catch(() => replace(list, ''));
    }
    return box;
  }

  /** An approval's decision: approve or reject, with an optional comment (both audited). */
  function decide(node) {
    const comment = h('textarea', { id: 'decide-comment', rows: 3, maxlength: 1000 });
    const send = (verb, done) => async (close) => {
      const text = comment.value.trim();
      instance = await post(`/workflow-instances/${id}/nodes/${encodeURIComponent(node)}/${verb}`, text ? { comment: text } : {});
      close();
      notify(t(done));
      draw();
      poll();
    };
    modal(t('wf.decideTitle', { node }), h('div', { class: 'form' }, field(t('wf.comment'), comment, t('wf.decideHint'))), [
      { name: 'approve', label: t('wf.approve'), kind: 'btn-primary', action: send('approve', 'wf.approved') },
      { name: 'reject', label: t('wf.reject'), kind: 'btn-danger', action: send('reject', 'wf.rejected') },
    ], { id: 'decide-modal' });
  }

  function markDone(node) {
    const output = h('textarea', { id: 'mark-done-output', rows: 5, class: 'mono', placeholder: '{"rows": 0}' });
    modal(t('wf.markDoneTitle', { node }), h('div', { class: 'form' }, field(t('wf.output'), output, t('wf.markDoneHint'))), [{
      name: 'done', label: t('wf.markDone'), kind: 'btn-primary', action: async (close) => {
        const text = output.value.trim();
        let body = {};
        if (text) {
          try {
            body = { output: JSON.parse(text) };
          } catch {
            body = { output: text };
          }
        }
        instance = await post(`/workflow-instances/${id}/nodes/${encodeURIComponent(node)}/done`, body);
        close();
        notify(t('wf.markedDone'));
        draw();
        poll();
      },
    }], { id: 'mark-done-modal' });
  }

  /** Refreshes while the instance may still change; stops when it is over or the page left. */
  function poll() {
    if (timer) return;
    timer = setInterval(async () => {
      try {
        const fresh = await get(`/workflow-instances/${id}`);
        // Redraw only on a change, so a node being clicked is not replaced under the pointer.
        if (JSON.stringify(fresh) !== JSON.stringify(instance)) {
          instance = fresh;
          draw();
        }
      } catch {
        // A failed refresh (the admin restarting, say) is retried at the next tick.
      }
      if (!['QUEUED', 'RUNNING'].includes(instance.status)) {
        clearInterval(timer);
        timer = null;
      }
    }, REFRESH_MS);
  }

  main.append(header, h('div', { class: 'card' }, canvas), detail, h('div', { class: 'card' }, context));
  draw();
  if (['QUEUED', 'RUNNING'].includes(instance.status)) poll();
  return () => {
    if (timer) clearInterval(timer);
    timer = null;
  };
}
