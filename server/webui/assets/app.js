// troupe's web page: the chat (streaming through /v1/chat/completions,
// images attached as OpenAI image_url parts with data: URLs, the model
// picked from /v1/models when the server serves several) and the live view
// of the runtime (the /v1/live event stream). Both send the API key, when
// one is entered, as "Authorization: Bearer KEY". State kept in
// localStorage under "troupe.": the key, the settings, the model picked,
// the conversations (their images too, while the storage has room).
'use strict';

const $ = id => document.getElementById(id);

const store = {
  get(key, fallback) {
    try {
      const v = localStorage.getItem('troupe.' + key);
      return v === null ? fallback : JSON.parse(v);
    } catch (e) {
      return fallback;
    }
  },
  set(key, value) { localStorage.setItem('troupe.' + key, JSON.stringify(value)); },
};

function authHeaders(json) {
  const h = {};
  if (json) h['Content-Type'] = 'application/json';
  const key = $('api-key').value.trim();
  if (key) h.Authorization = 'Bearer ' + key;
  return h;
}

// readSSE reads a server-sent event stream from a fetch response and calls
// onEvent(name, data) for each event, until the stream ends.
async function readSSE(resp, onEvent) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        else if (line.startsWith('event:')) name = line.slice(6).trim();
      }
      if (data.length) onEvent(name, data.join('\n'));
    }
  }
}

// apiError returns the message of an error response.
async function apiError(resp) {
  try {
    const body = await resp.json();
    if (body.error && body.error.message) return resp.status + ': ' + body.error.message;
  } catch (e) { /* not JSON */ }
  return 'HTTP ' + resp.status;
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// ---- tabs, key, models

function showTab(name) {
  $('chat-view').hidden = name !== 'chat';
  $('live-view').hidden = name !== 'live';
  $('tab-chat').classList.toggle('active', name === 'chat');
  $('tab-live').classList.toggle('active', name === 'live');
  store.set('tab', name);
}

let models = []; // /v1/models' entries

// modelStatus is an entry's status as the model manager lists it
// (llama-server's {value: "loaded" | "loading" | "unloaded"}); '' for a
// server of one model, which lists none.
function modelStatus(m) { return m.status && m.status.value ? m.status.value : ''; }

// loadModels reads /v1/models: several models fill the picker (each with
// its status; the one picked before stays picked), one is shown by name.
async function loadModels() {
  try {
    const resp = await fetch('/v1/models', { headers: authHeaders(false) });
    if (!resp.ok) {
      $('model').textContent = resp.status === 401 ? '(enter the API key)' : '';
      return;
    }
    models = (await resp.json()).data || [];
  } catch (e) {
    $('model').textContent = '(server unreachable)';
    return;
  }
  const sel = $('model-select');
  sel.hidden = models.length < 2;
  if (models.length >= 2) {
    const want = sel.value || store.get('model', '');
    sel.textContent = '';
    for (const m of models) {
      const o = document.createElement('option');
      o.value = m.id;
      o.textContent = m.id + (modelStatus(m) ? ' (' + modelStatus(m) + ')' : '');
      sel.append(o);
    }
    const loaded = models.find(m => modelStatus(m) === 'loaded');
    if (models.some(m => m.id === want)) sel.value = want;
    else if (loaded) sel.value = loaded.id;
    if (!controller) renderMessages(); // the replies' notes name their models
  }
  showModel();
}

// chosenModel is the name the chat sends as "model": the one picked, or
// the only one served (undefined until /v1/models answers).
function chosenModel() {
  if (models.length >= 2) return $('model-select').value;
  return models.length ? models[0].id : undefined;
}

// showModel describes the chosen model beside the picker (or in its place).
function showModel() {
  const m = models.find(m => m.id === chosenModel());
  if (!m) {
    $('model').textContent = '';
    return;
  }
  const parts = [];
  if (models.length < 2) parts.push(m.id + (modelStatus(m) ? ' (' + modelStatus(m) + ')' : ''));
  if (m.max_model_len) parts.push('context ' + m.max_model_len);
  if ((m.capabilities || []).includes('vision')) parts.push('takes images');
  $('model').textContent = parts.join(' · ');
}

// ---- images attached to the next message

let attached = []; // data: URLs, in the order they were added

function readDataURL(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

// attach adds image files (pasted, dropped or picked) to the next message.
// The server decodes and checks them: a file it cannot read, or a model
// without a projector, is its 400, shown on the reply.
async function attach(files) {
  for (const f of files) {
    if (!f.type.startsWith('image/')) {
      $('chat-status').textContent = (f.name || 'the pasted item') + ' is not an image';
      continue;
    }
    try {
      attached.push(await readDataURL(f));
    } catch (e) {
      $('chat-status').textContent = 'reading ' + (f.name || 'the image') + ': ' + e.message;
    }
  }
  renderAttachments();
}

// deleteButton is a × button titled title that calls onclick.
function deleteButton(title, onclick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'delete';
  b.textContent = '×';
  b.title = title;
  b.onclick = onclick;
  return b;
}

function renderAttachments() {
  const box = $('attachments');
  box.textContent = '';
  box.hidden = attached.length === 0;
  attached.forEach((url, i) => {
    const fig = document.createElement('figure');
    const img = document.createElement('img');
    img.src = url;
    img.alt = 'image ' + (i + 1);
    const del = deleteButton('Remove', () => {
      attached.splice(i, 1);
      renderAttachments();
    });
    fig.append(img, del);
    box.append(fig);
  });
}

// apiContent is a message's content as the chat route takes it: its text,
// or, with images, the images' image_url parts and then the text's part.
function apiContent(m) {
  if (!m.images || !m.images.length) return m.content;
  const parts = m.images.map(url => ({ type: 'image_url', image_url: { url } }));
  if (m.content) parts.push({ type: 'text', text: m.content });
  return parts;
}

// ---- chat

let convs = store.get('convs', []);
let currentID = store.get('current', null);
let controller = null; // the request streaming now

function newConv() {
  const c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 6), title: 'New chat', system: $('system').value, messages: [] };
  convs.unshift(c);
  currentID = c.id;
  saveConvs();
  renderConvs();
  renderMessages();
}

function currentConv() {
  let c = convs.find(c => c.id === currentID);
  if (!c) {
    newConv();
    c = convs[0];
  }
  return c;
}

// saveConvs keeps the conversations; when the storage is full (images are
// large), without their images, each message noting how many it lost.
function saveConvs() {
  try {
    store.set('convs', convs);
  } catch (e) {
    const textOnly = convs.map(c => ({ ...c, messages: c.messages.map(m => !m.images ? m :
      { ...m, images: undefined, imagesDropped: m.images.length + (m.imagesDropped || 0) }) }));
    try {
      store.set('convs', textOnly);
    } catch (e2) {
      $('chat-status').textContent = 'the conversations are not saved: ' + e2.message;
    }
  }
  store.set('current', currentID);
}

function renderConvs() {
  const ul = $('conv-list');
  ul.textContent = '';
  for (const c of convs) {
    const li = document.createElement('li');
    li.classList.toggle('active', c.id === currentID);
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'open';
    open.textContent = c.title;
    open.title = c.title;
    open.onclick = () => {
      if (controller) return;
      currentID = c.id;
      $('system').value = c.system || '';
      saveConvs();
      renderConvs();
      renderMessages();
    };
    const del = deleteButton('Delete', () => {
      if (controller && c.id === currentID) return;
      convs = convs.filter(x => x !== c);
      if (c.id === currentID) currentID = convs.length ? convs[0].id : null;
      saveConvs();
      if (!currentID) newConv();
      $('system').value = currentConv().system || '';
      renderConvs();
      renderMessages();
    });
    li.append(open, del);
    ul.append(li);
  }
}

function messageElement(msg) {
  const div = document.createElement('div');
  div.className = 'msg ' + msg.role;
  const body = document.createElement('div');
  body.className = 'body';
  const note = document.createElement('div');
  note.className = 'note';
  if (msg.images && msg.images.length) {
    const imgs = document.createElement('div');
    imgs.className = 'images';
    msg.images.forEach((url, i) => {
      const img = document.createElement('img');
      img.src = url;
      img.alt = 'image ' + (i + 1);
      imgs.append(img);
    });
    div.append(imgs);
  }
  div.append(body, note);
  fillMessage(div, msg);
  return div;
}

function fillMessage(div, msg) {
  const body = div.querySelector('.body');
  if (msg.reasoning) { // reasoning_content: shown apart, folded once the answer starts
    let think = div.querySelector('.thinking');
    if (!think) {
      think = document.createElement('details');
      think.className = 'thinking';
      think.append(document.createElement('summary'), document.createElement('div'));
      think.querySelector('summary').textContent = 'thinking';
      think.open = true;
      div.insertBefore(think, body);
    }
    think.lastElementChild.textContent = msg.reasoning;
    if (msg.content && !think.dataset.folded) {
      think.open = false;
      think.dataset.folded = '1';
    }
  }
  if (msg.role === 'assistant') body.innerHTML = renderMarkdown(msg.content); // escaped by renderMarkdown
  else body.textContent = msg.content;
  const notes = [];
  if (msg.imagesDropped) notes.push(msg.imagesDropped + (msg.imagesDropped === 1 ? ' image' : ' images') + ' not kept (the browser\'s storage is full)');
  if (msg.model && models.length >= 2) notes.push(msg.model);
  if (msg.finish === 'stopped') notes.push('stopped');
  else if (msg.finish === 'length') notes.push('max tokens reached');
  if (msg.usage) notes.push(msg.usage.completion_tokens + ' tokens');
  if (msg.error) notes.push('error: ' + msg.error);
  div.querySelector('.note').textContent = notes.join(' · ');
  div.classList.toggle('error', !!msg.error);
}

function renderMessages() {
  const box = $('messages');
  box.textContent = '';
  for (const m of currentConv().messages) box.append(messageElement(m));
  box.scrollTop = box.scrollHeight;
}

function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').disabled = !busy;
  $('chat-status').textContent = busy ? 'generating…' : '';
}

async function send(text, images) {
  const conv = currentConv();
  conv.system = $('system').value;
  if (conv.messages.length === 0) conv.title = text.slice(0, 48) || 'Image';
  const msg = { role: 'user', content: text };
  if (images.length) msg.images = images;
  conv.messages.push(msg);
  const reply = { role: 'assistant', content: '' };
  // A failed reply and the message it answered are not sent again.
  const history = conv.messages.filter((m, i, all) => !m.error && !(all[i + 1] && all[i + 1].error))
    .map(m => ({ role: m.role, content: apiContent(m) }));
  if (conv.system.trim()) history.unshift({ role: 'system', content: conv.system });
  conv.messages.push(reply);
  saveConvs();
  renderConvs();
  renderMessages();
  const div = $('messages').lastElementChild;
  const settings = readSettings();
  const body = { messages: history, stream: true, stream_options: { include_usage: true }, temperature: settings.temperature };
  const model = chosenModel();
  if (model) body.model = model;
  if (settings.maxTokens > 0) body.max_tokens = settings.maxTokens;
  controller = new AbortController();
  setBusy(true);
  let pending = false; // a repaint is scheduled
  const repaint = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      fillMessage(div, reply);
      $('messages').scrollTop = $('messages').scrollHeight;
    });
  };
  try {
    const resp = await fetch('/v1/chat/completions', { method: 'POST', headers: authHeaders(true), body: JSON.stringify(body), signal: controller.signal });
    if (!resp.ok) throw new Error(await apiError(resp));
    await readSSE(resp, (name, data) => {
      if (data === '[DONE]') return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.model) reply.model = chunk.model;
      for (const c of chunk.choices || []) {
        if (c.delta && c.delta.content) reply.content += c.delta.content;
        if (c.delta && c.delta.reasoning_content) reply.reasoning = (reply.reasoning || '') + c.delta.reasoning_content;
        if (c.finish_reason) reply.finish = c.finish_reason;
      }
      if (chunk.usage) reply.usage = chunk.usage;
      repaint();
    });
  } catch (e) {
    if (e.name === 'AbortError') reply.finish = 'stopped';
    else {
      reply.error = e.message;
      controller.abort(); // ends the stream, if one is open
    }
  } finally {
    controller = null;
    setBusy(false);
    saveConvs();
    fillMessage(div, reply);
    if (models.length >= 2) loadModels(); // the statuses changed (a model loaded)
  }
}

function readSettings() {
  const t = parseFloat($('temperature').value);
  const n = parseInt($('max-tokens').value, 10);
  const s = { temperature: Number.isFinite(t) ? t : 0.7, maxTokens: Number.isFinite(n) ? n : 0 };
  store.set('settings', s);
  return s;
}

// ---- live view

const sparkLength = 120;
const series = { tps: [], ttft: [], itl: [] };

function pushPoint(name, v) {
  const s = series[name];
  s.push(v);
  if (s.length > sparkLength) s.shift();
  const max = Math.max(1e-9, ...s.filter(x => x !== null));
  const pts = [];
  const offset = sparkLength - s.length; // the newest point at the right edge
  s.forEach((x, i) => {
    if (x === null) return; // no observation in that interval
    pts.push(((offset + i) * 120 / (sparkLength - 1)).toFixed(1) + ',' + (29 - 28 * x / max).toFixed(1));
  });
  $('spark-' + name).querySelector('polyline').setAttribute('points', pts.join(' '));
}

function fmt(v, digits) { return v === null || v === undefined ? '–' : v.toFixed(digits); }

function cell(tr, id, text) {
  const td = document.createElement('td');
  td.id = id;
  td.textContent = text;
  tr.append(td);
  return td;
}

function kvBar(tr, d) {
  const td = document.createElement('td');
  td.className = 'kv';
  const total = d.blocks_used + d.blocks_cached + d.blocks_free;
  const bar = document.createElement('div');
  bar.className = 'bar';
  for (const [cls, n] of [['used', d.blocks_used], ['cached', d.blocks_cached], ['free', d.blocks_free]]) {
    const seg = document.createElement('span');
    seg.className = cls;
    seg.style.width = (total ? 100 * n / total : 0) + '%';
    bar.append(seg);
  }
  const label = document.createElement('span');
  label.id = 'd' + d.device + '-blocks';
  label.textContent = d.blocks_used + ' / ' + d.blocks_cached + ' / ' + d.blocks_free;
  td.append(bar, label);
  tr.append(td);
}

function onLive(ev) {
  $('live-status').textContent = ev.error ? 'runtime: ' + ev.error : 'live';
  $('live-inflight').textContent = ev.in_flight;
  $('live-tps').textContent = fmt(ev.tokens_per_s, 1);
  $('live-ttft').textContent = ev.ttft_ms === null ? '–' : fmt(ev.ttft_ms, 1) + ' ms';
  $('live-itl').textContent = ev.itl_ms === null ? '–' : fmt(ev.itl_ms, 2) + ' ms';
  pushPoint('tps', ev.tokens_per_s);
  pushPoint('ttft', ev.ttft_ms);
  pushPoint('itl', ev.itl_ms);
  const tbody = $('live-devices').querySelector('tbody');
  tbody.textContent = '';
  let sampled = 0;
  for (const d of ev.devices) {
    sampled += d.tokens_sampled;
    const tr = document.createElement('tr');
    tr.classList.toggle('dead', !!d.dead);
    const p = 'd' + d.device + '-';
    cell(tr, p + 'device', d.device + (d.dead ? ' (stopped)' : ''));
    cell(tr, p + 'running', d.running);
    cell(tr, p + 'waiting', d.waiting);
    cell(tr, p + 'swapped', d.swapped);
    kvBar(tr, d);
    cell(tr, p + 'steps-per-s', fmt(d.steps_per_s, 1));
    cell(tr, p + 'batch-tokens', fmt(d.batch_tokens, 1));
    cell(tr, p + 'batch-seqs', fmt(d.batch_seqs, 1));
    cell(tr, p + 'step-ms', fmt(d.step_ms, 2));
    cell(tr, p + 'tps', fmt(d.tokens_per_s, 1));
    cell(tr, p + 'steps', d.steps);
    cell(tr, p + 'preemptions', d.preemptions);
    tbody.append(tr);
  }
  $('live-sampled').textContent = sampled;
  const cl = ev.cluster;
  $('live-cluster').hidden = !cl;
  if (cl) {
    $('cl-local').textContent = cl.placed_local;
    $('cl-remote').textContent = cl.placed_remote;
    $('cl-overflows').textContent = cl.overflows;
    $('cl-failovers').textContent = cl.failovers;
    $('cl-refused').textContent = cl.refused;
    const mb = $('cl-members').querySelector('tbody');
    mb.textContent = '';
    for (const m of cl.members) {
      const tr = document.createElement('tr');
      cell(tr, '', m.address + (m.self ? ' (this node)' : ''));
      cell(tr, '', m.running);
      cell(tr, '', m.waiting);
      cell(tr, '', (100 * m.kv_cache_usage).toFixed(0) + '%');
      mb.append(tr);
    }
  }
}

let liveController = null;

// liveLoop keeps the /v1/live stream open, reconnecting after a failure.
async function liveLoop() {
  for (;;) {
    liveController = new AbortController();
    try {
      const resp = await fetch('/v1/live', { headers: authHeaders(false), signal: liveController.signal });
      if (!resp.ok) {
        $('live-status').textContent = resp.status === 401 ? 'enter the API key' : await apiError(resp);
      } else {
        await readSSE(resp, (name, data) => { if (name === 'stats') onLive(JSON.parse(data)); });
        $('live-status').textContent = 'disconnected; reconnecting…';
      }
    } catch (e) {
      if (e.name !== 'AbortError') $('live-status').textContent = 'disconnected; reconnecting…';
    }
    if (!liveController.signal.aborted) await sleep(2000);
  }
}

// ---- wiring

function init() {
  $('api-key').value = store.get('key', '');
  $('api-key').addEventListener('change', () => {
    store.set('key', $('api-key').value.trim());
    loadModels();
    if (liveController) liveController.abort(); // reconnect with the new key
  });
  const s = store.get('settings', null);
  if (s) {
    $('temperature').value = s.temperature;
    $('max-tokens').value = s.maxTokens || '';
  }
  $('temperature').addEventListener('change', readSettings);
  $('max-tokens').addEventListener('change', readSettings);
  $('system').value = currentConv().system || '';
  $('system').addEventListener('input', () => {
    currentConv().system = $('system').value;
    saveConvs();
  });
  $('tab-chat').onclick = () => showTab('chat');
  $('tab-live').onclick = () => showTab('live');
  showTab(store.get('tab', 'chat'));
  $('new-conv').onclick = () => { if (!controller) newConv(); };
  $('stop').onclick = () => { if (controller) controller.abort(); };
  $('composer').addEventListener('submit', e => {
    e.preventDefault();
    const text = $('prompt').value.trim();
    if ((!text && !attached.length) || controller) return;
    const images = attached;
    attached = [];
    renderAttachments();
    $('prompt').value = '';
    send(text, images);
  });
  $('prompt').addEventListener('paste', e => {
    const files = [...(e.clipboardData ? e.clipboardData.files : [])].filter(f => f.type.startsWith('image/'));
    if (!files.length) return;
    if (!e.clipboardData.types.includes('text/plain')) e.preventDefault(); // an image alone: nothing to paste as text
    attach(files);
  });
  $('composer').addEventListener('dragover', e => {
    if (e.dataTransfer.types.includes('Files')) e.preventDefault();
  });
  $('composer').addEventListener('drop', e => {
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    attach([...e.dataTransfer.files]);
  });
  $('attach').onclick = () => $('image-input').click();
  $('image-input').addEventListener('change', () => {
    attach([...$('image-input').files]);
    $('image-input').value = '';
  });
  $('model-select').addEventListener('change', () => {
    store.set('model', $('model-select').value);
    showModel();
  });
  $('prompt').addEventListener('keydown', e => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  renderConvs();
  renderMessages();
  loadModels();
  liveLoop();
}

init();
