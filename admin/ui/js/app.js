// The single-page app: session, hash routing, layout (top bar, menu in upstream's order).

import { ApiError, get, del, onUnauthorized, setCsrfToken } from './api.js';
import { h, replace } from './dom.js';
import { LANGUAGES, hasText, language, languageChosen, setLanguage, t } from './i18n.js';
import { notify } from './ui.js';
import * as alarms from './pages/alarms.js';
import * as approvals from './pages/approvals.js';
import * as audit from './pages/audit.js';
import * as backfills from './pages/backfills.js';
import * as calendars from './pages/calendars.js';
import * as dashboard from './pages/dashboard.js';
import * as groups from './pages/groups.js';
import * as jobForm from './pages/job_form.js';
import * as jobs from './pages/jobs.js';
import * as glue from './pages/glue.js';
import * as logDetail from './pages/log_detail.js';
import * as logs from './pages/logs.js';
import * as login from './pages/login.js';
import * as password from './pages/password.js';
import * as tokens from './pages/tokens.js';
import * as users from './pages/users.js';
import * as wasm from './pages/wasm.js';
import * as workflowForm from './pages/workflow_form.js';
import * as workflowInstance from './pages/workflow_instance.js';
import * as workflowInstances from './pages/workflow_instances.js';
import * as workflows from './pages/workflows.js';

const ROUTES = [
  { path: /^\/login$/, page: login, public: true },
  { path: /^\/dashboard$/, page: dashboard, menu: 'dashboard' },
  { path: /^\/jobs$/, page: jobs, menu: 'jobs' },
  { path: /^\/jobs\/new$/, page: jobForm, menu: 'jobs' },
  { path: /^\/jobs\/(\d+)\/edit$/, page: jobForm, menu: 'jobs' },
  { path: /^\/jobs\/(\d+)\/glue$/, page: glue, menu: 'jobs' },
  { path: /^\/jobs\/(\d+)\/wasm$/, page: wasm, menu: 'jobs' },
  { path: /^\/workflows$/, page: workflows, menu: 'workflows' },
  { path: /^\/workflows\/new$/, page: workflowForm, menu: 'workflows' },
  { path: /^\/workflows\/(\d+)\/edit$/, page: workflowForm, menu: 'workflows' },
  { path: /^\/workflows\/(\d+)\/instances$/, page: workflowInstances, menu: 'workflows' },
  { path: /^\/workflow-instances\/(\d+)$/, page: workflowInstance, menu: 'workflows' },
  { path: /^\/backfills$/, page: backfills, menu: 'backfills' },
  { path: /^\/backfills\/(\d+)$/, page: backfills, menu: 'backfills' },
  { path: /^\/logs$/, page: logs, menu: 'logs' },
  { path: /^\/logs\/(\d+)$/, page: logDetail, menu: 'logs' },
  { path: /^\/groups$/, page: groups, menu: 'groups', admin: true },
  { path: /^\/calendars$/, page: calendars, menu: 'calendars', admin: true },
  { path: /^\/alarms$/, page: alarms, menu: 'alarms', admin: true },
  { path: /^\/users$/, page: users, menu: 'users', admin: true },
  { path: /^\/audit$/, page: audit, menu: 'audit', admin: true },
  { path: /^\/approvals$/, page: approvals, menu: 'approvals' },
  { path: /^\/tokens$/, page: tokens, menu: 'tokens' },
  { path: /^\/password$/, page: password, menu: 'password' },
];

// Upstream's menu order: dashboard, jobs, logs, executors (admin), users (admin); ours between.
const MENU = [
  { key: 'dashboard', href: '#/dashboard' },
  { key: 'jobs', href: '#/jobs' },
  { key: 'logs', href: '#/logs' },
  { key: 'workflows', href: '#/workflows' },
  { key: 'backfills', href: '#/backfills' },
  { key: 'groups', href: '#/groups', admin: true },
  { key: 'calendars', href: '#/calendars', admin: true },
  { key: 'alarms', href: '#/alarms', admin: true },
  { key: 'users', href: '#/users', admin: true },
  { key: 'audit', href: '#/audit', admin: true },
  { key: 'approvals', href: '#/approvals' },
  { key: 'tokens', href: '#/tokens' },
];

/** What pages share: the logged-in user and the admin's enums. */
export const app = {
  user: null,
  meta: null,
  isAdmin() {
    return Boolean(this.user && this.user.role === 1);
  },
  /** The title of enum value `name` in the UI's language (the admin's title as fallback). */
  enumTitle(kind, name) {
    if (hasText(`enum.${name}`)) return t(`enum.${name}`);
    const item = ((this.meta && this.meta[kind]) || []).find((x) => x.name === name);
    return item ? item.title : name;
  },
  /** `[{value, label}]` of an enum from /meta, for selects. */
  enumOptions(kind) {
    return ((this.meta && this.meta[kind]) || []).map((x) => ({ value: x.name, label: this.enumTitle(kind, x.name) }));
  },
  /** Called after login with `GET/POST /session`'s answer. */
  async signedIn(session) {
    this.user = session.user;
    setCsrfToken(session.csrfToken);
    this.meta = await get('/meta');
    if (!languageChosen() && this.meta.i18n) setLanguage(this.meta.i18n, false);
  },
  async logout() {
    try {
      await del('/session');
    } catch (e) {
      notify(e.message, 'error');
    }
    this.user = null;
    setCsrfToken(null);
    location.hash = '#/login';
  },
  navigate(hash) {
    if (location.hash === hash) render();
    else location.hash = hash;
  },
  /** Re-renders the current route (after a language change). */
  refresh() {
    render();
  },
};

let cleanup = null;
let renderCount = 0;

function currentPath() {
  const hash = location.hash.replace(/^#/, '') || '/dashboard';
  return hash.split('?')[0];
}

async function render() {
  const count = ++renderCount;
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  const path = currentPath();
  const route = ROUTES.find((r) => r.path.test(path));
  const root = document.getElementById('app');
  if (!route) {
    location.hash = '#/dashboard';
    return;
  }
  if (!route.public && !app.user) {
    location.hash = `#/login?next=${encodeURIComponent(location.hash)}`;
    return;
  }
  if (route.admin && !app.isAdmin()) {
    replace(root, layout(route.menu, h('div', { class: 'alert alert-error' }, t('error.adminOnly'))));
    return;
  }
  const main = h('main', { class: 'main', id: 'main' });
  replace(root, route.public ? main : layout(route.menu, main));
  const params = path.match(route.path).slice(1);
  document.title = `jobwheel · ${t(`menu.${route.menu || 'login'}`)}`;
  try {
    const result = await route.page.render({ main, params, app });
    if (count === renderCount) cleanup = typeof result === 'function' ? result : null;
    else if (typeof result === 'function') result();
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return;
    main.append(h('div', { class: 'alert alert-error', role: 'alert' }, e.message || String(e)));
  }
}

function languageSelect() {
  const sel = h('select', { class: 'lang-select', 'aria-label': t('common.language'), id: 'lang-select' },
    LANGUAGES.map((l) => h('option', { value: l.name, selected: l.name === language() }, l.title)));
  sel.addEventListener('change', () => {
    setLanguage(sel.value, true);
    render();
  });
  return sel;
}

function layout(active, main) {
  const menu = h('nav', { class: 'sidebar', 'aria-label': t('common.menu') },
    h('ul', {}, MENU.filter((m) => !m.admin || app.isAdmin()).map((m) =>
      h('li', {}, h('a', { href: m.href, class: m.key === active ? 'active' : null, id: `menu-${m.key}` }, t(`menu.${m.key}`))))));
  const userMenu = h('details', { class: 'user-menu' },
    h('summary', { id: 'user-menu' }, app.user ? app.user.username : ''),
    h('div', { class: 'action-list' },
      h('a', { href: '#/password', class: 'action-item' }, t('menu.password')),
      h('a', { href: '#/tokens', class: 'action-item' }, t('menu.tokens')),
      h('button', { type: 'button', class: 'action-item', id: 'logout', onclick: () => app.logout() }, t('common.logout'))));
  const top = h('header', { class: 'topbar' },
    h('a', { class: 'brand', href: '#/dashboard' }, 'jobwheel'),
    h('span', { class: 'version' }, app.meta && app.meta.version ? `v${app.meta.version}` : ''),
    h('div', { class: 'topbar-right' }, languageSelect(), userMenu));
  return [top, h('div', { class: 'shell' }, menu, main)];
}

async function start() {
  setLanguage(language(), false);
  onUnauthorized(() => {
    app.user = null;
    if (!currentPath().startsWith('/login')) location.hash = `#/login?next=${encodeURIComponent(location.hash)}`;
  });
  try {
    const session = await get('/session');
    await app.signedIn(session);
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) notify(e.message, 'error');
  }
  window.addEventListener('hashchange', render);
  await render();
}

login.setLanguageSelect(languageSelect);
start();
