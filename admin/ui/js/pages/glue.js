// GLUE IDE (upstream /jobcode): the job's script in CodeMirror with the type's highlighting,
// the version dropdown (current + up to 30 history entries; picking one loads it — upstream's
// "version backtrack"), and Save with a 4–100 character remark.

import { get, put } from '../api.js';
import { formatTime, h } from '../dom.js';
import { t } from '../i18n.js';
import { field, modal, notify, pageHeader } from '../ui.js';

const MODES = {
  GLUE_GROOVY: 'text/x-java',
  GLUE_SHELL: 'shell',
  GLUE_PYTHON: 'python',
  GLUE_PYTHON2: 'python',
  GLUE_PHP: 'text/x-php',
  GLUE_NODEJS: 'javascript',
  GLUE_POWERSHELL: 'powershell',
};

export async function render({ main, params, app }) {
  const id = Number(params[0]);
  const job = await get(`/jobs/${id}`);
  let glue = await get(`/jobs/${id}/glue`);

  const textarea = h('textarea', { id: 'glue-source' });
  textarea.value = glue.glueSource || '';
  const versions = h('select', { id: 'glue-versions', 'aria-label': t('glue.versions') });
  const fillVersions = () => {
    versions.replaceChildren(
      h('option', { value: 'current' }, `${t('glue.current')} — ${glue.glueRemark || ''} (${formatTime(glue.glueUpdatetime)})`),
      ...glue.history.map((v) => h('option', { value: String(v.id) }, `${v.glueRemark || ''} (${formatTime(v.updateTime)})`)));
  };
  fillVersions();

  const editorBox = h('div', { class: 'editor' }, textarea);
  // GLUE(Java): say which executors of the job's group can run it (jobwheel's cannot).
  const notice = glue.glueType === 'GLUE_GROOVY' ? await javaNotice(job.jobGroup) : null;
  const save = h('button', { type: 'button', class: 'btn btn-primary', id: 'glue-save' }, t('common.save'));
  main.append(
    pageHeader(t('glue.title', { name: job.jobDesc }),
      h('span', { class: 'muted' }, app.enumTitle('glueTypes', glue.glueType)),
      versions, save,
      h('a', { class: 'btn', href: '#/jobs' }, t('common.back'))),
    ...(notice ? [notice] : []),
    h('div', { class: 'card' }, editorBox));

  // CodeMirror is a classic script loaded by index.html; fall back to the plain textarea.
  let editor = null;
  if (window.CodeMirror) {
    editor = window.CodeMirror.fromTextArea(textarea, {
      mode: MODES[glue.glueType] || 'shell',
      lineNumbers: true,
      indentUnit: 4,
      matchBrackets: true,
      viewportMargin: 20,
    });
    editor.setSize(null, '60vh');
  }
  const getSource = () => (editor ? editor.getValue() : textarea.value);
  const setSource = (source) => (editor ? editor.setValue(source) : (textarea.value = source));

  versions.addEventListener('change', () => {
    if (versions.value === 'current') setSource(glue.glueSource || '');
    else {
      const entry = glue.history.find((v) => String(v.id) === versions.value);
      if (entry) setSource(entry.glueSource || '');
    }
  });

  save.addEventListener('click', () => {
    const remark = h('input', { id: 'glue-remark', maxlength: 100 });
    const m = modal(t('glue.saveTitle'), h('div', { class: 'form' }, field(t('glue.remark'), remark, t('glue.remarkRule'))), [
      {
        name: 'save', label: t('common.save'), kind: 'btn-primary', action: async (close) => {
          const text = remark.value.trim();
          if (text.length < 4 || text.length > 100) throw new Error(t('glue.remarkRule'));
          glue = await put(`/jobs/${id}/glue`, { glueSource: getSource(), glueRemark: text });
          fillVersions();
          setSource(glue.glueSource || '');
          close();
          notify(t('common.saved'));
        },
      },
    ], { id: 'glue-save-modal' });
    remark.focus();
    return m;
  });
  return () => editor && editor.toTextArea();
}

/** The notice on a GLUE(Java) job's page: how many of its group's executors are jobwheel's. */
async function javaNotice(group) {
  let executors = [];
  try {
    executors = await get(`/groups/${group}/executors`);
  } catch {
    executors = [];
  }
  const count = (kind) => String(executors.filter((e) => e.kind === kind).length);
  return h('div', { class: 'alert alert-info', id: 'glue-java-notice' },
    t('glue.javaNotice', { jobwheel: count('jobwheel'), other: count('other'), unknown: count('unknown') }));
}
