// English and Simplified Chinese. The admin's default comes from GET /api/v1/meta (`i18n`);
// a choice made in the UI is kept in localStorage and wins.

import en from './i18n/en.js';
import zhCN from './i18n/zh_CN.js';

const DICTIONARIES = { en, zh_CN: zhCN };
const STORAGE_KEY = 'jobwheel.lang';

let current = pickInitial();

function pickInitial() {
  const stored = localStorage.getItem(STORAGE_KEY);
  if (stored && DICTIONARIES[stored]) return stored;
  return (navigator.language || '').toLowerCase().startsWith('zh') ? 'zh_CN' : 'en';
}

export const LANGUAGES = [
  { name: 'en', title: 'English' },
  { name: 'zh_CN', title: '简体中文' },
];

export function language() {
  return current;
}

/** Whether the user picked a language in the UI (then the admin's default does not apply). */
export function languageChosen() {
  return Boolean(localStorage.getItem(STORAGE_KEY));
}

/** Uses `lang`; `remember` keeps it across visits. */
export function setLanguage(lang, remember) {
  if (!DICTIONARIES[lang]) return;
  current = lang;
  document.documentElement.lang = lang === 'zh_CN' ? 'zh-CN' : 'en';
  if (remember) localStorage.setItem(STORAGE_KEY, lang);
}

/** The text for `key` with `{name}` placeholders filled from `vars`. */
export function t(key, vars) {
  const text = DICTIONARIES[current][key] ?? en[key] ?? key;
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

/** Whether `key` has a text in the current language or English. */
export function hasText(key) {
  return key in DICTIONARIES[current] || key in en;
}
