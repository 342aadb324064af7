// The index's task table: rendered from the JSON in #runner-data, filtered
// and sorted in place. Every value is set as text (textContent) or as a
// checked link; nothing is parsed as HTML.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("runner-data").textContent);
  const rows = data.rows || [];
  const body = document.getElementById("task-rows");
  const count = document.getElementById("task-count");
  const $ = (id) => document.getElementById(id);
  const inputs = {
    status: $("f-status"), repo: $("f-repo"), text: $("f-text"),
    cost: $("f-cost"), steps: $("f-steps"), seconds: $("f-seconds"),
  };
  let sortKey = null, sortDir = 1;

  function option(select, value, label) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    select.appendChild(o);
  }
  const statuses = [...new Set(rows.map((r) => r.status))].sort();
  const repos = [...new Set(rows.map((r) => r.repo).filter((r) => r))].sort();
  statuses.forEach((s) => option(inputs.status, s, s));
  repos.forEach((r) => option(inputs.repo, r, r));

  function money(v) { return "$" + v.toFixed(4); }
  function duration(s) {
    if (!s) return "";
    if (s < 60) return s.toFixed(1) + "s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + "m" + String(Math.round(s % 60)).padStart(2, "0") + "s";
    return Math.floor(m / 60) + "h" + String(m % 60).padStart(2, "0") + "m";
  }
  // A page is a relative path under tasks/ made by the report; anything
  // else is not linked.
  function safePage(p) { return /^tasks\/[A-Za-z0-9][A-Za-z0-9._-]*\.html$/.test(p) ? p : null; }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  const built = rows.map((r) => {
    const tr = document.createElement("tr");
    const id = cell(tr, "", "id");
    const page = safePage(r.page || "");
    if (page) {
      const a = document.createElement("a");
      a.href = page;
      a.textContent = r.id;
      id.appendChild(a);
    } else {
      id.textContent = r.id;
    }
    const st = cell(tr, "");
    const badge = document.createElement("span");
    badge.className = "status st-" + r.status.replace(/[^a-z_]/g, "");
    badge.textContent = r.status;
    st.appendChild(badge);
    cell(tr, r.repo, "mono");
    cell(tr, money(r.cost), "num");
    const share = cell(tr, r.budget ? Math.round(100 * (r.share || 0)) + "%" : "", "num share");
    if (r.budget) share.title = "of its " + money(r.budget) + " budget";
    cell(tr, String(r.steps), "num");
    cell(tr, duration(r.seconds), "num");
    cell(tr, r.attempts > 1 ? String(r.attempts) : "", "num");
    cell(tr, r.why || "", "why");
    const search = (r.id + "\n" + (r.why || "") + "\n" + (r.branch || "")).toLowerCase();
    return { r, tr, search };
  });

  function number(input) {
    const v = parseFloat(input.value);
    return isNaN(v) ? null : v;
  }
  function apply() {
    const status = inputs.status.value, repo = inputs.repo.value;
    const text = inputs.text.value.trim().toLowerCase();
    const cost = number(inputs.cost), steps = number(inputs.steps), seconds = number(inputs.seconds);
    let shown = built.filter(({ r, search }) =>
      (!status || r.status === status) && (!repo || r.repo === repo) &&
      (!text || search.includes(text)) && (cost === null || r.cost >= cost) &&
      (steps === null || r.steps >= steps) && (seconds === null || r.seconds >= seconds));
    if (sortKey) {
      shown = shown.slice().sort((a, b) => {
        const x = a.r[sortKey], y = b.r[sortKey];
        return (x < y ? -1 : x > y ? 1 : 0) * sortDir;
      });
    }
    const frag = document.createDocumentFragment();
    shown.forEach((b) => frag.appendChild(b.tr));
    body.replaceChildren(frag);
    count.textContent = shown.length === rows.length ? rows.length + " tasks" : shown.length + " of " + rows.length + " tasks";
    document.querySelectorAll("button.status[data-status]").forEach((b) =>
      b.setAttribute("aria-pressed", String(b.dataset.status === status)));
  }

  Object.values(inputs).forEach((el) => el.addEventListener("input", apply));
  document.querySelectorAll("button.status[data-status]").forEach((b) =>
    b.addEventListener("click", () => {
      inputs.status.value = inputs.status.value === b.dataset.status ? "" : b.dataset.status;
      apply();
    }));
  document.querySelectorAll("th[data-key] button").forEach((btn) =>
    btn.addEventListener("click", () => {
      const th = btn.parentElement, key = th.dataset.key;
      sortDir = sortKey === key ? -sortDir : (th.classList.contains("num") ? -1 : 1);
      sortKey = key;
      document.querySelectorAll("th[data-key]").forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", sortDir > 0 ? "ascending" : "descending");
      apply();
    }));
  apply();
  document.body.dataset.ready = "true";
})();
