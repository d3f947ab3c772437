// Dashboard (upstream /dashboard): the four counters and the report table's daily chart
// (running / success / failed per day, plus their totals as a pie), with upstream's presets.

import { get } from '../api.js';
import { formatDate, h, replace } from '../dom.js';
import { t } from '../i18n.js';
import { guarded, pageHeader } from '../ui.js';

const COLORS = { success: '#2e9d5b', failed: '#d64545', running: '#e0a526' };

function presets() {
  const today = new Date();
  const day = (offset) => new Date(today.getFullYear(), today.getMonth(), today.getDate() + offset);
  return [
    { key: 'today', from: day(0), to: day(0) },
    { key: 'yesterday', from: day(-1), to: day(-1) },
    { key: 'thisMonth', from: new Date(today.getFullYear(), today.getMonth(), 1), to: day(0) },
    { key: 'lastMonth', from: new Date(today.getFullYear(), today.getMonth() - 1, 1), to: new Date(today.getFullYear(), today.getMonth(), 0) },
    { key: 'recentWeek', from: day(-6), to: day(0) },
    { key: 'recentMonth', from: day(-29), to: day(0) },
  ];
}

function counter(id, label, value, kind) {
  return h('div', { class: `stat stat-${kind}`, id },
    h('div', { class: 'stat-value' }, String(value ?? 0)),
    h('div', { class: 'stat-label' }, label));
}

export async function render({ main }) {
  const counts = await get('/dashboard');
  const stats = h('div', { class: 'stats' },
    counter('stat-jobs', t('dashboard.jobCount'), counts.jobCount, 'blue'),
    counter('stat-logs', t('dashboard.logCount'), counts.logCount, 'amber'),
    counter('stat-success', t('dashboard.logSuccessCount'), counts.logSuccessCount, 'green'),
    counter('stat-executors', t('dashboard.executorCount'), counts.executorCount, 'red'));

  const all = presets();
  const week = all.find((p) => p.key === 'recentWeek');
  const from = h('input', { type: 'date', value: formatDate(week.from), 'aria-label': t('common.from') });
  const to = h('input', { type: 'date', value: formatDate(week.to), 'aria-label': t('common.to') });
  const presetSelect = h('select', { 'aria-label': t('dashboard.range') },
    all.map((p) => h('option', { value: p.key, selected: p.key === 'recentWeek' }, t(`dashboard.preset.${p.key}`))));
  presetSelect.addEventListener('change', () => {
    const p = all.find((x) => x.key === presetSelect.value);
    from.value = formatDate(p.from);
    to.value = formatDate(p.to);
    load();
  });
  from.addEventListener('change', () => load());
  to.addEventListener('change', () => load());

  const lineBox = h('div', { class: 'chart-box chart-line' });
  const pieBox = h('div', { class: 'chart-box chart-pie' });
  const charts = [];
  const load = () => guarded(async () => {
    const data = await get('/dashboard/chart', { from: from.value, to: to.value });
    charts.splice(0).forEach((c) => c.destroy());
    const line = h('canvas', { id: 'chart-line' });
    const pie = h('canvas', { id: 'chart-pie' });
    replace(lineBox, line);
    replace(pieBox, pie);
    if (!window.Chart) return;
    const series = (key, label) => ({ label, data: data[key], borderColor: COLORS[key], backgroundColor: COLORS[key], tension: 0.2 });
    charts.push(new window.Chart(line, {
      type: 'line',
      data: {
        labels: data.days,
        datasets: [series('success', t('dashboard.success')), series('failed', t('dashboard.failed')), series('running', t('dashboard.running'))],
      },
      options: { maintainAspectRatio: false, animation: false, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } },
    }));
    charts.push(new window.Chart(pie, {
      type: 'doughnut',
      data: {
        labels: [t('dashboard.success'), t('dashboard.failed'), t('dashboard.running')],
        datasets: [{ data: [data.successTotal, data.failedTotal, data.runningTotal], backgroundColor: [COLORS.success, COLORS.failed, COLORS.running] }],
      },
      options: { maintainAspectRatio: false, animation: false },
    }));
  });

  main.append(
    pageHeader(t('menu.dashboard')),
    stats,
    h('div', { class: 'card' },
      h('div', { class: 'card-header' }, h('h3', {}, t('dashboard.report')),
        h('div', { class: 'tools' }, presetSelect, from, h('span', {}, '–'), to)),
      h('div', { class: 'charts' }, lineBox, pieBox)));
  await load();
  return () => charts.forEach((c) => c.destroy());
}
