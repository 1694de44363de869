// The console's only script (served from the package: Content-Security-Policy allows no other).
// It renders nothing itself: a table that refreshes is a fragment the server rendered (and
// escaped) with the page's own template, parsed inert and swapped in. Every URL comes from a
// data attribute the server wrote with url_for (the console lives under its token's path).
"use strict";

// The element `id` of the HTML fragment at `url`, parsed by DOMParser (no script runs), or null.
async function fragment(url, id) {
  try {
    const answer = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (!answer.ok) return null;
    const parsed = new DOMParser().parseFromString(await answer.text(), "text/html");
    const found = parsed.getElementById(id);
    return found ? document.adoptNode(found) : null;
  } catch (error) {
    return null; // the console stopped, or the network: the page keeps what it shows
  }
}

async function refreshOverview() {
  const current = document.getElementById("overview-live");
  if (!current) return;
  const fresh = await fragment(current.dataset.refresh, "overview-live");
  if (fresh) current.replaceWith(fresh);
}

async function pollSnapshot(section) {
  try {
    const answer = await fetch(section.dataset.poll, { credentials: "same-origin", cache: "no-store" });
    if (!answer.ok) return;
    const state = await answer.json();
    const shown = document.getElementById("snapshot-examined");
    if (shown) shown.textContent = String(state.examined);
    if (state.state !== "reading") window.location.reload();
  } catch (error) {
    // the next poll tries again
  }
}

async function pollJob() {
  const box = document.getElementById("job");
  if (!box || box.dataset.state !== "running") return;
  const fresh = await fragment(box.dataset.fragment, "job");
  if (fresh) document.getElementById("job").replaceWith(fresh);
  setTimeout(pollJob, 500);
}

function stopJob(url) {
  const form = new FormData();
  form.append("csrf", document.body.dataset.csrf);
  fetch(url, { method: "POST", body: form, credentials: "same-origin" });
}

document.addEventListener("DOMContentLoaded", () => {
  if (document.getElementById("overview-live")) setInterval(refreshOverview, 5000);
  const section = document.getElementById("snapshot");
  if (section && section.dataset.state === "reading") setInterval(() => pollSnapshot(section), 700);
  if (document.getElementById("job")) {
    pollJob();
    // Leaving the page leaves the action running (every page links back to it): only the
    // Stop button, or stopping the console, stops it.
    // The Stop button is in the fragment, replaced as it refreshes: one listener for all.
    document.addEventListener("click", (event) => {
      const box = document.getElementById("job");
      if (box && event.target instanceof Element && event.target.id === "job-stop") stopJob(box.dataset.stop);
    });
  }
  const all = document.getElementById("tick-all");
  all?.addEventListener("change", () => {
    for (const box of document.querySelectorAll("input.tick")) box.checked = all.checked;
  });
});
