// Calendars (administrators): named sets of days that jobs fire only on or never on
// (GET/POST/PUT/DELETE /calendars, POST /calendars/import for .ics files). The admin checks
// every entry again; its 400 message names the one at fault.

import { api, del, get, post, put } from '../api.js';
import { formatTime, h } from '../dom.js';
import { t } from '../i18n.js';
import { confirmDialog, field, guarded, modal, notify, pageHeader, table } from '../ui.js';

const WEEKDAYS = ['MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];

export async function render({ main, app }) {
  const calendars = await get('/calendars');
  const add = h('button', { type: 'button', class: 'btn btn-primary', id: 'calendar-add' }, t('calendars.add'));
  add.addEventListener('click', () => editDialog(app, null));
  const importButton = h('button', { type: 'button', class: 'btn', id: 'calendar-import' }, t('calendars.import'));
  importButton.addEventListener('click', () => importDialog(app));
  const rows = calendars.map((c) => h('tr', { dataset: { calendar: c.name } },
    h('td', {}, c.name),
    h('td', {}, c.description || ''),
    h('td', { class: 'calendar-summary' }, summary(c)),
    h('td', {}, formatTime(c.updateTime)),
    h('td', {},
      h('button', { type: 'button', class: 'btn btn-sm', dataset: { action: 'edit' }, onclick: () => editDialog(app, c) }, t('common.edit')),
      ' ',
      h('button', {
        type: 'button', class: 'btn btn-sm btn-danger', dataset: { action: 'delete' }, onclick: () => guarded(async () => {
          if (!(await confirmDialog(t('calendars.confirmDelete', { name: c.name })))) return;
          await del(`/calendars/${c.id}`);
          notify(t('common.deleted'));
          app.refresh();
        }),
      }, t('common.delete')))));
  main.append(
    pageHeader(t('menu.calendars'), add, importButton),
    h('p', { class: 'muted' }, t('calendars.intro')),
    h('div', { class: 'card' }, table(
      [t('calendars.name'), t('calendars.description'), t('calendars.days'), t('calendars.updated'), t('common.actions')],
      rows, { id: 'calendar-table', empty: t('calendars.none') })));
}

/** "SAT, SUN · 2 yearly · 12 dates · 1 range". */
function summary(c) {
  const parts = [];
  if (c.weekdays.length) parts.push(c.weekdays.map((d) => t(`calendars.day${d}`)).join(', '));
  if (c.yearly.length) parts.push(t('calendars.yearlyCount', { count: c.yearly.length }));
  if (c.dates.length) parts.push(t('calendars.datesCount', { count: c.dates.length }));
  if (c.ranges.length) parts.push(t('calendars.rangesCount', { count: c.ranges.length }));
  return parts.join(' · ');
}

/** Words of a textarea: split at commas, spaces and line ends. */
function words(text) {
  return String(text || '').split(/[\s,]+/).map((w) => w.trim()).filter(Boolean);
}

/** The add/edit dialog; `calendar` null for a new one. */
function editDialog(app, calendar) {
  const c = calendar || { name: '', description: '', weekdays: [], yearly: [], dates: [], ranges: [] };
  const name = h('input', { id: 'calendar-name', maxlength: 64, value: c.name });
  const description = h('input', { id: 'calendar-description', maxlength: 255, value: c.description || '' });
  const boxes = WEEKDAYS.map((d) => h('label', { class: 'check' },
    h('input', { type: 'checkbox', value: d, checked: c.weekdays.includes(d), dataset: { weekday: d } }), ` ${t(`calendars.day${d}`)}`));
  const area = (id, value, placeholder) => {
    const el = h('textarea', { id, rows: 3, placeholder });
    el.value = value;
    return el;
  };
  const yearly = area('calendar-yearly', c.yearly.join(', '), '01-01, 12-25');
  const dates = area('calendar-dates', c.dates.join('\n'), '2027-10-01');
  const ranges = area('calendar-ranges', c.ranges.map((r) => `${r.from}..${r.to}`).join('\n'), '2027-02-06..2027-02-12');
  const body = h('div', { class: 'form' },
    field(t('calendars.name'), name),
    field(t('calendars.description'), description),
    field(t('calendars.weekdays'), h('div', { class: 'checks' }, boxes)),
    field(t('calendars.yearly'), yearly, t('calendars.yearlyHint')),
    field(t('calendars.dates'), dates, t('calendars.datesHint')),
    field(t('calendars.ranges'), ranges, t('calendars.rangesHint')));
  modal(calendar ? t('calendars.editTitle', { name: c.name }) : t('calendars.add'), body, [{
    name: 'save', label: t('common.save'), kind: 'btn-primary', action: async (close) => {
      const input = {
        name: name.value.trim(),
        description: description.value.trim(),
        weekdays: boxes.map((b) => b.querySelector('input')).filter((b) => b.checked).map((b) => b.value),
        yearly: words(yearly.value),
        dates: words(dates.value),
        ranges: words(ranges.value).map((r) => {
          const [from, to] = r.split('..');
          if (!from || !to) throw new Error(t('calendars.rangeRule', { range: r }));
          return { from, to };
        }),
      };
      if (calendar) await put(`/calendars/${calendar.id}`, input);
      else await post('/calendars', input);
      close();
      notify(t('common.saved'));
      app.refresh();
    },
  }], { id: 'calendar-modal', wide: true });
}

/** Creates a calendar from an .ics file, or replaces the days of the one with that name. */
function importDialog(app) {
  const name = h('input', { id: 'ics-name', maxlength: 64 });
  const file = h('input', { type: 'file', accept: '.ics,text/calendar', id: 'ics-file' });
  modal(t('calendars.importTitle'), h('div', { class: 'form' },
    h('p', { class: 'muted' }, t('calendars.importIntro')),
    field(t('calendars.name'), name), field(t('calendars.file'), file)), [{
    name: 'import', label: t('calendars.import'), kind: 'btn-primary', action: async (close) => {
      const chosen = file.files[0];
      if (!chosen || !name.value.trim()) throw new Error(t('calendars.importNeeds'));
      const text = await chosen.text();
      const done = await api('POST', '/calendars/import', { raw: text, contentType: 'text/calendar', query: { name: name.value.trim() } });
      close();
      notify(t('calendars.imported', { count: done.imported, skipped: done.skipped.length }));
      if (done.skipped.length) notify(done.skipped.join('; '), 'error');
      app.refresh();
    },
  }], { id: 'ics-modal' });
}
