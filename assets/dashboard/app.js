// The dashboard page: one WebSocket to drydock (see src/dashboard/socket.rs), terminals
// drawn by xterm.js, panels for agents, the task queue and the tool feed.

// Errors of the page, for tests and for a person looking at window.drydock.errors.
const errors = [];
window.addEventListener("error", (e) => errors.push(String(e.message)));
window.addEventListener("unhandledrejection", (e) => errors.push(String(e.reason)));

const panels = new Map(); // session name -> panel
const channels = new Map(); // channel number -> panel
const pending = new Map(); // call id -> {resolve, reject}
let nextCall = 1;
let socket;

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
};

function connect() {
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/dashboard/ws`);
  socket.binaryType = "arraybuffer";
  socket.onopen = async () => {
    $("connection").textContent = "live";
    for (const panel of panels.values()) watch(panel);
    await refresh();
    window.drydock.ready = true;
  };
  socket.onclose = () => {
    $("connection").textContent = "disconnected: reconnecting…";
    window.drydock.ready = false;
    setTimeout(connect, 1000);
  };
  socket.onmessage = (message) => {
    if (typeof message.data !== "string") return output(new Uint8Array(message.data));
    const data = JSON.parse(message.data);
    if (data.type === "result" || (data.type === "error" && data.id)) {
      const waiter = pending.get(data.id);
      pending.delete(data.id);
      if (waiter) data.type === "result" ? waiter.resolve(data.result) : waiter.reject(new Error(data.message));
    } else if (data.type === "screen") {
      screen(data);
    } else if (data.type === "history") {
      // A (re)connection: the feed starts again from what the server kept.
      $("calls").replaceChildren();
      lastSeq = 0;
      for (const past of data.events) event(past);
    } else if (data.type === "event") {
      event(data.event);
    } else if (data.type === "approvals") {
      showApprovals(data.pending);
    } else if (data.type === "missed") {
      refresh();
    }
  };
}

/// Sends `request` and resolves with its answer's result (rejects with its error).
function ask(request) {
  const id = nextCall++;
  socket.send(JSON.stringify({ ...request, id }));
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

/// Calls a drydock tool; resolves with its structured result.
const call = (tool, args = {}) => ask({ type: "call", tool, arguments: args });

async function refresh() {
  const [terminals, agents] = await Promise.all([call("terminal_list"), call("agent_list").catch(() => ({ agents: [] }))]);
  const agentNames = new Set(agents.agents.map((agent) => agent.name));
  userPanes = terminals.sessions.filter((session) => session.backend === "user_tmux");
  // The user's own panes only when the person added them (or an agent runs there).
  for (const session of terminals.sessions) {
    if (session.backend !== "user_tmux" || chosenPanes.has(session.name) || agentNames.has(session.name)) panelFor(session.name, session);
  }
  for (const agent of agents.agents) showAgent(agent);
  fillPanePicker();
  await refreshQueue();
}

// Terminals

function panelFor(name, info = {}) {
  let panel = panels.get(name);
  if (panel) return panel;
  const users = info.backend === "user_tmux" || name.startsWith("tmux:");
  const term = new Terminal({ fontFamily: "DejaVu Sans Mono, monospace", fontSize: 12, scrollback: 5000, convertEol: false });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  const box = el("div", { class: "term" });
  const meta = el("span", { class: "meta" }, info.cwd || "");
  const question = el("div", { class: "question", hidden: "" });
  const buttons = [
    el("button", { "data-testid": "fullscreen", onclick: () => { node.classList.toggle("fullscreen"); fitPanel(panel); } }, "full"),
    el("button", { "data-testid": "interrupt", onclick: () => call("terminal_manage", { session: name, action: "interrupt" }) }, "interrupt"),
  ];
  // A user's pane is never stopped (nor resized) from here: it can only leave the grid.
  if (users) buttons.push(el("button", { "data-testid": "hide", onclick: () => hidePane(name) }, "hide"));
  else buttons.push(el("button", { "data-testid": "stop", onclick: () => call("terminal_manage", { session: name, action: "kill" }) }, "stop"));
  const node = el("div", { class: "panel", "data-session": name, tabindex: "0" },
    el("div", { class: "panel-header" }, el("span", { class: "name" }, name), meta, ...buttons), question, box);
  $("grid").append(node);
  term.open(box);
  term.onData((data) => socket.send(JSON.stringify({ type: "input", session: name, data })));
  panel = { name, term, fit, node, meta, question, users, state: "", kind: "", cwd: info.cwd || "", fitted: false };
  panels.set(name, panel);
  if (socket && socket.readyState === WebSocket.OPEN) watch(panel);
  applyFilter();
  return panel;
}

/// Makes one of drydock's own terminals the size of its panel. The terminal's size is
/// drydock's (every page and every MCP client sees the same screen), so a page asks for it
/// only when the person changed something: the page opened, the layout, fullscreen, the
/// window's size. The new size comes back as a fresh screen to every page.
function fitPanel(panel) {
  if (!panel || panel.users || panel.node.hidden) return;
  const proposed = panel.fit.proposeDimensions();
  if (!proposed || !Number.isFinite(proposed.rows) || !Number.isFinite(proposed.cols)) return;
  const rows = Math.max(5, proposed.rows);
  const cols = Math.max(20, proposed.cols);
  if (rows === panel.term.rows && cols === panel.term.cols) return;
  call("terminal_manage", { session: panel.name, action: "resize", rows, cols }).catch(() => {});
}

const fitAll = () => { for (const panel of panels.values()) fitPanel(panel); };
let resizing;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(fitAll, 200);
});

// The user's own tmux panes: added to the grid by choice, remembered by this browser.

let userPanes = [];
const chosenPanes = new Set(JSON.parse(localStorage.getItem("drydock.panes") || "[]"));
const saveChosen = () => localStorage.setItem("drydock.panes", JSON.stringify([...chosenPanes]));

function fillPanePicker() {
  const choices = userPanes.filter((pane) => !panels.has(pane.name));
  $("pane-picker").replaceChildren(el("option", { value: "" }, choices.length ? "add a tmux pane…" : "no tmux pane to add"),
    ...choices.map((pane) => el("option", { value: pane.name }, `${pane.name} ${pane.command || ""} ${pane.cwd || ""}`)));
}

$("pane-picker").addEventListener("focus", async () => {
  const listed = await call("terminal_list").catch(() => null);
  if (!listed) return;
  userPanes = listed.sessions.filter((session) => session.backend === "user_tmux");
  const chosen = $("pane-picker").value;
  fillPanePicker();
  $("pane-picker").value = chosen;
});
$("pane-add").addEventListener("click", () => {
  const name = $("pane-picker").value;
  const pane = userPanes.find((candidate) => candidate.name === name);
  if (!pane) return;
  chosenPanes.add(name);
  saveChosen();
  panelFor(name, pane);
  fillPanePicker();
});

function hidePane(name) {
  chosenPanes.delete(name);
  saveChosen();
  socket.send(JSON.stringify({ type: "unwatch", session: name }));
  removePanel(name);
  fillPanePicker();
}

function watch(panel) {
  socket.send(JSON.stringify({ type: "watch", session: panel.name }));
}

function screen(header) {
  const panel = panels.get(header.session) || panelFor(header.session);
  for (const [channel, known] of channels) if (known === panel) channels.delete(channel);
  channels.set(header.channel, panel);
  if (panel.term.rows !== header.rows || panel.term.cols !== header.cols) panel.term.resize(header.cols, header.rows);
  if (!panel.fitted) {
    panel.fitted = true;
    fitPanel(panel);
  }
}

function output(bytes) {
  const channel = new DataView(bytes.buffer).getUint32(0);
  const panel = channels.get(channel);
  if (panel) panel.term.write(bytes.subarray(4));
}

function removePanel(name) {
  const panel = panels.get(name);
  if (!panel) return;
  panel.term.dispose();
  panel.node.remove();
  panels.delete(name);
}

// Agents

function showAgent(agent) {
  // Agents are always shown, in the user's own panes too.
  const panel = panelFor(agent.name, { backend: agent.users_pane ? "user_tmux" : "", cwd: agent.cwd });
  panel.kind = agent.kind;
  setState(panel, agent.state, agent.waiting);
  panel.meta.textContent = `${agent.kind} · ${agent.cwd || panel.cwd} · ${agent.state}`;
}

function setState(panel, state, waiting) {
  panel.state = state;
  panel.node.className = panel.node.className.replace(/\bstate-\S+/g, "").trim() + ` state-${state}`;
  panel.question.hidden = state !== "waiting";
  // The same prompt keeps its buttons (a person may be about to click one).
  const prompt = state === "waiting" && waiting ? JSON.stringify({ ...waiting, shown_ms: 0 }) : "";
  if (prompt !== panel.prompt) {
    panel.prompt = prompt;
    panel.question.replaceChildren();
  }
  if (state === "waiting" && waiting && panel.question.childElementCount === 0) {
    const text = waiting.question || `waiting for ${waiting.kind}`;
    panel.question.append(el("div", { "data-testid": "question" }, text));
    const answer = (args) => call("agent_answer", { agent: panel.name, seen: waiting.prompt_id, ...args });
    // Tagged with the panel: the notification of a wait whose question is drawn later is
    // replaced, not repeated.
    notify(`${panel.name} waits`, text, panel.name);
    if (waiting.kind === "permission") {
      panel.question.append(
        el("button", { "data-testid": "approve", onclick: () => answer({ action: "approve" }) }, "Approve"),
        el("button", { "data-testid": "deny", onclick: () => answer({ action: "deny" }) }, "Deny"));
    } else {
      for (const option of waiting.options || []) {
        panel.question.append(el("button", { onclick: () => answer({ action: "choose", option: option.number }) }, `${option.number}. ${option.label}`));
      }
    }
  }
  showAttention();
  applyFilter();
}

/// The count of what waits for a person (agents at a prompt, approvals) in the header and
/// the page title.
function showAttention() {
  const waitingCount = [...panels.values()].filter((p) => p.state === "waiting").length + approvals.length;
  $("attention").hidden = waitingCount === 0;
  $("attention").textContent = `${waitingCount} waiting`;
  document.title = waitingCount ? `(${waitingCount}) drydock` : "drydock";
}

// Browser notifications, once the person allowed them.

const notifications = [];

function notify(title, body, tag) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  new Notification(title, { body, tag });
  notifications.push({ title, body, tag });
}

function offerNotifications() {
  $("notify").hidden = !("Notification" in window) || Notification.permission !== "default";
}
$("notify").addEventListener("click", async () => {
  await Notification.requestPermission();
  offerNotifications();
});
offerNotifications();

// Approvals: requests (agent_spawn) that wait for a person.

let approvals = [];

function showApprovals(pending) {
  const known = new Set(approvals.map((approval) => approval.id));
  for (const approval of pending) {
    if (!known.has(approval.id)) notify(`start ${approval.kind} as ${approval.name}?`, approval.prompt, `approval-${approval.id}`);
  }
  approvals = pending;
  $("approvals").hidden = pending.length === 0;
  const decide = (approval, approve) => ask({ type: "decide", approval: approval.id, approve }).catch((e) => notice(e.message));
  $("approval-list").replaceChildren(...pending.map((approval) => el("li", { "data-approval": approval.id },
    el("b", {}, `${approval.action}: ${approval.kind}`), ` as ${approval.name} in ${approval.cwd}`,
    el("div", { class: "meta" }, approval.prompt),
    el("button", { "data-testid": "accept", onclick: () => decide(approval, true) }, "Accept"),
    el("button", { "data-testid": "decline", onclick: () => decide(approval, false) }, "Decline"))));
  showAttention();
}

async function agentChanged(change) {
  const panel = panels.get(change.agent);
  if (!panel) return;
  if (change.state === "waiting") {
    const listed = await call("agent_list", { agent: change.agent }).catch(() => null);
    if (listed) return showAgent(listed.agents[0]);
  }
  panel.kind = change.kind;
  setState(panel, change.state, null);
  panel.meta.textContent = `${change.kind} · ${panel.cwd} · ${change.state}`;
}

// Queue

async function refreshQueue() {
  let failure = null;
  const listed = await call("task_list").catch((e) => { failure = e.message; return null; });
  if (!listed) return queueUnreachable(failure);
  const queue = listed.queue;
  $("queue-status").classList.remove("unreachable");
  const held = (queue.held || []).map((why) => ` · HELD: ${why}`).join("");
  $("queue-status").textContent = `${queue.mode}, ${queue.running}/${queue.max_concurrent} running, ${queue.queued} queued${held}`;
  $("queue-mode").value = queue.mode;
  $("queue-max").value = queue.max_concurrent;
  $("hosts").replaceChildren(...(queue.hosts || []).map(hostLine));
  $("tasks").replaceChildren(...listed.tasks.slice().reverse().map(taskLine));
  $("spending").textContent = spendingToday(listed.tasks);
}

/// What the listed tasks (a team's, on a shared queue) that started today (this browser's
/// day) spent, in all and per project.
function spendingToday(tasks) {
  const today = new Date().toDateString();
  const projects = new Map();
  const all = { tokens: 0, usd: 0, unpriced: false };
  for (const task of tasks) {
    if (task.tokens == null || !task.started_at_ms) continue;
    if (new Date(task.started_at_ms).toDateString() !== today) continue;
    const name = task.project_path.split("/").filter(Boolean).pop() || task.project_path;
    const project = projects.get(name) || { tokens: 0, usd: 0, unpriced: false };
    for (const sum of [project, all]) {
      sum.tokens += task.tokens;
      if (task.cost_usd == null) sum.unpriced = true; else sum.usd += task.cost_usd;
    }
    projects.set(name, project);
  }
  if (!projects.size) return "";
  const said = (sum) => `${sum.tokens.toLocaleString("en")} tokens, $${sum.usd.toFixed(2)}${sum.unpriced ? " + unknown prices" : ""}`;
  const each = [...projects].map(([name, sum]) => `${name}: ${said(sum)}`);
  return `spent today: ${said(all)} · ${each.join(" · ")}`;
}

/// The queue's database does not answer: the status says so (the tasks shown are the last
/// ones read), until it answers again.
function queueUnreachable(why) {
  $("queue-status").classList.add("unreachable");
  $("queue-status").textContent = `unreachable: ${why || "the task queue does not answer"}`;
}

/// A host of a team's shared queue: up or down, its load, and its terminals (its own
/// dashboard, opened through a one-time login this host asks the queue for).
function hostLine(host) {
  const load = host.cap ? `${host.running.length}/${host.cap}` : `${host.running.length}`;
  const state = host.up ? "up" : `down, last seen ${Math.round(host.last_seen_ms_ago / 1000)} s ago`;
  return el("li", { "data-host": host.name },
    el("span", { class: `host-state ${host.up ? "up" : "down"}` }, host.name), ` ${state} · ${load} running · ${host.agents.join(", ")} `,
    host.up ? el("a", { href: `/hosts/${encodeURIComponent(host.name)}/open`, target: "_blank", "data-testid": "host-open" }, "terminals") : "");
}

function taskLine(task) {
  const actions = [];
  const act = (tool, args = {}) => call(tool, { task_id: task.id, ...args }).then(refreshQueue, (e) => notice(e.message));
  if (task.state === "queued") actions.push(el("button", { onclick: () => act("task_start") }, "start"));
  if (task.state === "queued" || task.state === "running") actions.push(el("button", { onclick: () => act("task_cancel") }, "cancel"));
  if (task.state === "failed" || task.state === "cancelled" || task.state === "lost") actions.push(el("button", { onclick: () => act("task_retry") }, "retry"));
  const change = task.change;
  const line = el("li", { "data-task": task.id });
  if (change) {
    actions.push(el("button", { "data-testid": "change", onclick: () => toggleChange(line, task.id) }, "change"));
    if (change.disposition === "open") {
      actions.push(el("button", { "data-testid": "merge", onclick: () => act("task_merge") }, "merge"));
      actions.push(armed(el("button", { "data-testid": "discard" }, "discard"), () => act("task_discard")));
    }
  }
  line.append(
    el("span", { class: `task-state ${task.state}` }, task.state), " ", task.title, " ",
    task.host ? el("span", { class: "meta", "data-testid": "task-host" }, `on ${task.host} `) : "",
    task.confinement ? el("span", { class: "meta", "data-testid": "task-confinement", title: task.confinement },
      task.confinement.startsWith("bubblewrap") ? "sandboxed " : "unconfined ") : "",
    task.attention ? el("span", { class: "needs" }, `needs a person: ${task.attention} `) : "",
    task.result ? el("div", { class: "meta" }, task.result) : "",
    change ? el("div", { class: `meta change checks-${change.checks}` },
      `${change.branch}: ${change.files} file(s) +${change.insertions} −${change.deletions} · checks ${change.checks} · ${change.disposition}`) : "",
    task.landing ? el("div", { class: `meta landing`, "data-testid": "task-landing" }, task.landing) : "",
    task.usage ? el("div", { class: task.usage.includes("NEAR ITS BUDGET") ? "needs" : "meta", "data-testid": "task-usage" }, task.usage) : "",
    ...(task.collisions || []).map((collision) =>
      el("div", { class: collision.startsWith("likely conflict") ? "needs" : "meta", "data-testid": "task-forecast" }, `forecast: ${collision}`)),
    task.overlaps_with && task.overlaps_with.length
      ? el("div", { class: "needs", "data-testid": "overlap" }, `changed the same files as ${task.overlaps_with.join(", ")}`) : "",
    ...actions);
  if (openChanges.has(task.id)) toggleChange(line, task.id);
  return line;
}

/// A destructive button acts on a second click within five seconds (no dialog in the page).
function armed(button, action) {
  const label = button.textContent;
  let timer = null;
  button.addEventListener("click", () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
      return action();
    }
    button.textContent = `${label}: click again`;
    timer = setTimeout(() => { timer = null; button.textContent = label; }, 5000);
  });
  return button;
}

/// The tasks whose change is shown, kept open when the queue is drawn again.
const openChanges = new Set();

/// Shows (or hides) a task's change: its checks, what it would conflict with, its files and
/// its diff.
async function toggleChange(line, id) {
  const shown = line.querySelector(".task-change");
  if (shown) {
    shown.remove();
    openChanges.delete(id);
    return;
  }
  openChanges.add(id);
  const report = await call("task_show", { task_id: id }).catch((e) => notice(e.message));
  const review = report && report.task.review;
  if (!review || line.querySelector(".task-change")) return;
  const facts = [];
  const checks = review.checks;
  if (checks.state === "done") for (const r of checks.results) facts.push(`${r.tool}: ${r.status} — ${r.summary}`);
  else facts.push(`checks: ${checks.state}${checks.why ? ` (${checks.why})` : ""}`);
  if (report.target) facts.push(report.target.files.length ? `conflicts with ${report.target.into} in ${report.target.files.join(", ")}` : `merges cleanly into ${report.target.into}`);
  for (const overlap of report.overlaps || []) {
    facts.push(`task ${overlap.task_id} changed ${overlap.files.join(", ")} too: ${overlap.conflicts.length ? `conflicts in ${overlap.conflicts.join(", ")}` : "no conflict"}`);
  }
  for (const note of review.notes || []) facts.push(note);
  const diff = el("pre", { class: "detail diff" });
  for (const text of review.diff.split("\n")) {
    const kind = text.startsWith("+") && !text.startsWith("+++") ? "add" : text.startsWith("-") && !text.startsWith("---") ? "del" : text.startsWith("@@") ? "hunk" : "";
    diff.append(el("span", { class: kind }, `${text}\n`));
  }
  if (review.diff_cut) diff.append(el("span", { class: "hunk" }, "… (the diff goes on: task_show has its files)\n"));
  line.append(el("div", { class: "task-change" },
    ...facts.map((fact) => el("div", { class: "meta" }, fact)),
    el("div", { class: "meta" }, review.files.map((f) => `${f.status} ${f.path}`).join(" · ")),
    diff));
}

$("add-task").addEventListener("submit", async (submitted) => {
  submitted.preventDefault();
  const form = new FormData(submitted.target);
  const task = { title: form.get("title"), project_path: form.get("project_path"), agent: form.get("agent") };
  if (form.get("description")) task.description = form.get("description");
  try {
    await call("task_add", { tasks: [task] });
    submitted.target.reset();
  } catch (error) {
    notice(error.message);
  }
  refreshQueue();
});
$("queue-apply").addEventListener("click", () =>
  call("queue_configure", { mode: $("queue-mode").value, max_concurrent: Number($("queue-max").value) }).then(refreshQueue, (e) => notice(e.message)));
// The next task auto mode would take: the highest priority, then the oldest.
$("queue-next").addEventListener("click", async () => {
  const listed = await call("task_list", { state: "queued" }).catch((e) => notice(e.message));
  const next = listed && listed.tasks.slice().sort((a, b) => b.priority - a.priority || a.created_at_ms - b.created_at_ms)[0];
  if (!next) return notice("no queued task");
  call("task_start", { task_id: next.id }).then(refreshQueue, (e) => notice(e.message));
});
$("queue-clear").addEventListener("click", () => call("queue_clear").then(refreshQueue));

/// Shows why an action did not work, under the queue's form.
function notice(message) {
  $("notice").textContent = message;
  $("notice").hidden = false;
}

// The tool feed

function toolCall(event) {
  const id = `call-${event.call_id}`;
  let line = document.getElementById(id);
  if (!line) {
    line = el("li", { id, "data-tool": event.tool, onclick: () => showResult(line, event.call_id) });
    $("calls").prepend(line);
    while ($("calls").children.length > 500) $("calls").lastChild.remove();
  }
  const status = event.type === "tool_call_started" ? "running" : (event.status.status || event.status.outcome);
  const took = event.duration_ms === undefined ? "" : ` ${event.duration_ms} ms`;
  line.className = `status-${event.status ? event.status.outcome : "running"}`;
  line.dataset.arguments = event.arguments;
  line.dataset.message = (event.status && event.status.message) || "";
  line.dataset.status = `${status}${took}`;
  line.dataset.who = ` · ${event.client || "?"}${event.project ? " · " + event.project : ""}`;
  showCallLine(line);
}

/// A call that became an MCP task: its task id, then its progress, on its line until it ends.
function toolCallTask(event) {
  const line = document.getElementById(`call-${event.call_id}`);
  if (!line) return;
  line.dataset.task = event.task_id;
  if (event.message) line.dataset.progress = event.message;
  showCallLine(line);
}

function showCallLine(line) {
  const task = line.dataset.task ? ` · MCP task ${line.dataset.task.slice(0, 8)}` : "";
  const running = line.className === "status-running";
  const progress = running && line.dataset.progress ? ` · ${line.dataset.progress}` : "";
  line.replaceChildren(el("b", {}, line.dataset.tool), ` ${line.dataset.status}${task}${progress}${line.dataset.who}`);
  applyFeedFilter(line);
}

/// Opens (or closes) a call's detail: its arguments and what it returned.
async function showResult(line, callId) {
  const open = line.querySelector("pre");
  if (open) return open.remove();
  const detail = el("pre", { class: "detail", "data-testid": "result" }, `arguments: ${line.dataset.arguments}\n`);
  line.append(detail);
  if (line.dataset.message) detail.append(`error: ${line.dataset.message}\n`);
  if (line.className === "status-running") return detail.append("still running");
  try {
    const kept = await ask({ type: "call_result", call_id: callId });
    detail.append(kept.kept === "whole"
      ? `result: ${JSON.stringify(kept.result, null, 2)}`
      : `result (${kept.bytes} bytes, the first shown): ${kept.head}…`);
  } catch (error) {
    detail.append(error.message);
  }
}

/// A person's answer to an approval, on the feed with the calls.
function approvalLine(event) {
  const line = el("li", { "data-tool": event.approved ? "approve" : "decline" },
    el("b", {}, event.approved ? "approved" : "declined"), ` ${event.action} ${event.kind} as ${event.name} · ${event.by}`);
  $("calls").prepend(line);
  applyFeedFilter(line);
}

function applyFeedFilter(line) {
  const wanted = $("feed-filter").value.toLowerCase();
  for (const item of line ? [line] : $("calls").children) item.hidden = wanted !== "" && !item.textContent.toLowerCase().includes(wanted);
}
$("feed-filter").addEventListener("input", () => applyFeedFilter());

// The project memory: a project's open and recently fixed problems

const problemProjects = new Set();
const CHECKS = ["compile", "type_check", "lint", "test"];

/// A project a build tool ran on: one more choice, shown at once when it is the first.
function projectSeen(project) {
  if (problemProjects.has(project)) return;
  problemProjects.add(project);
  $("problem-project").append(el("option", { value: project }, project));
  if (problemProjects.size === 1) showProblems();
}

function problemLine(hit) {
  const where = hit.file ? ` · ${hit.file}${hit.line ? ":" + hit.line : ""}` : "";
  const line = el("li", { class: `problem-${hit.state}`, "data-problem": hit.id },
    el("b", {}, hit.state), ` ${hit.kind} ${hit.code || hit.test || ""} ${hit.message}${where} · seen ${hit.seen}×`);
  if (hit.fix) {
    line.append(el("details", {}, el("summary", {}, `fixed by changing ${hit.fix.files.join(", ")}`),
      el("pre", { class: "detail", "data-testid": "fix" }, hit.fix.diff)));
  }
  return line;
}

async function showProblems() {
  const project = $("problem-project").value;
  if (!project) return;
  try {
    const report = await ask({ type: "problems", project });
    const lines = [...report.open, ...report.fixed].map(problemLine);
    $("problem-list").replaceChildren(...(lines.length ? lines : [el("li", {}, "no problem seen")]));
  } catch (error) {
    $("problem-list").replaceChildren(el("li", {}, error.message));
  }
}
$("problem-project").addEventListener("change", showProblems);

// Events

let lastSeq = 0;

function event(event) {
  // The history and the live feed overlap by a few events: each is shown once.
  if (event.seq <= lastSeq) return;
  lastSeq = event.seq;
  switch (event.type) {
    case "tool_call_started":
      return toolCall(event);
    case "tool_call_task":
      return toolCallTask(event);
    case "tool_call_finished":
      if (CHECKS.includes(event.tool) && event.project) {
        projectSeen(event.project);
        if ($("problem-project").value === event.project) showProblems();
      }
      return toolCall(event);
    case "terminal_session_created":
      // The user's own panes wait in the picker until the person adds them.
      if (event.backend === "user_tmux") return;
      return panelFor(event.session, { backend: event.backend });
    case "terminal_session_renamed":
      removePanel(event.from);
      return panelFor(event.to);
    case "terminal_session_exited": {
      const panel = panels.get(event.session);
      if (panel) setState(panel, event.exit_code === 0 ? "done" : "exited", null);
      return;
    }
    case "agent_state":
      return agentChanged(event);
    case "task_changed":
    case "queue_configured":
    case "queue_changed":
      return refreshQueue();
    case "queue_health":
      return event.answering ? refreshQueue() : queueUnreachable(event.why);
    case "approval_decided":
      return approvalLine(event);
  }
}

// Layout, filter, keys

/// Panels in `columns` columns; one row fills the page, more rows are half its height.
function applyLayout(columns, rows) {
  $("grid").style.gridTemplateColumns = `repeat(${columns}, minmax(0, 1fr))`;
  $("grid").style.gridAutoRows = rows === 1 ? "calc(100vh - 54px)" : "calc((100vh - 60px) / 2)";
  fitAll();
}
$("layout").addEventListener("change", () => {
  const columns = Number($("layout").value);
  $("columns").value = columns;
  applyLayout(columns, columns === 1 ? 1 : 2);
});
$("columns").addEventListener("change", () => {
  const columns = Math.min(8, Math.max(1, Number($("columns").value) || 1));
  applyLayout(columns, columns === 1 ? 1 : 2);
});

function applyFilter() {
  const wanted = $("filter").value.toLowerCase();
  for (const panel of panels.values()) {
    const text = `${panel.name} ${panel.state} ${panel.kind} ${panel.cwd}`.toLowerCase();
    panel.node.hidden = wanted !== "" && !text.includes(wanted);
  }
}
$("filter").addEventListener("input", applyFilter);

document.addEventListener("keydown", (key) => {
  if (!key.altKey || !["ArrowLeft", "ArrowRight"].includes(key.key)) return;
  const visible = [...panels.values()].filter((p) => !p.node.hidden);
  const at = visible.findIndex((p) => p.node.contains(document.activeElement));
  const next = visible[(at + (key.key === "ArrowRight" ? 1 : visible.length - 1)) % visible.length];
  if (next) next.term.focus();
  key.preventDefault();
});

// For tests and scripts: the text of a panel's terminal, read from xterm's buffer.
window.drydock = {
  ready: false,
  errors,
  terminalText(name) {
    const panel = panels.get(name);
    if (!panel) return null;
    const buffer = panel.term.buffer.active;
    const lines = [];
    for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i).translateToString(true));
    return lines.join("\n");
  },
  panels: () => [...panels.keys()],
  /// The xterm.js Terminal of a panel (benchmarks drive it as a person would).
  terminal: (name) => panels.get(name)?.term,
  call,
  notifications,
};

connect();
