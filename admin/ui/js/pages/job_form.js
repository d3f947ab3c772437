// Add / edit / copy a job (upstream's job form): the same fields, rules and sections.
// The admin validates again; its 400 message (naming the field) is shown as is.

import { all, get, post, put } from '../api.js';
import { h, routeQuery } from '../dom.js';
import { t } from '../i18n.js';
import { field, guarded, notify, pageHeader, select } from '../ui.js';
import { isScript, nextTimesModal } from './jobs.js';

const DEFAULTS = {
  jobGroup: '', jobDesc: '', author: '', alarmEmail: '',
  scheduleType: 'CRON', scheduleConf: '', timeZone: '',
  misfireStrategy: 'DO_NOTHING', executorRouteStrategy: 'FIRST', executorHandler: '', executorParam: '',
  executorBlockStrategy: 'SERIAL_EXECUTION', executorTimeout: 0, executorFailRetryCount: 0, retryBackoff: '',
  retryBackoffStrategy: 'FIXED', retryBackoffMax: '', retryJitter: '',
  glueType: 'BEAN', childJobId: '', tags: [], priority: 'NORMAL', deliveryMode: 'AT_MOST_ONCE',
  onlyOn: [], neverOn: [], exclusionWindows: [],
};

export async function render({ main, params, app }) {
  const id = params[0] ? Number(params[0]) : null;
  const q = routeQuery();
  const groups = await all('/groups');
  const [calendars, channels] = await Promise.all([get('/calendars'), get('/alarm-channels')]);
  let job = { ...DEFAULTS, jobGroup: q.get('jobGroup') || (groups[0] && groups[0].id) || '' };
  if (id) job = await get(`/jobs/${id}`);
  else if (q.get('copy')) job = { ...(await get(`/jobs/${q.get('copy')}`)), id: undefined };

  const input = (name, attrs = {}) => h('input', { name, id: `job-${name}`, value: job[name] ?? '', ...attrs });
  const enumSelect = (name, kind) => select(name, app.enumOptions(kind), job[name], { id: `job-${name}` });

  const jobGroup = select('jobGroup', groups.map((g) => ({ value: g.id, label: g.title })), job.jobGroup, { id: 'job-jobGroup' });
  const scheduleType = enumSelect('scheduleType', 'scheduleTypes');
  const scheduleConf = input('scheduleConf', { maxlength: 100 });
  const glueType = enumSelect('glueType', 'glueTypes');
  if (id) glueType.disabled = true;
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const timeZone = input('timeZone', { list: 'tz-list', placeholder: t('job.timeZoneDefault'), value: job.timeZone || '' });

  const confRow = field(t('job.scheduleConf'), scheduleConf);
  const handlerRow = field(t('job.executorHandler'), input('executorHandler', { maxlength: 100 }), t('job.executorHandlerHint'));
  const confLabel = confRow.querySelector('label');
  const calendarSelect = (name) => {
    const el = h('select', { name, id: `job-${name}`, multiple: true, size: Math.min(4, Math.max(2, calendars.length)) },
      calendars.map((c) => h('option', { value: String(c.id), selected: (job[name] || []).includes(c.id) }, c.name)));
    return el;
  };
  const alarmChannels = channelSelect('alarmChannels', channels, job.alarmChannels);
  const doneWithin = input('doneWithin', { inputmode: 'numeric', maxlength: 6, placeholder: '0', value: job.doneWithin ? String(job.doneWithin) : '' });
  const onlyOn = calendarSelect('onlyOn');
  const neverOn = calendarSelect('neverOn');
  const windows = input('exclusionWindows', { maxlength: 120, placeholder: '23:00-01:00', value: (job.exclusionWindows || []).join(', ') });
  const days = () => ({
    onlyOn: chosen(onlyOn), neverOn: chosen(neverOn), exclusionWindows: splitWindows(windows.value),
  });
  const nextButton = h('button', { type: 'button', class: 'btn btn-sm', id: 'job-next-times' }, t('jobs.nextTimes'));
  nextButton.addEventListener('click', () => guarded(() =>
    nextTimesModal(scheduleType.value, scheduleConf.value.trim(), timeZone.value.trim() || null, days())));
  confRow.querySelector('.form-control').append(nextButton);
  const sync = () => {
    const type = scheduleType.value;
    confRow.hidden = type === 'NONE';
    confLabel.textContent = type === 'CRON' ? t('job.cron') : t('job.seconds');
    scheduleConf.placeholder = type === 'CRON' ? '0 0/5 * * * ?' : '30';
    handlerRow.hidden = glueType.value !== 'BEAN';
  };
  scheduleType.addEventListener('change', sync);
  glueType.addEventListener('change', sync);
  // Whether the chosen group's executors can run the chosen GLUE type (asked of them).
  const glueWarning = h('div', { class: 'alert alert-info', hidden: true, id: 'job-glue-warning' });
  const checkGlue = async () => {
    const text = await glueProblem(jobGroup.value, glueType.value);
    glueWarning.textContent = text || '';
    glueWarning.hidden = !text;
  };
  glueType.addEventListener('change', checkGlue);
  jobGroup.addEventListener('change', checkGlue);
  checkGlue();

  const error = h('div', { class: 'alert alert-error', hidden: true, role: 'alert', id: 'job-form-error' });
  const form = h('form', { class: 'card form', id: 'job-form', novalidate: true },
    error,
    h('fieldset', {}, h('legend', {}, t('job.sectionBase')),
      field(t('job.jobGroup'), jobGroup),
      field(t('job.jobDesc'), input('jobDesc', { maxlength: 50 })),
      field(t('job.author'), input('author', { maxlength: 50 })),
      field(t('job.alarmEmail'), input('alarmEmail', { maxlength: 100 }), t('job.alarmEmailHint')),
      field(t('alarms.channelsField'), alarmChannels, t('alarms.channelsHint')),
      field(t('alarms.doneWithin'), doneWithin, t('alarms.doneWithinHint')),
      field(t('job.tags'), input('tags', { maxlength: 600, value: (job.tags || []).join(', '), placeholder: 'etl, nightly' }), t('job.tagsHint'))),
    h('fieldset', {}, h('legend', {}, t('job.sectionSchedule')),
      field(t('job.scheduleType'), scheduleType),
      confRow,
      field(t('job.timeZone'), timeZone, t('job.timeZoneHint')),
      h('datalist', { id: 'tz-list' }, zones.map((z) => h('option', { value: z }))),
      field(t('job.onlyOn'), onlyOn, t('job.onlyOnHint')),
      field(t('job.neverOn'), neverOn, t('job.neverOnHint')),
      field(t('job.exclusionWindows'), windows, t('job.exclusionWindowsHint'))),
    h('fieldset', {}, h('legend', {}, t('job.sectionJob')),
      field(t('job.glueType'), glueType, id ? t('job.glueTypeFixed') : null),
      glueWarning,
      handlerRow,
      field(t('job.executorParam'), textarea('executorParam', job.executorParam, 2048))),
    h('fieldset', {}, h('legend', {}, t('job.sectionAdvanced')),
      field(t('job.executorRouteStrategy'), enumSelect('executorRouteStrategy', 'routeStrategies')),
      field(t('job.priority'), select('priority', ['HIGH', 'NORMAL', 'LOW'].map((p) => ({ value: p, label: t(`job.priority${p}`) })),
        job.priority || 'NORMAL', { id: 'job-priority' }), t('job.priorityHint')),
      field(t('job.deliveryMode'), select('deliveryMode', ['AT_MOST_ONCE', 'EXACTLY_ONCE'].map((m) => ({ value: m, label: t(`job.delivery${m}`) })),
        job.deliveryMode || 'AT_MOST_ONCE', { id: 'job-delivery-mode' }), t('job.deliveryModeHint')),
      field(t('job.childJobId'), input('childJobId', { maxlength: 100 }), t('job.childJobIdHint')),
      field(t('job.misfireStrategy'), enumSelect('misfireStrategy', 'misfireStrategies')),
      field(t('job.executorBlockStrategy'), enumSelect('executorBlockStrategy', 'blockStrategies')),
      field(t('job.executorTimeout'), input('executorTimeout', { inputmode: 'numeric', maxlength: 6 }), t('job.executorTimeoutHint')),
      field(t('job.executorFailRetryCount'), input('executorFailRetryCount', { inputmode: 'numeric', maxlength: 4 })),
      field(t('job.retryBackoff'), input('retryBackoff', { inputmode: 'numeric', maxlength: 5, placeholder: t('job.retryBackoffDefault') }), t('job.retryBackoffHint')),
      field(t('job.retryBackoffStrategy'), select('retryBackoffStrategy', ['FIXED', 'EXPONENTIAL'].map((s) => ({ value: s, label: t(`job.backoff${s}`) })),
        job.retryBackoffStrategy || 'FIXED', { id: 'job-retryBackoffStrategy' }), t('job.retryBackoffStrategyHint')),
      field(t('job.retryBackoffMax'), input('retryBackoffMax', { inputmode: 'numeric', maxlength: 5, placeholder: '3600' }), t('job.retryBackoffMaxHint')),
      field(t('job.retryJitter'), input('retryJitter', { inputmode: 'numeric', maxlength: 3, placeholder: '0' }), t('job.retryJitterHint'))),
    h('div', { class: 'form-actions' },
      h('button', { type: 'submit', class: 'btn btn-primary', id: 'job-save' }, t('common.save')),
      h('a', { class: 'btn', href: '#/jobs' }, t('common.cancel'))));
  sync();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.hidden = true;
    const values = Object.fromEntries(new FormData(form));
    values.glueType = glueType.value;
    const problems = validate(values);
    if (problems.length) {
      error.textContent = problems.join(' ');
      error.hidden = false;
      return;
    }
    const within = Number(doneWithin.value.trim() || 0);
    if (!Number.isInteger(within) || within < 0 || within > 604800) {
      error.textContent = t('alarms.doneWithinRule');
      error.hidden = false;
      return;
    }
    const body = { ...toInput(values, id), ...days(), alarmChannels: chosen(alarmChannels), doneWithin: within };
    try {
      const saved = id ? await put(`/jobs/${id}`, body) : await post('/jobs', body);
      notify(t('common.saved'));
      // A new Wasm job needs its module next; everything else goes back to the list.
      if (!id && saved.glueType === 'GLUE_WASM') app.navigate(`#/jobs/${saved.id}/wasm`);
      else if (!id && isScript(saved.glueType)) app.navigate(`#/jobs/${saved.id}/glue`);
      else app.navigate(`#/jobs?jobGroup=${saved.jobGroup}`);
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    }
  });

  main.append(pageHeader(id ? t('jobs.editTitle', { id }) : t('jobs.add')), form);
}

function textarea(name, value, max) {
  const el = h('textarea', { name, id: `job-${name}`, rows: 3, maxlength: max });
  el.value = value || '';
  return el;
}

/** Upstream's client-side rules (the admin checks them again). */
function validate(v) {
  const problems = [];
  const need = (value, key, max) => {
    if (!value.trim()) problems.push(t('job.required', { field: t(`job.${key}`) }));
    else if (value.trim().length > max) problems.push(t('job.tooLong', { field: t(`job.${key}`), max }));
  };
  need(v.jobDesc, 'jobDesc', 50);
  need(v.author, 'author', 50);
  if (v.alarmEmail.length > 100) problems.push(t('job.tooLong', { field: t('job.alarmEmail'), max: 100 }));
  if (v.scheduleType === 'CRON' && !v.scheduleConf.trim()) problems.push(t('job.cronRequired'));
  if ((v.scheduleType === 'FIX_RATE' || v.scheduleType === 'FIX_DELAY')
    && !(/^\d+$/.test(v.scheduleConf.trim()) && Number(v.scheduleConf) >= 1)) problems.push(t('job.secondsRule'));
  if (v.glueType === 'BEAN' && !v.executorHandler.trim()) problems.push(t('job.handlerRequired'));
  if (!/^\d{1,6}$/.test(String(v.executorTimeout).trim())) problems.push(t('job.timeoutRule'));
  if (!/^\d{1,4}$/.test(String(v.executorFailRetryCount).trim())) problems.push(t('job.retryRule'));
  const backoff = String(v.retryBackoff ?? '').trim();
  if (backoff && !(/^\d{1,5}$/.test(backoff) && Number(backoff) <= 86400)) problems.push(t('job.retryBackoffRule'));
  const ceiling = String(v.retryBackoffMax ?? '').trim();
  if (ceiling && !(/^\d{1,5}$/.test(ceiling) && Number(ceiling) <= 86400 && Number(ceiling) >= Number(backoff || 0))) problems.push(t('job.retryBackoffMaxRule'));
  const jitter = String(v.retryJitter ?? '').trim();
  if (jitter && !(/^\d{1,3}$/.test(jitter) && Number(jitter) <= 100)) problems.push(t('job.retryJitterRule'));
  if (v.childJobId.trim() && !/^\d+(\s*,\s*\d+)*$/.test(v.childJobId.trim())) problems.push(t('job.childRule'));
  const tags = splitTags(v.tags);
  if (tags.length > 16 || tags.some((tag) => tag.length > 32 || !/^[\p{L}\p{N}_.:/-]+$/u.test(tag))) problems.push(t('job.tagsRule'));
  return problems;
}

/** A multiple select of alarm channels, `ids` chosen (shared by the job, group and workflow forms). */
export function channelSelect(name, channels, ids) {
  return h('select', { name, id: `${name}-select`, multiple: true, size: Math.min(4, Math.max(2, channels.length)) },
    channels.map((c) => h('option', { value: String(c.id), selected: (ids || []).includes(c.id) }, c.name)));
}

/** The chosen calendar ids of a multiple select. */
export function chosen(selectEl) {
  return [...selectEl.selectedOptions].map((o) => Number(o.value));
}

/** The windows typed in the form: `HH:MM-HH:MM`, comma- or space-separated. */
export function splitWindows(text) {
  return String(text || '').split(/[\s,]+/).map((w) => w.trim()).filter(Boolean);
}

/** The tags typed in the form: comma- or space-separated words. */
function splitTags(text) {
  return String(text || '').split(/[\s,]+/).map((tag) => tag.trim().toLowerCase()).filter(Boolean);
}

/** The API's `JobInput` from the form's strings. */
function toInput(v, id) {
  const body = {
    jobGroup: Number(v.jobGroup),
    jobDesc: v.jobDesc.trim(),
    author: v.author.trim(),
    alarmEmail: v.alarmEmail.trim(),
    scheduleType: v.scheduleType,
    scheduleConf: v.scheduleType === 'NONE' ? '' : v.scheduleConf.trim(),
    timeZone: v.timeZone.trim() || null,
    misfireStrategy: v.misfireStrategy,
    executorRouteStrategy: v.executorRouteStrategy,
    executorHandler: v.glueType === 'BEAN' ? v.executorHandler.trim() : '',
    executorParam: v.executorParam,
    executorBlockStrategy: v.executorBlockStrategy,
    executorTimeout: Number(v.executorTimeout),
    executorFailRetryCount: Number(v.executorFailRetryCount),
    retryBackoff: String(v.retryBackoff ?? '').trim() === '' ? null : Number(v.retryBackoff),
    retryBackoffStrategy: v.retryBackoffStrategy || 'FIXED',
    retryBackoffMax: String(v.retryBackoffMax ?? '').trim() === '' ? null : Number(v.retryBackoffMax),
    retryJitter: String(v.retryJitter ?? '').trim() === '' ? null : Number(v.retryJitter),
    glueType: v.glueType,
    childJobId: v.childJobId.replace(/\s+/g, ''),
    tags: splitTags(v.tags),
    priority: v.priority || 'NORMAL',
    deliveryMode: v.deliveryMode || 'AT_MOST_ONCE',
  };
  if (!id) {
    body.glueSource = '';
    body.glueRemark = v.glueType === 'BEAN' ? '' : t('glue.initRemark');
  }
  return body;
}

/**
 * Why the executors of `group` cannot run a job of `glueType`, or null: GLUE(Java) where every
 * executor is jobwheel's, or any GLUE type where every executor runs BEAN handlers only.
 */
async function glueProblem(group, glueType) {
  if (!group || glueType === 'BEAN') return null;
  let executors;
  try {
    executors = await get(`/groups/${group}/executors`);
  } catch {
    return null;
  }
  if (!executors.length) return null;
  if (glueType === 'GLUE_GROOVY' && executors.every((e) => e.kind === 'jobwheel')) return t('job.glueJavaNoJvm');
  if (executors.every((e) => e.glueEnabled === false)) return t('job.glueBeanOnly');
  return null;
}
