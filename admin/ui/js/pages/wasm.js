// Wasm module of a GLUE_WASM job: pick or drop a .wasm file (a preview1 module or a WASI 0.2
// component), see it validated by the admin (digest, size, exports, imports — or what is
// wrong), upload it with a remark — or as a candidate, tried on the job's recorded runs
// (wasm_what_if.js) before a rollback to it activates it —, browse or roll back the version
// history (newest first, up to 30), and edit what the job is granted (grant.js: network
// policy, limits, variables, secrets).

import { api, get, post } from '../api.js';
import { formatSize, formatTime, h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { badge, confirmDialog, field, guarded, notify, pageHeader, table } from '../ui.js';
import { grantCard } from './grant.js';
import { triggerModal } from './jobs.js';
import { whatIfDialog } from './wasm_what_if.js';
import { approvalsCard } from './approvals.js';

const MAX_BYTES = 32 * 1024 * 1024;

export async function render({ main, params, app }) {
  const id = Number(params[0]);
  const job = await get(`/jobs/${id}`);
  if (job.glueType !== 'GLUE_WASM') {
    main.append(h('div', { class: 'alert alert-error' }, t('wasm.notWasm')));
    return;
  }

  let bytes = null;
  const fileInput = h('input', { type: 'file', id: 'wasm-file', accept: '.wasm,application/wasm' });
  const info = h('div', { class: 'module-info', id: 'wasm-info' });
  const error = h('div', { class: 'alert alert-error', hidden: true, role: 'alert', id: 'wasm-error' });
  const remark = h('input', { id: 'wasm-remark', maxlength: 100, placeholder: t('wasm.remarkHint') });
  const asCandidate = h('input', { type: 'checkbox', id: 'wasm-candidate' });
  const upload = h('button', { type: 'button', class: 'btn btn-primary', id: 'wasm-upload', disabled: true }, t('wasm.upload'));
  const drop = h('div', { class: 'drop-zone', id: 'wasm-drop' },
    h('p', {}, t('wasm.drop')), fileInput);

  const showError = (message) => {
    error.textContent = message;
    error.hidden = !message;
  };
  const choose = (file) => guarded(async () => {
    showError('');
    replace(info);
    bytes = null;
    upload.disabled = true;
    if (!file) return;
    if (file.size > MAX_BYTES) {
      showError(t('wasm.tooLarge', { size: formatSize(file.size) }));
      return;
    }
    const data = await file.arrayBuffer();
    replace(info, h('p', { class: 'muted' }, t('wasm.validating')));
    try {
      const module = await api('POST', '/wasm/validate', { raw: data, contentType: 'application/wasm' });
      replace(info, moduleInfo(file.name, module));
      bytes = data;
      upload.disabled = false;
    } catch (e) {
      replace(info);
      showError(t('wasm.invalid', { name: file.name, reason: e.message }));
    }
  });
  fileInput.addEventListener('change', () => choose(fileInput.files[0]));
  drop.addEventListener('dragover', (e) => {
    e.preventDefault();
    drop.classList.add('drag');
  });
  drop.addEventListener('dragleave', () => drop.classList.remove('drag'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('drag');
    choose(e.dataTransfer.files[0]);
  });

  const versionsBox = h('div', { id: 'wasm-versions' });
  const approvalsBox = h('div', {});
  const loadVersions = async () => {
    const answer = await get(`/jobs/${id}/wasm`);
    replace(versionsBox, versionsTable(answer, id, loadVersions));
    replace(approvalsBox, await approvalsCard(id, app.isAdmin(), loadVersions));
  };
  upload.addEventListener('click', () => guarded(async () => {
    if (!bytes) return;
    upload.disabled = true;
    try {
      const query = { remark: remark.value.trim(), candidate: asCandidate.checked ? 'true' : 'false' };
      const answer = await api('POST', `/jobs/${id}/wasm`, { raw: bytes, contentType: 'application/wasm', query });
      // 202: the version reaches further than the current one and waits for an administrator.
      if (answer && answer.approval) {
        notify(t('approvals.held', { what: answer.approval.widening.join('; ') }), 'warning');
      } else {
        notify(t('wasm.uploaded'));
      }
    } catch (e) {
      upload.disabled = false;
      showError(e.message);
      return;
    }
    bytes = null;
    fileInput.value = '';
    remark.value = '';
    replace(info);
    await loadVersions();
  }));

  main.append(
    pageHeader(t('wasm.title', { name: job.jobDesc }),
      h('button', { type: 'button', class: 'btn', id: 'wasm-trigger', onclick: () => triggerModal(job) }, t('jobs.trigger')),
      h('a', { class: 'btn', href: `#/logs?jobGroup=${job.jobGroup}&jobId=${job.id}` }, t('jobs.logs')),
      h('a', { class: 'btn', href: '#/jobs' }, t('common.back'))),
    h('div', { class: 'card form' },
      h('h3', {}, t('wasm.newVersion')),
      h('p', { class: 'muted' }, t('wasm.rules')),
      error, drop, info,
      field(t('wasm.remark'), remark),
      h('label', { class: 'check' }, asCandidate, ' ', t('wasm.asCandidate')),
      h('div', { class: 'form-actions' }, upload)),
    h('div', { class: 'card' }, h('h3', {}, t('wasm.versions')), versionsBox),
    approvalsBox);
  await loadVersions();
  main.append(await grantCard(id));
}

function moduleInfo(name, m) {
  return h('dl', { class: 'facts' },
    h('dt', {}, t('wasm.file')), h('dd', {}, name),
    h('dt', {}, t('wasm.digest')), h('dd', { class: 'mono', id: 'wasm-digest' }, m.digest),
    h('dt', {}, t('wasm.size')), h('dd', {}, formatSize(m.size)),
    h('dt', {}, t('wasm.kind')), h('dd', { id: 'wasm-kind' }, t(m.kind === 'component' ? 'wasm.component' : 'wasm.module')),
    h('dt', {}, t('wasm.exports')), h('dd', { class: 'mono' }, (m.exports || []).join(', ')),
    h('dt', {}, t('wasm.imports')), h('dd', { class: 'mono' }, (m.imports || []).join(', ') || '—'));
}

function versionsTable(answer, jobId, reload) {
  const currentId = answer.current ? answer.current.id : null;
  const rows = answer.versions.map((v) => [
    String(v.id),
    h('span', { class: 'mono', title: v.digest }, `${v.digest.slice(0, 12)}…`),
    formatSize(v.size),
    h('span', { class: 'mono' }, (v.exports || []).join(', ')),
    h('span', { class: 'capabilities', dataset: { capabilities: v.id } }, capabilitiesText(v.capabilities)),
    v.remark || '',
    v.uploader || '',
    formatTime(v.createdAt),
    v.id === currentId
      ? badge(t('wasm.current'), 'green')
      : h('span', { class: 'row-actions' },
        v.candidate ? badge(t('wasm.candidate'), 'amber') : null,
        h('button', {
          type: 'button', class: 'btn btn-sm', dataset: { whatIf: v.id },
          onclick: () => guarded(() => whatIfDialog(jobId, v.id)),
        }, t('wasm.whatIf')),
        h('button', {
          type: 'button', class: 'btn btn-sm', dataset: { rollback: v.id },
          onclick: () => guarded(async () => {
            if (!(await confirmDialog(t('wasm.confirmRollback', { id: v.id })))) return;
            await post(`/jobs/${jobId}/wasm/rollback`, { versionId: v.id, remark: t('wasm.rollbackRemark', { id: v.id }) });
            notify(t('wasm.rolledBack'));
            await reload();
          }),
        }, v.candidate ? t('wasm.activate') : t('wasm.rollback'))),
  ]);
  return table([t('wasm.version'), t('wasm.digest'), t('wasm.size'), t('wasm.exports'), t('wasm.capabilities'), t('wasm.remark'), t('wasm.uploader'), t('wasm.createdAt'), ''],
    rows, { id: 'wasm-version-table', empty: t('wasm.noVersions') });
}

/** A version's reach in one line: the kinds of host call it imports, and the hosts and group
 * secrets its grant gives it. */
function capabilitiesText(c) {
  if (!c) return '';
  const parts = [(c.imports || []).map((k) => t(`capability.${k}`)).join(', ') || t('capability.none')];
  if ((c.hosts || []).length) parts.push(`${t('capability.hosts')}: ${c.hosts.join(', ')}`);
  if ((c.secrets || []).length) parts.push(`${t('capability.secrets')}: ${c.secrets.join(', ')}`);
  return parts.join(' · ');
}
