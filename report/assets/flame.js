// perfdoctor's flame graph: a small, dependency-free canvas renderer for
// the call trees the Go side embeds in the page (see report/flame.go for the
// encoding). It draws only boxes at least half a pixel wide, so the cost
// follows what is visible, not the size of the profile.
(function () {
  'use strict';
  const t0 = performance.now();
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($('pd-data').textContent);
  const pd = (window.perfdoctor = { data: data, timings: { parseMs: performance.now() - t0 } });

  const ROW = 18; // px per stack level
  const MINPX = 0.5; // narrower boxes are not drawn or descended into
  const LABELPX = 24; // narrower boxes get no label
  const FONT = '12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
  const HIT = '#e6007e';
  const MARK = '#6d28d9';

  // ---- formatting ----
  function pct(v) {
    if (!isFinite(v)) return '–';
    const a = Math.abs(v);
    if (a >= 0.1) return (v * 100).toFixed(0) + '%';
    if (a >= 0.001) return (v * 100).toFixed(1) + '%';
    if (a > 0) return (v < 0 ? '>-' : '<') + '0.1%';
    return '0%';
  }
  function pp(v) {
    return (v >= 0 ? '+' : '') + (v * 100).toFixed(1) + ' pp';
  }
  function human(v, unit) {
    const a = Math.abs(v);
    if (unit === 'nanoseconds') {
      if (a >= 1e9) return (v / 1e9).toFixed(2) + ' s';
      if (a >= 1e6) return (v / 1e6).toFixed(1) + ' ms';
      if (a >= 1e3) return (v / 1e3).toFixed(1) + ' µs';
      return v + ' ns';
    }
    if (unit === 'bytes') {
      const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
      let i = 0;
      let x = v;
      while (Math.abs(x) >= 1024 && i < u.length - 1) {
        x /= 1024;
        i++;
      }
      return (i ? x.toFixed(1) : x) + ' ' + u[i];
    }
    if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k';
    return String(Math.round(v * 100) / 100);
  }
  function esc(s) {
    return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }
  // shortName drops the import path: github.com/a/b/c.(*T).M -> c.(*T).M
  function shortName(fn) {
    const slash = fn.lastIndexOf('/', fn.indexOf('(') >= 0 ? fn.indexOf('(') : fn.length);
    return slash >= 0 ? fn.slice(slash + 1) : fn;
  }
  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 16777619);
    }
    return h >>> 0;
  }
  // baseColor: the application warm, the standard library green, the
  // runtime blue, each box's shade from its name so neighbours differ.
  function baseColor(fn) {
    const r = (hash(fn) % 1000) / 1000;
    if (/^(runtime[./]|internal\/runtime\/|internal\/abi\.)/.test(fn)) {
      return 'hsl(' + (205 + 20 * r).toFixed(0) + ',45%,' + (70 + 10 * r).toFixed(0) + '%)';
    }
    const path = fn.slice(0, fn.indexOf('.', Math.max(0, fn.lastIndexOf('/'))));
    const first = path.split('/')[0];
    if (path && path !== 'main' && first.indexOf('.') < 0) {
      return 'hsl(' + (85 + 45 * r).toFixed(0) + ',40%,' + (62 + 12 * r).toFixed(0) + '%)';
    }
    return 'hsl(' + (12 + 38 * r).toFixed(0) + ',85%,' + (58 + 10 * r).toFixed(0) + '%)';
  }

  // ---- the tree ----
  function Tree(p) {
    const S = p.stride;
    const N = p.nodes.length / S;
    const sides = (S - 2) / 2;
    this.p = p;
    this.n = N;
    this.sides = sides;
    this.name = new Int32Array(N);
    this.parent = new Int32Array(N);
    this.depth = new Int32Array(N);
    this.total = [];
    this.self = [];
    for (let s = 0; s < sides; s++) {
      this.total.push(new Float64Array(N));
      this.self.push(new Float64Array(N));
    }
    const start = new Int32Array(N + 1);
    const nodes = p.nodes;
    for (let i = 0; i < N; i++) {
      const o = i * S;
      this.name[i] = nodes[o];
      const par = nodes[o + 1];
      this.parent[i] = par;
      this.depth[i] = par < 0 ? 0 : this.depth[par] + 1;
      for (let s = 0; s < sides; s++) {
        this.total[s][i] = nodes[o + 2 + 2 * s];
        this.self[s][i] = nodes[o + 3 + 2 * s];
      }
      if (par >= 0) start[par + 1]++;
    }
    for (let i = 1; i <= N; i++) start[i] += start[i - 1];
    const kids = new Int32Array(Math.max(N - 1, 0));
    const fill = start.slice(0, N);
    for (let i = 1; i < N; i++) kids[fill[this.parent[i]]++] = i; // preorder keeps sibling order
    this.start = start;
    this.kids = kids;
    // end[i]: one past i's last descendant (a subtree is a preorder range).
    const end = new Int32Array(N);
    for (let i = N - 1; i >= 0; i--) {
      if (end[i] < i + 1) end[i] = i + 1;
      const par = this.parent[i];
      if (par >= 0 && end[par] < end[i]) end[par] = end[i];
    }
    this.end = end;
    this.names = p.names;
    this.marked = new Uint8Array(p.names.length);
    this.match = new Uint8Array(p.names.length);
    this.colors = new Array(p.names.length);
    for (let k = 0; k < p.names.length; k++) {
      if (markRules.has(p.names[k])) this.marked[k] = 1;
    }
  }
  Tree.prototype.label = function (i) {
    return i === 0 ? 'all (' + (this.p.label || this.p.kind) + ')' : this.names[this.name[i]];
  };
  Tree.prototype.share = function (s, i) {
    const t = this.p.totals[s];
    return t > 0 ? this.total[s][i] / t : 0;
  };

  const markRules = new Map();
  for (const m of data.marks || []) markRules.set(m.frame, m.rules);

  if (!data.profiles.length) {
    for (const b of document.querySelectorAll('.show-frames')) b.hidden = true;
    pd.ready = true;
    return;
  }

  const canvas = $('flame-canvas');
  const ctx = canvas.getContext('2d');
  const wrap = $('flame-wrap');
  const tip = $('flame-tip');
  const search = $('flame-search');
  const trees = new Array(data.profiles.length);
  const state = {
    idx: -1,
    tree: null,
    side: data.diff ? 1 : 0,
    focus: 0,
    marks: true,
    query: null,
    // laid-out boxes: parallel arrays, and per row the box indexes in x order
    bx: [],
    bw: [],
    bn: [],
    rows: [],
    width: 0,
  };
  pd.flame = {
    state: state,
    boxes: () => state.bn.length,
    focusName: () => (state.tree ? state.tree.label(state.focus) : ''),
    // boxFor returns the canvas-relative box of the widest node named fn
    // (a substring) at the given depth, for tests and the curious.
    boxFor: (depth, fn) => {
      const row = state.rows[depth] || [];
      let best = null;
      for (const k of row) {
        const i = state.bn[k];
        if (fn && state.tree.label(i).indexOf(fn) < 0) continue;
        if (!best || state.bw[k] > best.w) best = { x: state.bx[k], y: depth * ROW, w: state.bw[k], h: ROW - 1, name: state.tree.label(i) };
      }
      return best;
    },
  };

  function val(i) {
    return state.tree.total[state.side][i];
  }

  function layout() {
    const t = state.tree;
    const W = wrap.clientWidth || 800;
    state.width = W;
    state.bx = [];
    state.bw = [];
    state.bn = [];
    state.rows = [];
    const push = (i, x, w) => {
      const d = t.depth[i];
      (state.rows[d] || (state.rows[d] = [])).push(state.bn.length);
      state.bx.push(x);
      state.bw.push(w);
      state.bn.push(i);
    };
    const path = [];
    for (let a = t.parent[state.focus]; a >= 0; a = t.parent[a]) path.push(a);
    for (let k = path.length - 1; k >= 0; k--) push(path[k], 0, W);
    const visit = (i, x, w) => {
      push(i, x, w);
      const v = val(i);
      if (v <= 0) return;
      const scale = w / v;
      let cx = x;
      for (let j = t.start[i]; j < t.start[i + 1]; j++) {
        const c = t.kids[j];
        const cw = val(c) * scale;
        if (cw >= MINPX) visit(c, cx, cw);
        cx += cw;
      }
    };
    if (val(state.focus) > 0) visit(state.focus, 0, W);
  }

  // diffColor: red where B's share grew, blue where it shrank.
  function diffColor(i) {
    const t = state.tree;
    const d = t.share(1, i) - t.share(0, i);
    const k = Math.min(1, Math.abs(d) / state.diffScale);
    if (k < 0.02) return '#e8e8e8';
    const light = (92 - 42 * k).toFixed(0);
    return d > 0 ? 'hsl(2,85%,' + light + '%)' : 'hsl(215,80%,' + light + '%)';
  }

  function draw() {
    const t0 = performance.now();
    const t = state.tree;
    layout();
    const t1 = performance.now();
    const W = state.width;
    const H = Math.max(1, state.rows.length) * ROW;
    const dpr = window.devicePixelRatio || 1;
    canvas.style.height = H + 'px';
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    const charW = ctx.measureText('m').width || 7;
    const n = state.bn.length;
    for (let k = 0; k < n; k++) {
      const i = state.bn[k];
      const x = state.bx[k];
      const w = state.bw[k];
      const y = t.depth[i] * ROW;
      const nm = t.name[i];
      const hit = nm >= 0 && state.query && t.match[nm];
      let fill;
      if (hit) fill = HIT;
      else if (i === 0) fill = '#cfd5de';
      else if (data.diff) fill = diffColor(i);
      else fill = t.colors[nm] || (t.colors[nm] = baseColor(t.names[nm]));
      ctx.fillStyle = fill;
      ctx.fillRect(x, y, w > 1.5 ? w - 0.5 : w, ROW - 1);
      if (state.marks && !data.diff && nm >= 0 && t.marked[nm] && w >= 2) {
        ctx.strokeStyle = MARK;
        ctx.lineWidth = 2;
        ctx.strokeRect(x + 1, y + 1, Math.max(0, w - 2.5), ROW - 3);
      }
      if (w >= LABELPX) {
        const max = Math.floor((w - 6) / charW);
        let s = i === 0 ? t.label(0) : shortName(t.names[nm]);
        if (s.length > max) s = max > 1 ? s.slice(0, max - 1) + '…' : '';
        if (s) {
          ctx.fillStyle = hit ? '#fff' : '#1d2330';
          ctx.fillText(s, x + 3, y + ROW / 2);
        }
      }
    }
    const t2 = performance.now();
    pd.timings.layoutMs = t1 - t0;
    pd.timings.drawMs = t2 - t1;
    pd.timings.boxes = n;
    if (pd.timings.firstDrawAt === undefined) pd.timings.firstDrawAt = t2;
    canvas.setAttribute('data-boxes', String(n));
    updateZoom();
  }

  function updateZoom() {
    const t = state.tree;
    $('flame-reset').disabled = state.focus === 0;
    $('flame-zoom').textContent =
      state.focus === 0 ? '' : 'Zoomed to ' + t.label(state.focus) + ' (' + pct(t.share(state.side, state.focus)) + ' of the total)';
  }

  function boxAt(x, y) {
    const row = state.rows[Math.floor(y / ROW)];
    if (!row) return -1;
    let lo = 0;
    let hi = row.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const k = row[mid];
      if (x < state.bx[k]) hi = mid - 1;
      else if (x >= state.bx[k] + state.bw[k]) lo = mid + 1;
      else return k;
    }
    return -1;
  }

  function pos(ev) {
    const r = canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  canvas.addEventListener('click', (ev) => {
    const [x, y] = pos(ev);
    const k = boxAt(x, y);
    if (k < 0) return;
    zoom(state.bn[k]);
  });
  function zoom(i) {
    state.focus = i;
    tip.hidden = true;
    draw();
    if (state.query) showMatch();
  }
  $('flame-reset').addEventListener('click', () => zoom(0));
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && state.focus !== 0) zoom(0);
  });

  canvas.addEventListener('mousemove', (ev) => {
    const [x, y] = pos(ev);
    const k = boxAt(x, y);
    if (k < 0) {
      tip.hidden = true;
      return;
    }
    const t = state.tree;
    const i = state.bn[k];
    const unit = t.p.unit;
    let html = '<b>' + esc(t.label(i)) + '</b><br>';
    if (data.diff) {
      const a = t.share(0, i);
      const b = t.share(1, i);
      html +=
        'total: A ' + pct(a) + ' → B ' + pct(b) + ' (' + pp(b - a) + ')<br>' +
        'self: A ' + pct(t.self[0][i] / (t.p.totals[0] || 1)) + ' → B ' + pct(t.self[1][i] / (t.p.totals[1] || 1));
    } else {
      html +=
        'total: ' + pct(t.share(0, i)) + ' (' + human(t.total[0][i], unit) + ')<br>' +
        'self: ' + pct(t.self[0][i] / (t.p.totals[0] || 1)) + ' (' + human(t.self[0][i], unit) + ')';
      if (state.focus !== 0 && val(state.focus) > 0) html += '<br>of zoomed: ' + pct(val(i) / val(state.focus));
      const nm = t.name[i];
      if (nm >= 0 && t.marked[nm]) html += '<br>cited by ' + esc(markRules.get(t.names[nm]).join(', '));
    }
    tip.innerHTML = html;
    tip.hidden = false;
    const tw = tip.offsetWidth;
    tip.style.left = Math.min(x + 14, Math.max(0, state.width - tw - 4)) + 'px';
    tip.style.top = y + 18 + 'px';
  });
  canvas.addEventListener('mouseleave', () => {
    tip.hidden = true;
  });

  // ---- search ----
  function compile(q) {
    try {
      return new RegExp(q, 'i');
    } catch (e) {
      return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    }
  }
  function applySearch() {
    const t = state.tree;
    const q = search.value.trim();
    t.match.fill(0);
    state.query = null;
    if (q) {
      const re = compile(q);
      let funcs = 0;
      for (let k = 0; k < t.names.length; k++) {
        if (re.test(t.names[k])) {
          t.match[k] = 1;
          funcs++;
        }
      }
      state.query = q;
      state.funcs = funcs;
    }
    draw();
    showMatch();
  }
  // matchShare sums the nodes that match and have no matching ancestor, so
  // recursion and nested matches count once; within the subtree of root.
  function matchShare(s, root) {
    const t = state.tree;
    const end = t.end[root];
    const covered = new Uint8Array(end - root);
    let sum = 0;
    for (let i = root; i < end; i++) {
      const par = t.parent[i];
      if (i > root && covered[par - root]) covered[i - root] = 1;
      else if (i > 0 && t.match[t.name[i]]) {
        covered[i - root] = 1;
        sum += t.total[s][i];
      }
    }
    return t.total[s][root] > 0 ? sum / t.total[s][root] : 0;
  }
  function showMatch() {
    const out = $('flame-match');
    if (!state.query) {
      out.textContent = '';
      pd.flame.matchShare = 0;
      return;
    }
    let text;
    const share = matchShare(state.side, 0);
    pd.flame.matchShare = share;
    if (data.diff) {
      text = 'matches: A ' + pct(matchShare(0, 0)) + ' → B ' + pct(matchShare(1, 0)) + ' of the total';
    } else {
      text = state.funcs + ' function' + (state.funcs === 1 ? '' : 's') + ' match: ' + pct(share) + ' of the total';
      if (state.focus !== 0) text += ', ' + pct(matchShare(state.side, state.focus)) + ' of the zoomed box';
    }
    if (state.funcs === 0) text = 'no function matches';
    out.textContent = text;
  }
  let timer = 0;
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(applySearch, 120);
  });
  const marksBox = $('flame-marks');
  if (marksBox) {
    marksBox.addEventListener('change', () => {
      state.marks = marksBox.checked;
      draw();
    });
  }
  const sideSel = $('flame-side');
  if (sideSel) {
    sideSel.addEventListener('change', () => {
      state.side = Number(sideSel.value);
      state.focus = 0;
      applySearch();
    });
  }

  // ---- tabs ----
  const tabs = $('flame-tabs');
  const buttons = data.profiles.map((p, idx) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.setAttribute('role', 'tab');
    b.setAttribute('data-kind', p.kind);
    b.textContent = p.label;
    b.title = p.type + ' (' + p.unit + '), ' + p.stacks + ' stacks';
    b.addEventListener('click', () => select(idx));
    tabs.appendChild(b);
    return b;
  });
  function select(idx) {
    if (state.idx === idx && state.tree) return;
    const d0 = performance.now();
    if (!trees[idx]) trees[idx] = new Tree(data.profiles[idx]);
    pd.timings.decodeMs = performance.now() - d0;
    state.idx = idx;
    state.tree = trees[idx];
    state.focus = 0;
    if (data.diff) {
      let m = 0.01; // changes under 1 point of share stay pale
      const t = state.tree;
      for (let i = 1; i < t.n; i++) m = Math.max(m, Math.abs(t.share(1, i) - t.share(0, i)));
      state.diffScale = m;
    }
    buttons.forEach((b, k) => b.setAttribute('aria-selected', String(k === idx)));
    const p = data.profiles[idx];
    const note = [];
    const totals = p.totals.map((v) => human(v, p.unit));
    note.push((data.diff ? 'Totals: A ' + totals[0] + ', B ' + totals[1] : 'Total: ' + totals[0]) + ' (' + p.type + ').');
    note.push(
      'Read from ' + p.stacks.toLocaleString('en') + ' stacks; the call tree holds ' + (p.kept + p.pruned).toLocaleString('en') +
        ' nodes, of which ' + p.pruned.toLocaleString('en') + ' under ' + (p.min_share * 100).toFixed(2) +
        '% of the total are not drawn (' + p.kept.toLocaleString('en') + ' kept); search shares count the kept nodes.',
    );
    if (p.truncated) note.push('The tree was cut at its node limit.');
    $('flame-note').textContent = note.join(' ');
    const links = $('flame-links');
    links.textContent = '';
    const href = data.links && data.links[p.kind];
    if (href) {
      const a = document.createElement('a');
      a.href = href;
      a.textContent = 'open in pprof (graph, source, peek, disassembly)';
      links.appendChild(a);
    }
    applySearch();
  }
  let pending = 0;
  window.addEventListener('resize', () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      if (state.tree && wrap.clientWidth !== state.width) draw();
    });
  });
  // ---- finding cards: show the frames a finding cites ----
  for (const b of document.querySelectorAll('.show-frames')) {
    b.addEventListener('click', () => {
      const frames = b.getAttribute('data-frames').split('\n');
      const q = frames.map((f) => '^' + f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$').join('|');
      const want = new Set(frames);
      let idx = data.profiles.findIndex((p) => p.names.some((n) => want.has(n)));
      select(idx < 0 ? 0 : idx);
      $('flame-search').value = q;
      applySearch();
      $('flame').scrollIntoView({ behavior: 'instant', block: 'start' });
    });
  }
  select(0);
  pd.timings.readyAt = performance.now();
  pd.ready = true;
})();
