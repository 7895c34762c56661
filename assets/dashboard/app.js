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
    } else if (data.type === "missed") {
      refresh();
    }
  };
}

/// Calls a drydock tool; resolves with its structured result.
function call(tool, args = {}) {
  const id = nextCall++;
  socket.send(JSON.stringify({ type: "call", id, tool, arguments: args }));
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

async function refresh() {
  const [terminals, agents] = await Promise.all([call("terminal_list"), call("agent_list").catch(() => ({ agents: [] }))]);
  for (const session of terminals.sessions) panelFor(session.name, session);
  for (const agent of agents.agents) showAgent(agent);
  await refreshQueue();
}

// Terminals

function panelFor(name, info = {}) {
  let panel = panels.get(name);
  if (panel) return panel;
  const users = info.backend === "user_tmux" || name.startsWith("tmux:");
  const term = new Terminal({ fontFamily: "DejaVu Sans Mono, monospace", fontSize: 12, scrollback: 5000, convertEol: false });
  const box = el("div", { class: "term" });
  const meta = el("span", { class: "meta" }, info.cwd || "");
  const question = el("div", { class: "question", hidden: "" });
  const buttons = [
    el("button", { "data-testid": "fullscreen", onclick: () => node.classList.toggle("fullscreen") }, "full"),
    el("button", { "data-testid": "interrupt", onclick: () => call("terminal_manage", { session: name, action: "interrupt" }) }, "interrupt"),
  ];
  if (!users) buttons.push(el("button", { "data-testid": "stop", onclick: () => call("terminal_manage", { session: name, action: "kill" }) }, "stop"));
  const node = el("div", { class: "panel", "data-session": name, tabindex: "0" },
    el("div", { class: "panel-header" }, el("span", { class: "name" }, name), meta, ...buttons), question, box);
  $("grid").append(node);
  term.open(box);
  term.onData((data) => socket.send(JSON.stringify({ type: "input", session: name, data })));
  panel = { name, term, node, meta, question, users, state: "", kind: "", cwd: info.cwd || "" };
  panels.set(name, panel);
  if (socket && socket.readyState === WebSocket.OPEN) watch(panel);
  applyFilter();
  return panel;
}

function watch(panel) {
  socket.send(JSON.stringify({ type: "watch", session: panel.name }));
}

function screen(header) {
  const panel = panels.get(header.session) || panelFor(header.session);
  for (const [channel, known] of channels) if (known === panel) channels.delete(channel);
  channels.set(header.channel, panel);
  if (panel.term.rows !== header.rows || panel.term.cols !== header.cols) panel.term.resize(header.cols, header.rows);
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
  const panel = panels.get(agent.name);
  if (!panel) return;
  panel.kind = agent.kind;
  setState(panel, agent.state, agent.waiting);
  panel.meta.textContent = `${agent.kind} · ${agent.cwd || panel.cwd} · ${agent.state}`;
}

function setState(panel, state, waiting) {
  panel.state = state;
  panel.node.className = panel.node.className.replace(/\bstate-\S+/g, "").trim() + ` state-${state}`;
  panel.question.replaceChildren();
  panel.question.hidden = state !== "waiting";
  if (state === "waiting" && waiting) {
    const text = waiting.question || `waiting for ${waiting.kind}`;
    panel.question.append(el("div", { "data-testid": "question" }, text));
    const answer = (args) => call("agent_answer", { agent: panel.name, seen: waiting.prompt_id, ...args });
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
  const waitingCount = [...panels.values()].filter((p) => p.state === "waiting").length;
  $("attention").hidden = waitingCount === 0;
  $("attention").textContent = `${waitingCount} waiting`;
  document.title = waitingCount ? `(${waitingCount}) drydock` : "drydock";
  applyFilter();
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
  const listed = await call("task_list").catch(() => null);
  if (!listed) return;
  const queue = listed.queue;
  $("queue-status").textContent = `${queue.mode}, ${queue.running}/${queue.max_concurrent} running, ${queue.queued} queued`;
  $("queue-mode").value = queue.mode;
  $("queue-max").value = queue.max_concurrent;
  $("tasks").replaceChildren(...listed.tasks.slice().reverse().map(taskLine));
}

function taskLine(task) {
  const actions = [];
  if (task.state === "queued") actions.push(el("button", { onclick: () => call("task_start", { task_id: task.id }).then(refreshQueue) }, "start"));
  if (task.state === "queued" || task.state === "running") actions.push(el("button", { onclick: () => call("task_cancel", { task_id: task.id }).then(refreshQueue) }, "cancel"));
  if (task.state === "failed" || task.state === "cancelled") actions.push(el("button", { onclick: () => call("task_retry", { task_id: task.id }).then(refreshQueue) }, "retry"));
  return el("li", { "data-task": task.id },
    el("span", { class: `task-state ${task.state}` }, task.state), " ", task.title, " ",
    task.attention ? el("span", { class: "needs" }, `needs a person: ${task.attention} `) : "",
    task.result ? el("div", { class: "meta" }, task.result) : "",
    ...actions);
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
    line = el("li", { id, "data-tool": event.tool, onclick: () => line.querySelector("pre")?.toggleAttribute("hidden") });
    $("calls").prepend(line);
    while ($("calls").children.length > 500) $("calls").lastChild.remove();
  }
  const status = event.type === "tool_call_started" ? "running" : (event.status.status || event.status.outcome);
  const took = event.duration_ms === undefined ? "" : ` ${event.duration_ms} ms`;
  line.className = `status-${event.status ? event.status.outcome : "running"}`;
  line.replaceChildren(
    el("b", {}, event.tool), ` ${status}${took} · ${event.client || "?"}${event.project ? " · " + event.project : ""}`,
    el("pre", { class: "detail", hidden: "" }, event.arguments + (event.status && event.status.message ? `\n${event.status.message}` : "")));
  applyFeedFilter(line);
}

function applyFeedFilter(line) {
  const wanted = $("feed-filter").value.toLowerCase();
  for (const item of line ? [line] : $("calls").children) item.hidden = wanted !== "" && !item.textContent.toLowerCase().includes(wanted);
}
$("feed-filter").addEventListener("input", () => applyFeedFilter());

// Events

let lastSeq = 0;

function event(event) {
  // The history and the live feed overlap by a few events: each is shown once.
  if (event.seq <= lastSeq) return;
  lastSeq = event.seq;
  switch (event.type) {
    case "tool_call_started":
    case "tool_call_finished":
      return toolCall(event);
    case "terminal_session_created":
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
      return refreshQueue();
  }
}

// Layout, filter, keys

$("layout").addEventListener("change", () => {
  $("grid").className = `grid cols-${$("layout").value}`;
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
};

connect();
