// The console's only script (served from the package: Content-Security-Policy allows no other).
// Every value from the server goes into the page as text (textContent), never as HTML.
"use strict";

function csrf() { return document.body.dataset.csrf; }

function cell(row, text, numeric) {
  const td = document.createElement("td");
  td.textContent = text;
  if (numeric) td.className = "n";
  row.appendChild(td);
  return td;
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  let total = Math.round(seconds);
  if (total < 60) return total + "s";
  const units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
  const parts = [];
  for (const [name, size] of units) {
    const amount = Math.floor(total / size);
    total -= amount * size;
    if (amount || parts.length) parts.push(amount + name);
    if (parts.length === 2) break;
  }
  return parts.join(" ");
}

function link(name, listed) {
  if (listed && !listed.has(name)) return document.createTextNode(name);
  const a = document.createElement("a");
  a.href = "/q/" + encodeURIComponent(name);
  a.textContent = name;
  return a;
}

async function refreshOverview(table) {
  const answer = await fetch(table.dataset.refresh, { credentials: "same-origin" });
  if (!answer.ok) return;
  const view = await answer.json();
  document.getElementById("replay-state").textContent = view.replay || "no stack (pass --stack NAME)";
  document.getElementById("operator-depth").textContent =
    view.operator_depth === null ? "-" : String(view.operator_depth);
  const body = table.tBodies[0];
  const rows = [];
  const listed = new Set(view.rows.map((q) => q.name));
  for (const q of view.rows) {
    const tr = document.createElement("tr");
    tr.dataset.queue = q.name;
    cell(tr, "").appendChild(link(q.name));
    cell(tr, q.roles.join(", "));
    cell(tr, String(q.visible), true);
    cell(tr, String(q.in_flight), true);
    cell(tr, String(q.delayed), true);
    cell(tr, age(q.oldest_age), true);
    const sources = cell(tr, q.sources.length ? "" : "-");
    q.sources.forEach((source, index) => {
      if (index) sources.appendChild(document.createTextNode(", "));
      sources.appendChild(link(source, listed));
    });
    const moves = cell(tr, q.moves_to ? "" : "-");
    if (q.moves_to) {
      moves.appendChild(link(q.moves_to, listed));
      moves.appendChild(document.createTextNode(" after " + q.max_receive_count + " receives"));
    }
    const kinds = Object.entries(q.kinds).map(([k, n]) => k + " " + n).join(", ");
    cell(tr, kinds || "not read yet");
    rows.push(tr);
  }
  body.replaceChildren(...rows);
}

async function pollSnapshot(section) {
  const answer = await fetch(section.dataset.poll, { credentials: "same-origin" });
  if (!answer.ok) return;
  const state = await answer.json();
  const shown = document.getElementById("snapshot-examined");
  if (shown) shown.textContent = String(state.examined);
  if (state.state !== "reading") window.location.reload();
}

function showJob(job) {
  document.getElementById("job-state").textContent = job.state;
  document.getElementById("job-seen").textContent = String(job.seen);
  document.getElementById("job-total").textContent = String(job.total);
  const bar = document.getElementById("job-progress");
  bar.max = Math.max(job.total, job.seen, 1);
  bar.value = job.seen;
  const rows = job.rows.map(([label, count]) => {
    const tr = document.createElement("tr");
    cell(tr, label);
    cell(tr, String(count), true);
    return tr;
  });
  document.getElementById("tally").tBodies[0].replaceChildren(...rows);
  const lines = job.lines.map((line) => {
    const li = document.createElement("li");
    li.textContent = line;
    return li;
  });
  document.getElementById("job-lines").replaceChildren(...lines);
  document.getElementById("job-error").textContent = job.error || "";
  if (job.adds_up !== null) {
    document.getElementById("adds-up").textContent = job.adds_up ? "the tally adds up" : "the tally does not add up";
  }
  document.getElementById("job-download").hidden = !job.download;
  const stop = document.getElementById("job-stop");
  if (stop) stop.hidden = job.state !== "running";
}

async function pollJob(box) {
  const id = box.dataset.job;
  const answer = await fetch("/api/jobs/" + encodeURIComponent(id), { credentials: "same-origin" });
  if (!answer.ok) return;
  const job = await answer.json();
  showJob(job);
  if (job.state === "running") setTimeout(() => pollJob(box), 500);
}

function stopJob(id, beacon) {
  const url = "/jobs/" + encodeURIComponent(id) + "/stop";
  const form = new FormData();
  form.append("csrf", csrf());
  if (beacon) navigator.sendBeacon(url, form);
  else fetch(url, { method: "POST", body: form, credentials: "same-origin" });
}

document.addEventListener("DOMContentLoaded", () => {
  const table = document.getElementById("overview");
  if (table) setInterval(() => refreshOverview(table), 5000);
  const section = document.getElementById("snapshot");
  if (section && section.dataset.state === "reading") setInterval(() => pollSnapshot(section), 700);
  const box = document.getElementById("job");
  if (box) {
    pollJob(box);
    const stop = document.getElementById("job-stop");
    if (stop) stop.addEventListener("click", () => stopJob(box.dataset.job, false));
    // Closing the page stops a running action, as Ctrl-C stops the command.
    window.addEventListener("pagehide", () => {
      if (document.getElementById("job-state").textContent === "running") stopJob(box.dataset.job, true);
    });
  }
  const all = document.getElementById("tick-all");
  if (all) {
    all.addEventListener("change", () => {
      for (const box of document.querySelectorAll("input.tick")) box.checked = all.checked;
    });
  }
});
