// The live page's script (served at /ui/app.js): reads the server's stream of frames
// (GET /api/v1/stream, server-sent events; one frame is docs/schema/live-frame.schema.json) and
// redraws the header line, one card per GPU and GPU instance, and the process table.
//
// Rules it keeps: an absent reading (null) shows "N/A" and leaves its bar empty, never a zero bar;
// a lost or skipped entity shows its reason and no bars; text goes in through textContent only;
// styles are set through the CSSOM or classes (the page's CSP forbids inline style attributes).
// For tests, each reading's element carries data-field (its schema name) and data-value (the
// raw number, absent when null), each bar data-bar; body.dataset.seq is the last frame's seq and
// body.dataset.frames the number of frames drawn.
//
// The stream is read with fetch rather than EventSource so that a refusal (HTTP 503 at the
// viewer limit) can show the server's own words; it is retried with a growing delay.
'use strict';

(function () {
  const FORMAT = 'gpulse.live-frame/v1';
  const STREAM_URL = streamUrl();
  const GIB = 1024 * 1024 * 1024;
  const MIB = 1024 * 1024;
  const RETRY_MIN_MS = 1000;
  const RETRY_MAX_MS = 30000;
  const SPARK_W = 100;
  const SPARK_H = 24;

  const body = document.body;
  const cardsEl = document.getElementById('cards');
  const banner = document.getElementById('banner');
  const template = document.getElementById('card-template');
  const procBody = document.querySelector('#procs tbody');
  const procHeads = Array.from(document.querySelectorAll('#procs thead th'), (th) => th.textContent);
  const processNote = document.getElementById('process-note');
  const meta = {};
  for (const el of document.querySelectorAll('[data-meta]')) meta[el.dataset.meta] = el;

  let frames = 0;
  let retryMs = RETRY_MIN_MS;
  let interval = 1;
  let lastData = 0;        // performance.now() of the last bytes from the stream
  let watchdog = 0;

  // Relative to the page (so that a reverse proxy's path prefix is kept), without any user:password@
  // the page was opened with: fetch refuses such URLs, and the browser sends the credentials it
  // authenticated the page with anyway.
  function streamUrl() {
    const url = new URL('api/v1/stream', document.baseURI);
    url.username = '';
    url.password = '';
    return url.href;
  }

  // ---- formatting ----

  const present = (v) => typeof v === 'number' && Number.isFinite(v);
  const oneDecimal = (v) => String(Math.round(v * 10) / 10);
  const orDash = (v) => (v === null || v === undefined || v === '' ? '—' : String(v));

  function bytes(v) {
    if (!present(v)) return '—';
    return v >= GIB ? (v / GIB).toFixed(1) + ' GiB' : Math.round(v / MIB) + ' MiB';
  }

  function pad2(n) { return String(n).padStart(2, '0'); }

  function timeText(unix) {
    if (!present(unix)) return '—';
    const d = new Date(unix * 1000);
    return d.getFullYear() + '-' + pad2(d.getMonth() + 1) + '-' + pad2(d.getDate()) + ' ' +
        pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  }

  // Each bar: the value, the scale's top (null: no scale) and the text.
  const READINGS = {
    utilization_percent: (e) => ({
      value: e.utilization_percent, max: 100,
      text: present(e.utilization_percent) ? Math.round(e.utilization_percent) + ' %' : null}),
    memory_used_bytes: (e) => ({
      value: e.memory_used_bytes, max: e.memory_total_bytes, warn: true,
      text: !present(e.memory_used_bytes) ? null : present(e.memory_total_bytes)
        ? (e.memory_used_bytes / GIB).toFixed(1) + ' / ' + (e.memory_total_bytes / GIB).toFixed(1) + ' GiB'
        : (e.memory_used_bytes / GIB).toFixed(1) + ' GiB'}),
    power_watts: (e) => ({
      value: e.power_watts, max: e.power_limit_watts, warn: true,
      text: !present(e.power_watts) ? null : e.power_watts.toFixed(1) +
        (present(e.power_limit_watts) ? ' / ' + oneDecimal(e.power_limit_watts) : '') + ' W'}),
    temperature_celsius: (e) => ({
      value: e.temperature_celsius, max: 100, warn: true,
      text: present(e.temperature_celsius) ? Math.round(e.temperature_celsius) + ' °C' : null}),
    sm_clock_mhz: (e) => clock(e.sm_clock_mhz, e.sm_clock_max_mhz),
    memory_clock_mhz: (e) => clock(e.memory_clock_mhz, e.memory_clock_max_mhz),
  };

  function clock(v, max) {
    return {value: v, max: max,
            text: !present(v) ? null : Math.round(v) + (present(max) ? ' / ' + Math.round(max) : '') + ' MHz'};
  }

  // ---- cards ----

  function part(root, id) { return root.querySelector('[data-id="' + id + '"]'); }

  function newCard(e) {
    const card = template.content.firstElementChild.cloneNode(true);
    card.dataset.entity = String(e.entity);
    card.dataset.kind = e.kind;
    card.dataset.gpu = String(e.gpu);
    if (e.uuid !== null) card.dataset.uuid = e.uuid;
    card.dataset.state = e.state;
    card.dataset.key = cardKey(e);
    let title = 'GPU ' + e.gpu;
    if (e.kind === 'gpu_instance') {
      title += ' · GI ' + orDash(e.gpu_instance_id) + (e.profile ? ' · ' + e.profile : '');
    }
    part(card, 'title').textContent = title;
    part(card, 'state').textContent = e.state;
    part(card, 'name').textContent = e.name || 'unnamed';
    part(card, 'uuid').textContent = (e.uuid || 'no UUID') + (e.pci_bus_id ? ' · ' + e.pci_bus_id : '');
    const reason = part(card, 'reason');
    if (e.state === 'ok') {
      reason.remove();
    } else {
      card.classList.add('down');
      reason.textContent = (e.state === 'lost' ? 'Lost: ' : 'Skipped: ') + (e.reason || 'no reason given');
      part(card, 'readings').remove();   // no bars at all for an entity that cannot be read
    }
    return card;
  }

  function cardKey(e) { return e.entity + '|' + e.uuid + '|' + e.state; }

  function drawBar(card, field, r) {
    const valueEl = card.querySelector('[data-field="' + field + '"]');
    const bar = card.querySelector('[data-bar="' + field + '"]');
    if (!valueEl || !bar) return;
    const fill = bar.firstElementChild;
    if (present(r.value)) {
      valueEl.textContent = r.text;
      valueEl.dataset.value = String(r.value);
      bar.setAttribute('aria-valuetext', r.text);
    } else {
      valueEl.textContent = 'N/A';
      delete valueEl.dataset.value;
      bar.setAttribute('aria-valuetext', 'N/A');
    }
    if (present(r.max)) valueEl.dataset.max = String(r.max); else delete valueEl.dataset.max;
    if (present(r.value) && present(r.max) && r.max > 0) {
      const frac = Math.min(1, Math.max(0, r.value / r.max));
      fill.style.width = (frac * 100).toFixed(2) + '%';
      if (r.warn) bar.dataset.level = frac >= 0.9 ? 'high' : frac >= 0.75 ? 'mid' : 'low';
      bar.classList.remove('absent');
      bar.setAttribute('aria-valuemin', '0');
      bar.setAttribute('aria-valuemax', String(r.max));
      bar.setAttribute('aria-valuenow', String(Math.min(r.max, Math.max(0, r.value))));
    } else {
      // Absent, or no scale to draw it against: an empty bar, marked so.
      fill.style.removeProperty('width');
      delete bar.dataset.level;
      bar.classList.add('absent');
      bar.removeAttribute('aria-valuenow');
    }
  }

  // A sparkline: one polyline per run of present points (a null leaves a gap), x placed so that
  // the newest point is at the right edge and a full history spans the width.
  function drawSpark(svg, points, capacity, top) {
    while (svg.firstChild) svg.firstChild.remove();
    const n = points.length;
    const slots = Math.max(capacity, n, 2);
    const x = (i) => (SPARK_W * (slots - n + i)) / (slots - 1);
    const y = (v) => SPARK_H - (SPARK_H * Math.min(top, Math.max(0, v))) / top;
    const make = (name) => document.createElementNS(svg.namespaceURI, name);
    const base = make('line');
    base.setAttribute('class', 'baseline');
    base.setAttribute('x1', '0'); base.setAttribute('x2', String(SPARK_W));
    base.setAttribute('y1', String(SPARK_H)); base.setAttribute('y2', String(SPARK_H));
    base.setAttribute('vector-effect', 'non-scaling-stroke');
    svg.appendChild(base);
    let runs = 0;
    let count = 0;
    let run = [];
    const flush = () => {
      if (run.length === 0) return;
      if (run.length === 1) {   // a lone point: a short dash so that it shows
        const [px, py] = run[0];
        run = [[Math.max(0, px - 0.8), py], [Math.min(SPARK_W, px + 0.8), py]];
      }
      const line = make('polyline');
      line.setAttribute('class', 'series');
      line.setAttribute('points', run.map((p) => p[0].toFixed(2) + ',' + p[1].toFixed(2)).join(' '));
      line.setAttribute('vector-effect', 'non-scaling-stroke');
      svg.appendChild(line);
      runs++;
      run = [];
    };
    points.forEach((v, i) => {
      if (present(v)) { run.push([x(i), y(v)]); count++; } else { flush(); }
    });
    flush();
    svg.dataset.points = String(count);
    svg.dataset.runs = String(runs);
  }

  function drawCard(card, e, f) {
    if (e.state === 'ok') {
      for (const field of Object.keys(READINGS)) drawBar(card, field, READINGS[field](e));
    }
    const action = part(card, 'action');   // what the GPU's pending faults call for
    const a = e.recommended_action;
    action.hidden = !a;
    action.textContent = a ? 'Action: ' + a.action + ' (Xid ' + a.xid +
        (a.description ? ': ' + a.description : '') + ')' : '';
    if (a) card.dataset.action = a.action; else delete card.dataset.action;
    const span = Math.round(f.history_points * f.interval_seconds);
    const util = e.history.utilization_percent;
    const power = e.history.power_watts;
    const seen = power.filter(present);
    const limited = present(e.power_limit_watts) && e.power_limit_watts > 0;
    const maxPower = limited ? e.power_limit_watts : Math.max(1, ...seen);
    part(card, 'util-caption').textContent = 'Utilization, ' + span + ' s';
    part(card, 'power-caption').textContent = 'Power, ' + span + ' s' +
        (limited || seen.length > 0 ? ' (0–' + oneDecimal(maxPower) + ' W)' : '');
    drawSpark(card.querySelector('[data-spark="utilization_percent"]'), util, f.history_points, 100);
    drawSpark(card.querySelector('[data-spark="power_watts"]'), power, f.history_points, maxPower);
  }

  function drawCards(f) {
    const old = new Map();
    for (const c of cardsEl.children) old.set(c.dataset.key, c);
    f.entities.forEach((e, i) => {
      const key = cardKey(e);
      let card = old.get(key);
      if (card) old.delete(key); else card = newCard(e);
      if (cardsEl.children[i] !== card) cardsEl.insertBefore(card, cardsEl.children[i] || null);
      drawCard(card, e, f);
    });
    for (const c of old.values()) c.remove();
  }

  // ---- processes ----

  function drawProcesses(f) {
    const rows = document.createDocumentFragment();
    for (const p of f.processes) {
      const tr = document.createElement('tr');
      let where = '—';
      if (p.container && p.pod) where = p.container + ' (pod ' + p.pod + ')';
      else if (p.container) where = p.container;
      else if (p.pod) where = 'pod ' + p.pod;
      const cells = [String(p.pid), orDash(p.user),
                     p.gpu_instance_id === null ? String(p.gpu) : p.gpu + ' (GI ' + p.gpu_instance_id + ')',
                     bytes(p.memory_bytes), present(p.sm_percent) ? Math.round(p.sm_percent) + ' %' : '—',
                     where, orDash(p.command)];
      cells.forEach((text, i) => {
        const td = document.createElement('td');
        td.textContent = text;
        td.dataset.label = procHeads[i];
        tr.appendChild(td);
      });
      tr.dataset.pid = String(p.pid);
      rows.appendChild(tr);
    }
    if (f.processes.length === 0) {
      const tr = document.createElement('tr');
      const td = document.createElement('td');
      td.colSpan = procHeads.length;
      td.className = 'empty';
      td.textContent = 'No GPU processes.';
      tr.appendChild(td);
      rows.appendChild(tr);
    }
    procBody.replaceChildren(rows);
    processNote.hidden = !f.process_note;
    processNote.textContent = f.process_note || '';
  }

  // ---- header ----

  function setConnection(state, text) {
    body.dataset.connection = state;
    meta.connection.textContent = text || state;
    meta.connection.dataset.state = state;
  }

  function showBanner(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }

  function drawHeader(f) {
    meta.hostname.textContent = f.hostname;
    meta.source.textContent = 'via ' + f.source;
    meta.scenario.textContent = f.simulated ? 'simulated: ' + orDash(f.scenario) : 'real GPUs';
    meta.viewers.textContent = f.viewers === null ? 'viewers —' : f.viewers + (f.viewers === 1 ? ' viewer' : ' viewers');
    meta.seq.textContent = 'seq ' + f.seq;
    meta.updated.textContent = 'read ' + timeText(f.timestamp_unix);
    meta.dropped.hidden = !(f.dropped_frames_total > 0);
    meta.dropped.textContent = f.dropped_frames_total + ' frames dropped for slow viewers';
    document.title = f.hostname + ' — gpulse live';
  }

  function drawFrame(f) {
    if (!f || f.format !== FORMAT || !Array.isArray(f.entities) || !Array.isArray(f.processes)) {
      throw new Error('not a ' + FORMAT + ' frame');
    }
    if (present(f.interval_seconds) && f.interval_seconds > 0) interval = f.interval_seconds;
    drawHeader(f);
    drawCards(f);
    drawProcesses(f);
    frames++;
    body.dataset.seq = String(f.seq);
    body.dataset.frames = String(frames);
  }

  // ---- the stream ----

  // A server-sent-events parser (the WHATWG event-stream format): feed it text as it comes,
  // it calls onEvent(type, data) for each complete event.
  function eventStream(onEvent) {
    let buf = '';
    let data = [];
    let type = '';
    return function feed(text) {
      buf += text;
      for (;;) {
        const m = /\r\n|\r|\n/.exec(buf);
        if (!m || (m[0] === '\r' && m.index === buf.length - 1)) return;   // a CR may precede a LF still to come
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length > 0) onEvent(type || 'message', data.join('\n'));
          data = [];
          type = '';
        } else if (line[0] !== ':') {
          const c = line.indexOf(':');
          const name = c < 0 ? line : line.slice(0, c);
          let value = c < 0 ? '' : line.slice(c + 1);
          if (value[0] === ' ') value = value.slice(1);
          if (name === 'data') data.push(value);
          else if (name === 'event') type = value;
        }
      }
    };
  }

  function retryLater(state, text) {
    clearInterval(watchdog);
    const delay = retryMs;
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
    setConnection(state, state === 'refused' ? 'refused, retrying' : 'disconnected, retrying');
    showBanner(text + ' — retrying in ' + Math.round(delay / 1000) + ' s.');
    setTimeout(connect, delay);
  }

  async function connect() {
    setConnection('connecting', frames > 0 ? 'reconnecting' : 'connecting');
    const abort = new AbortController();
    let response;
    try {
      response = await fetch(STREAM_URL, {headers: {Accept: 'text/event-stream'}, cache: 'no-store',
                                          signal: abort.signal});
    } catch (err) {
      retryLater('disconnected', 'Stream disconnected: the server cannot be reached (' + err.message + ')');
      return;
    }
    if (!response.ok) {
      let text = '';
      try { text = (await response.text()).trim(); } catch (err) { /* the status says enough */ }
      retryLater('refused', 'Stream refused by the server (HTTP ' + response.status +
                 (text ? ': ' + text.slice(0, 500) : '') + ')');
      return;
    }
    // A stream that goes silent for several intervals is treated as broken.
    lastData = performance.now();
    clearInterval(watchdog);
    watchdog = setInterval(() => {
      if (performance.now() - lastData > Math.max(15, 5 * interval) * 1000) abort.abort();
    }, 1000);
    setConnection('open', 'connected');
    let failure = null;
    const feed = eventStream((type, data) => {
      if (type !== 'frame') return;
      try {
        drawFrame(JSON.parse(data));
        retryMs = RETRY_MIN_MS;
        setConnection('live', 'live');
        showBanner('');
      } catch (err) {
        console.error('gpulse live: a frame could not be shown:', err);
        failure = 'A frame could not be shown (' + err.message + ')';
        abort.abort();
      }
    });
    try {
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const {value, done} = await reader.read();
        if (done) break;
        lastData = performance.now();
        feed(value);
      }
      failure = failure || 'Stream disconnected: the server ended it';
    } catch (err) {
      failure = failure || (abort.signal.aborted ? 'Stream disconnected: no data for a while'
                                                 : 'Stream disconnected (' + err.message + ')');
    }
    retryLater('disconnected', failure);
  }

  connect();
})();
