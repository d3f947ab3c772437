// Job export and import (GET /jobs/export, POST /jobs/import): export the chosen group's jobs
// to a file; import a file after a dry run that lists what would be created or updated, the
// secrets to set again, and every problem (then nothing can be applied).

import { api, get } from '../api.js';
import { h } from '../dom.js';
import { t } from '../i18n.js';
import { guarded, modal, notify, table } from '../ui.js';

/** Downloads the jobs of `group` as a JSON file. */
export function exportJobs(group) {
  return guarded(async () => {
    const file = await get('/jobs/export', { jobGroup: group });
    const blob = new Blob([JSON.stringify(file, null, 2)], { type: 'application/json' });
    const link = h('a', { href: URL.createObjectURL(blob), download: `jobwheel-jobs-group-${group}.json`, id: 'export-link' });
    document.body.append(link);
    link.click();
    link.remove();
    notify(t('transfer.exported', { count: file.jobs.length }));
  });
}

/** The import dialog: choose a file, see the dry run, apply. */
export function importDialog(app) {
  const input = h('input', { type: 'file', accept: '.json,application/json', id: 'import-file' });
  const result = h('div', { id: 'import-result' });
  let text = null;
  const send = (dryRun) => api('POST', '/jobs/import', { raw: text, contentType: 'application/json', query: { dryRun } });
  input.addEventListener('change', () => guarded(async () => {
    result.replaceChildren();
    const file = input.files[0];
    if (!file) return;
    text = await file.text();
    result.append(report(await send(true)));
  }));
  const m = modal(t('transfer.importTitle'), h('div', { class: 'form' },
    h('p', { class: 'muted' }, t('transfer.importIntro')), input, result), [
    {
      name: 'apply', label: t('transfer.apply'), kind: 'btn-primary', action: async (close) => {
        if (!text) throw new Error(t('transfer.chooseFile'));
        const done = await send(false);
        if (!done.applied) {
          result.replaceChildren(report(done));
          throw new Error(t('transfer.notApplied'));
        }
        close();
        notify(t('transfer.imported', { count: done.items.length }));
        app.refresh();
      },
    },
  ], { id: 'import-modal', wide: true });
  return m;
}

function report(r) {
  const rows = r.items.map((item) => [
    t(`transfer.${item.action}`), item.appname, item.jobDesc, item.id == null ? '' : String(item.id),
    (item.secretsToSet || []).join(', '),
  ]);
  return h('div', {},
    r.problems.length
      ? h('ul', { class: 'alert alert-error', id: 'import-problems' }, r.problems.map((p) => h('li', {}, p)))
      : h('p', { class: 'alert alert-info', id: 'import-ready' }, t('transfer.ready')),
    table([t('transfer.action'), t('groups.appname'), t('job.jobDesc'), t('job.id'), t('transfer.secretsToSet')], rows, { id: 'import-items' }));
}
