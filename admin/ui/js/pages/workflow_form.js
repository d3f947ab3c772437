// The workflow editor (POST /workflows, PUT /workflows/{id}): the workflow's settings, its
// nodes (each runs a job, with overrides, or is a switch, an approval or a sub-workflow) and edges (with a condition on the
// parent's outcome and an optional CEL `if` on data), and a live drawing of
// the DAG. Click a node in the drawing to pick its row; shift-click a second node to add an
// edge from the picked one. The admin checks the graph again; its 400 names the node at fault.

import { all, get, post, put } from '../api.js';
import { h, replace, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { drawGraph } from '../graph.js';
import { field, notify, pageHeader, select } from '../ui.js';
import { channelSelect, chosen, splitWindows } from './job_form.js';
import { jobLabel } from './workflows.js';

const DEFAULTS = {
  name: '', scheduleType: 'NONE', scheduleConf: '', timeZone: '', misfireStrategy: 'DO_NOTHING',
  maxInstances: 1, overflow: 'SKIP', graph: { nodes: [], edges: [] },
};
const CONDITIONS = ['SUCCESS', 'FAILURE', 'ALWAYS'];
const KINDS = ['JOB', 'SWITCH', 'APPROVAL', 'WORKFLOW', 'MAP'];

/** A declared JSON Schema in a few words: an object's properties with their types (`*` required). */
export function shape(schema) {
  if (!schema || typeof schema !== 'object') return '';
  const type = (s) => (Array.isArray(s.type) ? s.type.join('|') : s.type) || (s.enum ? 'enum' : 'any');
  if (schema.properties && typeof schema.properties === 'object') {
    const required = new Set(schema.required || []);
    return `{${Object.entries(schema.properties).map(([k, v]) => `${k}${required.has(k) ? '*' : ''}: ${type(v || {})}`).join(', ')}}`;
  }
  return type(schema);
}

/** A schema textarea's JSON, or null when empty; throws naming `what` when it is not JSON. */
function safeJson(text) {
  try { return JSON.parse(text); } catch (e) { return null; }
}

function schemaOf(text, what) {
  if (!text || !text.trim()) return null;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(t('wf.schemaNotJson', { what }));
  }
}
const NODE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export async function render({ main, params, app }) {
  const id = params[0] ? Number(params[0]) : null;
  const groups = await all('/groups');
  const [calendars, channels] = await Promise.all([get('/calendars'), get('/alarm-channels')]);
  const workflow = id ? await get(`/workflows/${id}`)
    : { ...DEFAULTS, jobGroup: routeQuery().get('jobGroup') || (groups[0] && groups[0].id) || '' };
  // Every job the user may use, by id: nodes may run jobs of any of the user's groups.
  const jobs = new Map();
  for (const g of groups) {
    for (const job of await all('/jobs', { jobGroup: g.id })) jobs.set(job.id, { ...job, groupTitle: g.title });
  }
  const jobOptions = [...jobs.values()].map((j) => ({ value: j.id, label: `#${j.id} ${j.jobDesc} (${j.groupTitle})` }));
  // The workflows a sub-workflow node may start: the user's, other than this one.
  const workflows = (await get('/workflows')).filter((w) => w.id !== id);
  const workflowOptions = workflows.map((w) => ({ value: w.id, label: `#${w.id} ${w.name}` }));
  const workflowLabel = (wid) => {
    const w = workflows.find((x) => x.id === Number(wid));
    return `↳ ${w ? w.name : `#${wid}`}`;
  };

  // The graph being edited: rows update these objects in place.
  const nodes = workflow.graph.nodes.map((n) => ({ ...n }));
  const edges = workflow.graph.edges.map((e) => ({ when: 'SUCCESS', ...e }));
  let picked = null;

  const input = (name, attrs = {}) => h('input', { name, id: `workflow-${name}`, value: workflow[name] ?? '', ...attrs });
  const name = input('name', { maxlength: 255 });
  const jobGroup = select('jobGroup', groups.map((g) => ({ value: g.id, label: g.title })), workflow.jobGroup, { id: 'workflow-jobGroup' });
  const scheduleType = select('scheduleType', ['NONE', 'CRON', 'FIX_RATE'].map((v) => ({ value: v, label: app.enumTitle('scheduleTypes', v) })),
    workflow.scheduleType, { id: 'workflow-scheduleType' });
  const scheduleConf = input('scheduleConf', { maxlength: 100, value: workflow.scheduleConf || '' });
  const timeZone = input('timeZone', { placeholder: t('job.timeZoneDefault'), value: workflow.timeZone || '' });
  const misfire = select('misfireStrategy', ['DO_NOTHING', 'FIRE_ONCE_NOW'].map((v) => ({ value: v, label: app.enumTitle('misfireStrategies', v) })),
    workflow.misfireStrategy, { id: 'workflow-misfireStrategy' });
  const maxInstances = input('maxInstances', { type: 'number', min: 1, max: 100 });
  const overflow = select('overflow', ['SKIP', 'QUEUE'].map((v) => ({ value: v, label: t(`wf.overflow${v}`) })),
    workflow.overflow, { id: 'workflow-overflow' });
  const calendarSelect = (key) => h('select', {
    name: key, id: `workflow-${key}`, multiple: true, size: Math.min(4, Math.max(2, calendars.length)),
  }, calendars.map((c) => h('option', { value: String(c.id), selected: (workflow[key] || []).includes(c.id) }, c.name)));
  const onlyOn = calendarSelect('onlyOn');
  const neverOn = calendarSelect('neverOn');
  const windows = input('exclusionWindows', { maxlength: 120, placeholder: '23:00-01:00', value: (workflow.exclusionWindows || []).join(', ') });
  const alarmEmail = input('alarmEmail', { maxlength: 255, value: workflow.alarmEmail || '' });
  const alarmChannels = channelSelect('workflowAlarmChannels', channels, workflow.alarmChannels);
  const doneWithin = input('doneWithin', { inputmode: 'numeric', maxlength: 6, placeholder: '0', value: workflow.doneWithin ? String(workflow.doneWithin) : '' });
  const confRow = field(t('job.scheduleConf'), scheduleConf, t('wf.scheduleHint'));
  const syncSchedule = () => { confRow.hidden = scheduleType.value === 'NONE'; };
  scheduleType.addEventListener('change', syncSchedule);
  syncSchedule();

  const startSchema = h('textarea', { id: 'workflow-inputSchema', class: 'wf-schema-input', rows: 3, placeholder: '{"type": "object"}' },
    workflow.graph.inputSchema ? JSON.stringify(workflow.graph.inputSchema, null, 2) : '');
  const nodeBody = h('tbody', { id: 'workflow-nodes' });
  const edgeBody = h('tbody', { id: 'workflow-edges' });
  const drawing = h('div', { class: 'wf-canvas', id: 'workflow-canvas' });
  const errorBox = h('div', { class: 'alert alert-error', hidden: true, role: 'alert', id: 'workflow-error' });

  let lastPositions = new Map();
  const redraw = () => {
    const svg = drawGraph({ nodes, edges }, {
      selected: picked,
      subtitle: (n) => (n.disabled ? `${t('wf.disabled')} · ` : '')
        + (n.kind === 'SWITCH' || n.kind === 'APPROVAL' ? t(`wf.kind${n.kind}`)
          : n.kind === 'WORKFLOW' ? workflowLabel(n.workflowId)
            : n.kind === 'MAP' ? `⇉ ${n.items || '?'} · ${jobLabel(jobs, Number(n.jobId))}` : jobLabel(jobs, Number(n.jobId))),
      onSelect: (nodeName, event) => {
        if (event.shiftKey && picked && picked !== nodeName) {
          if (!edges.some((e) => e.from === picked && e.to === nodeName)) edges.push({ from: picked, to: nodeName, when: 'SUCCESS' });
          renderEdges();
        }
        picked = nodeName;
        renderNodes();
        redraw();
      },
    });
    lastPositions = svg.positions;
    replace(drawing, svg);
  };

  const names = () => nodes.map((n) => n.name).filter(Boolean);
  const cell = (...els) => h('td', {}, els);
  const bound = (obj, key, el, parse = (v) => v) => {
    const read = () => {
      const before = obj[key];
      obj[key] = el.type === 'checkbox' ? el.checked : parse(el.value);
      // A renamed node keeps its edges (only nodes have a `name`).
      if (key === 'name' && before !== obj.name) {
        for (const e of edges) {
          if (e.from === before) e.from = obj.name;
          if (e.to === before) e.to = obj.name;
        }
        if (picked === before) picked = obj.name;
      }
    };
    el.addEventListener('input', () => { read(); redraw(); });
    el.addEventListener('change', () => {
      read();
      if (key === 'name') renderEdges();
      if (key === 'kind') renderNodes();
      redraw();
    });
    return el;
  };
  const number = (v) => (v === '' ? 0 : Number(v));

  function renderNodes() {
    replace(nodeBody, nodes.map((n, i) => h('tr', { dataset: { index: i }, class: n.name === picked ? 'picked' : null },
      cell(bound(n, 'name', h('input', { value: n.name, class: 'wf-node-name-input', maxlength: 64, 'aria-label': t('wf.nodeName') }))),
      cell(bound(n, 'kind', select('kind', KINDS.map((k) => ({ value: k, label: t(`wf.kind${k}`) })), n.kind || 'JOB', { 'aria-label': t('wf.kind') })),
        n.kind === 'APPROVAL' ? bound(n, 'onDeadline', select('onDeadline', ['REJECT', 'APPROVE'].map((v) => ({ value: v, label: t(`wf.onDeadline${v}`) })),
          n.onDeadline || 'REJECT', { 'aria-label': t('wf.onDeadline') })) : null,
        n.kind === 'MAP' ? mapFields(n) : null),
      cell(n.kind === 'WORKFLOW'
        ? bound(n, 'workflowId', select('workflowId', [{ value: '', label: '—' }, ...workflowOptions], n.workflowId ?? '', { 'aria-label': t('wf.childWorkflow') }), number)
        : bound(n, 'jobId', select('jobId', [{ value: '', label: '—' }, ...jobOptions], n.jobId ?? '', { 'aria-label': t('logs.job') }), number)),
      cell(bound(n, 'param', h('input', { value: n.param ?? '', class: 'wf-param-input', placeholder: t('wf.paramInherit'), 'aria-label': t('job.executorParam') }),
        (v) => (v === '' ? null : v))),
      cell(bound(n, 'retries', h('input', { type: 'number', min: 0, max: 10, value: n.retries ?? 0, class: 'narrow', 'aria-label': t('wf.retries') }), number)),
      cell(bound(n, 'retryDelaySecs', h('input', { type: 'number', min: 0, value: n.retryDelaySecs ?? 0, class: 'narrow', 'aria-label': t('wf.retryDelay') }), number)),
      cell(bound(n, 'timeoutSecs', h('input', { type: 'number', min: 0, value: n.timeoutSecs ?? 0, class: 'narrow', 'aria-label': t('job.executorTimeout') }), number)),
      cell(bound(n, 'continueOnFailure', h('input', { type: 'checkbox', checked: Boolean(n.continueOnFailure), 'aria-label': t('wf.continueOnFailure') }))),
      cell(bound(n, 'disabled', h('input', { type: 'checkbox', checked: Boolean(n.disabled), 'aria-label': t('wf.disabled') }))),
      cell(schemaCell(n)),
      cell(bound(n, 'delivery', select('delivery', [{ value: '', label: t('wf.deliveryJob') },
        ...['AT_MOST_ONCE', 'EXACTLY_ONCE'].map((m) => ({ value: m, label: t(`job.delivery${m}`) }))],
      n.delivery ?? '', { 'aria-label': t('job.deliveryMode') }), (v) => (v === '' ? null : v))),
      cell(h('button', {
        type: 'button', class: 'btn btn-sm btn-danger', dataset: { action: 'remove-node' }, onclick: () => {
          const gone = nodes.splice(i, 1)[0];
          for (let k = edges.length - 1; k >= 0; k -= 1) {
            if (edges[k].from === gone.name || edges[k].to === gone.name) edges.splice(k, 1);
          }
          renderNodes();
          renderEdges();
          redraw();
        },
      }, '×')))));
  }

  /** A map node's items (a JSON Pointer into the context), parallelism and whether it collects. */
  function mapFields(n) {
    return h('span', { class: 'wf-map' },
      bound(n, 'items', h('input', { value: n.items ?? '', class: 'wf-items-input', maxlength: 1024, placeholder: '/load/files', 'aria-label': t('wf.items') }),
        (v) => (v.trim() === '' ? null : v.trim())),
      bound(n, 'parallelism', h('input', { type: 'number', min: 1, max: 1000, value: n.parallelism ?? 10, class: 'narrow wf-parallelism-input', 'aria-label': t('wf.parallelism') }), number),
      h('label', { class: 'wf-collect' }, bound(n, 'collect', h('input', { type: 'checkbox', checked: n.collect !== false, 'aria-label': t('wf.collect') })), ' ', t('wf.collect')));
  }

  /** A node's declared shapes: shown in its summary, edited as JSON in two text areas. */
  function schemaCell(n) {
    const text = (v) => (v ? JSON.stringify(v, null, 2) : '');
    n.inputSchemaText ??= text(n.inputSchema);
    n.outputSchemaText ??= text(n.outputSchema);
    const summary = () => [n.inputSchemaText.trim() ? `in ${shape(safeJson(n.inputSchemaText))}` : '',
      n.outputSchemaText.trim() ? `out ${shape(safeJson(n.outputSchemaText))}` : ''].filter(Boolean).join(' · ') || t('wf.noSchema');
    const head = h('summary', { class: 'wf-shape' }, summary());
    const area = (key, label) => {
      const el = h('textarea', { class: `wf-schema-input wf-${key}`, rows: 4, 'aria-label': label, placeholder: '{"type": "object"}' }, n[key]);
      el.addEventListener('input', () => { n[key] = el.value; head.textContent = summary(); });
      return h('label', {}, label, el);
    };
    return h('details', { class: 'wf-schemas' }, head, area('inputSchemaText', t('wf.inputSchema')), area('outputSchemaText', t('wf.outputSchema')));
  }

  function renderEdges() {
    const options = names().map((v) => ({ value: v, label: v }));
    replace(edgeBody, edges.map((e, i) => h('tr', { dataset: { index: i } },
      cell(bound(e, 'from', select('from', [{ value: '', label: '—' }, ...options], e.from, { 'aria-label': t('wf.from') }))),
      cell(bound(e, 'to', select('to', [{ value: '', label: '—' }, ...options], e.to, { 'aria-label': t('wf.to') }))),
      cell(bound(e, 'when', select('when', CONDITIONS.map((c) => ({ value: c, label: t(`wf.when${c}`) })), e.when, { 'aria-label': t('wf.when') }))),
      cell(bound(e, 'if', h('input', { value: e.if ?? '', class: 'wf-if-input', maxlength: 1024, placeholder: 'output.rows > 0', 'aria-label': t('wf.if') }),
        (v) => (v.trim() === '' ? null : v))),
      cell(h('button', {
        type: 'button', class: 'btn btn-sm btn-danger', dataset: { action: 'remove-edge' },
        onclick: () => { edges.splice(i, 1); renderEdges(); redraw(); },
      }, '×')))));
  }

  const addNode = h('button', { type: 'button', class: 'btn btn-sm', id: 'workflow-add-node' }, t('wf.addNode'));
  addNode.addEventListener('click', () => {
    let k = nodes.length + 1;
    while (names().includes(`step${k}`)) k += 1;
    nodes.push({ name: `step${k}`, jobId: jobOptions[0] ? jobOptions[0].value : 0, retries: 0, retryDelaySecs: 0, timeoutSecs: 0 });
    renderNodes();
    renderEdges();
    redraw();
  });
  const addEdge = h('button', { type: 'button', class: 'btn btn-sm', id: 'workflow-add-edge' }, t('wf.addEdge'));
  addEdge.addEventListener('click', () => {
    const all = names();
    edges.push({ from: all[all.length - 2] || '', to: all[all.length - 1] || '', when: 'SUCCESS' });
    renderEdges();
    redraw();
  });

  /** The form as the API takes it, after the checks a browser can make; throws the first fault. */
  const collect = () => {
    const seen = new Set();
    for (const n of nodes) {
      if (!NODE_NAME.test(n.name)) throw new Error(t('wf.nodeNameRule', { name: n.name }));
      if (seen.has(n.name)) throw new Error(t('wf.nodeNameTwice', { name: n.name }));
      seen.add(n.name);
      if (['JOB', 'MAP'].includes(n.kind || 'JOB') && !jobs.has(Number(n.jobId))) throw new Error(t('wf.nodeNeedsJob', { name: n.name }));
      if (n.kind === 'MAP' && !(n.items || '').startsWith('/')) throw new Error(t('wf.nodeNeedsItems', { name: n.name }));
      if (n.kind === 'WORKFLOW' && !(Number(n.workflowId) > 0)) throw new Error(t('wf.nodeNeedsWorkflow', { name: n.name }));
    }
    return {
      name: name.value.trim(),
      jobGroup: Number(jobGroup.value),
      scheduleType: scheduleType.value,
      scheduleConf: scheduleType.value === 'NONE' ? null : scheduleConf.value.trim(),
      timeZone: timeZone.value.trim() || null,
      misfireStrategy: misfire.value,
      maxInstances: Number(maxInstances.value || 1),
      overflow: overflow.value,
      onlyOn: chosen(onlyOn),
      neverOn: chosen(neverOn),
      exclusionWindows: splitWindows(windows.value),
      alarmEmail: alarmEmail.value.trim(),
      alarmChannels: chosen(alarmChannels),
      doneWithin: Number(doneWithin.value.trim() || 0),
      graph: {
        nodes: nodes.map((n) => {
          const at = lastPositions.get(n.name);
          const sub = n.kind === 'WORKFLOW';
          const kind = ['SWITCH', 'APPROVAL'].includes(n.kind) ? { kind: n.kind, jobId: 0 }
            : sub ? { kind: n.kind, jobId: 0, workflowId: Number(n.workflowId) }
              : n.kind === 'MAP' ? { kind: 'MAP', jobId: Number(n.jobId), items: n.items, parallelism: n.parallelism || 10, ...(n.collect === false ? { collect: false } : {}) }
                : { jobId: Number(n.jobId) };
          // A sub-workflow has no parameter, retries, timeout or delivery: its child's nodes have theirs.
          return {
            name: n.name, ...kind, param: sub ? null : n.param ?? null, retries: sub ? 0 : n.retries || 0,
            retryDelaySecs: sub ? 0 : n.retryDelaySecs || 0, timeoutSecs: sub ? 0 : n.timeoutSecs || 0,
            continueOnFailure: Boolean(n.continueOnFailure), disabled: Boolean(n.disabled),
            delivery: sub ? null : n.delivery || null,
            ...(n.kind === 'APPROVAL' && n.onDeadline === 'APPROVE' ? { onDeadline: 'APPROVE' } : {}),
            inputSchema: schemaOf(n.inputSchemaText, `${n.name} ${t('wf.inputSchema')}`),
            outputSchema: schemaOf(n.outputSchemaText, `${n.name} ${t('wf.outputSchema')}`),
            x: at ? at.x : null, y: at ? at.y : null,
          };
        }),
        edges: edges.map((e) => ({ from: e.from, to: e.to, when: e.when || 'SUCCESS', ...(e.if ? { if: e.if } : {}) })),
        inputSchema: schemaOf(startSchema.value, t('wf.startSchema')),
      },
    };
  };
  const save = h('button', { type: 'submit', class: 'btn btn-primary', id: 'workflow-save' }, t('common.save'));
  const form = h('form', { class: 'form', id: 'workflow-form' },
    h('fieldset', {}, h('legend', {}, t('job.sectionBase')),
      field(t('wf.name'), name), field(t('job.jobGroup'), jobGroup, t('wf.groupHint'))),
    h('fieldset', {}, h('legend', {}, t('job.sectionSchedule')),
      field(t('job.scheduleType'), scheduleType), confRow, field(t('job.timeZone'), timeZone, t('job.timeZoneHint')),
      field(t('job.onlyOn'), onlyOn, t('wf.onlyOnHint')), field(t('job.neverOn'), neverOn, t('wf.neverOnHint')),
      field(t('job.exclusionWindows'), windows, t('wf.windowsHint')),
      field(t('job.misfireStrategy'), misfire, t('wf.misfireHint')), field(t('wf.maxInstances'), maxInstances),
      field(t('wf.overflow'), overflow)),
    h('fieldset', {}, h('legend', {}, t('wf.alarms')),
      field(t('job.alarmEmail'), alarmEmail, t('wf.alarmHint')),
      field(t('alarms.channelsField'), alarmChannels, t('alarms.channelsHint')),
      field(t('alarms.doneWithin'), doneWithin, t('alarms.doneWithinHint'))),
    h('fieldset', {}, h('legend', {}, t('wf.graph')),
      h('p', { class: 'hint' }, t('wf.canvasHint')),
      drawing,
      h('h4', {}, t('wf.nodes')),
      h('div', { class: 'table-scroll' }, h('table', { class: 'table wf-table' },
        h('thead', {}, h('tr', {}, [t('wf.nodeName'), t('wf.kind'), t('logs.job'), t('job.executorParam'), t('wf.retries'), t('wf.retryDelay'),
          t('job.executorTimeout'), t('wf.continueOnFailure'), t('wf.disabled'), t('wf.schemas'), t('job.deliveryMode'), ''].map((x) => h('th', {}, x)))),
        nodeBody)),
      addNode,
      field(t('wf.startSchema'), startSchema, t('wf.schemaHint')),
      h('h4', {}, t('wf.edges')),
      h('p', { class: 'hint' }, t('wf.ifHint')),
      h('table', { class: 'table wf-table' },
        h('thead', {}, h('tr', {}, [t('wf.from'), t('wf.to'), t('wf.when'), t('wf.if'), ''].map((x) => h('th', {}, x)))),
        edgeBody),
      addEdge),
    errorBox,
    h('div', { class: 'form-actions' }, save, ' ', h('a', { class: 'btn', href: '#/workflows' }, t('common.cancel'))));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    errorBox.hidden = true;
    save.disabled = true;
    try {
      const body = collect();
      const saved = id ? await put(`/workflows/${id}`, body) : await post('/workflows', body);
      notify(t('common.saved'));
      app.navigate(`#/workflows?jobGroup=${saved.jobGroup}`);
    } catch (e) {
      errorBox.textContent = e.message || String(e);
      errorBox.hidden = false;
    } finally {
      save.disabled = false;
    }
  });
  main.append(pageHeader(id ? t('wf.editTitle', { name: workflow.name }) : t('wf.add')), h('div', { class: 'card' }, form));
  renderNodes();
  renderEdges();
  redraw();
}
