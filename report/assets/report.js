// The report page's renderer: draws the chart specs of the JSON block <script id="gridrun-data">
// (written by report/src/html_report.cpp, which decides what each chart shows, the ranges of its
// log axes and which axes count things) with Chart.js, and reports on itself in <body data-*>
// for tests. A spec with a note has no data: it gets no card (the page names it in its
// "not shown" lines). Ticks are placed here because Chart.js's own do not read: on a log axis it
// labels only the powers of ten that fall inside the data (none for 13-23), and on an axis of
// ranks 1 and 2 it puts ticks at 1.1, 1.2, ...
(function () {
  'use strict';
  var palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1',
                 '#ff9da7', '#9c755f', '#bab0ac', '#1f77b4', '#d62728'];
  function color(k) { return palette[k % palette.length]; }
  var data = JSON.parse(document.getElementById('gridrun-data').textContent);
  var root = document.getElementById('charts');
  var charts = [], notes = 0;
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 11;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function si(v) {
    var units = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
    for (var i = 0; i < units.length; i++)
      if (Math.abs(v) >= units[i][0]) return +(v / units[i][0]).toPrecision(3) + ' ' + units[i][1];
    return String(+v.toPrecision(3));
  }
  // A log axis' ticks, replacing Chart.js's: 1, 2 and 5 x 10^n when the axis spans at most about
  // a decade and a half, else the powers of ten (every k-th one beyond 8 decades), all labelled.
  function logTicks(scale) {
    var lo = scale.min, hi = scale.max;
    if (!(lo > 0 && hi > lo)) return;
    var e0 = Math.floor(Math.log10(lo) + 1e-9), e1 = Math.ceil(Math.log10(hi) - 1e-9);
    var mants = Math.log10(hi / lo) <= 1.5 ? [1, 2, 5] : [1];
    var every = Math.max(1, Math.ceil((e1 - e0) / 8));
    var ticks = [];
    for (var e = e0; e <= e1; e++) {
      if (((e % every) + every) % every) continue;
      mants.forEach(function (m) {
        var v = m * Math.pow(10, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) ticks.push({ value: v });
      });
    }
    if (ticks.length >= 2) scale.ticks = ticks;
  }
  // opts: log (logarithmic), min/max (null: Chart.js chooses), integer (counts: integer ticks only).
  function axis(title, opts) {
    opts = opts || {};
    var a = { type: opts.log ? 'logarithmic' : 'linear', title: { display: !!title, text: title } };
    if (opts.min !== null && opts.min !== undefined) a.min = opts.min;
    if (opts.max !== null && opts.max !== undefined) a.max = opts.max;
    if (opts.log) {
      a.afterBuildTicks = logTicks;
      a.ticks = { callback: function (v) { return si(v); } };
    } else if (opts.integer) {
      a.ticks = { precision: 0,
                  callback: function (v) { return Number.isInteger(v) ? si(v) : ''; } };
    }
    return a;
  }
  function xyConfig(c) {
    var many = c.series.length > 14;
    var sets = c.series.map(function (s) {
      var pts = [];
      for (var i = 0; i < s.x.length; i++)
        if (s.x[i] !== null && s.y[i] !== null) pts.push({ x: s.x[i], y: s.y[i] });
      return { label: s.label, data: pts, showLine: s.line, borderColor: color(s.color),
               backgroundColor: color(s.color), borderDash: s.dash ? [6, 4] : [],
               pointRadius: s.points ? 4 : 0, pointHoverRadius: 5, borderWidth: s.dash ? 1.5 : 2 };
    });
    return { type: 'scatter', data: { datasets: sets },
             options: { scales: { x: axis(c.xlabel, { log: c.logx, min: c.xmin, max: c.xmax,
                                                      integer: c.xinteger }),
                                  y: axis(c.ylabel, { log: c.logy, min: c.ymin, max: c.ymax }) },
                        plugins: { legend: { display: !many, position: 'bottom',
                                             labels: { boxWidth: 12 } } } } };
  }
  function barConfig(c) {
    var right = c.bars.some(function (b) { return b.right; });
    var sets = c.bars.map(function (b) {
      return { label: b.label, data: b.values, backgroundColor: color(b.color),
               yAxisID: c.horizontal ? undefined : (b.right ? 'y1' : 'y') };
    });
    var scales;
    if (c.horizontal) {
      scales = { x: axis(c.ylabel), y: { ticks: { autoSkip: false } } };
    } else {
      scales = { x: { ticks: { autoSkip: false } }, y: axis(c.ylabel) };
      if (right) {
        scales.y1 = axis(c.y1label);
        scales.y1.position = 'right';
        scales.y1.grid = { drawOnChartArea: false };
      }
    }
    return { type: 'bar', data: { labels: c.labels, datasets: sets },
             options: { indexAxis: c.horizontal ? 'y' : 'x', scales: scales,
                        plugins: { legend: { display: sets.length > 1, position: 'bottom' } } } };
  }
  data.charts.forEach(function (c) {
    if (c.note) {  // no data: named in the page's "not shown" lines instead of an empty card
      notes++;
      return;
    }
    var card = el('div', 'card');
    card.id = 'card-' + c.id;
    card.appendChild(el('h2', null, c.title));
    root.appendChild(card);
    var box = el('div', 'box');
    if (c.kind === 'bar' && c.horizontal) box.style.height = Math.max(220, 28 * c.labels.length + 60) + 'px';
    var canvas = el('canvas');
    canvas.id = 'chart-' + c.id;
    box.appendChild(canvas);
    card.appendChild(box);
    if (c.notes.length) {
      var ul = el('ul', 'cnotes');
      c.notes.forEach(function (n) { ul.appendChild(el('li', null, n)); });
      card.appendChild(ul);
    }
    try {
      charts.push(new Chart(canvas, c.kind === 'bar' ? barConfig(c) : xyConfig(c)));
    } catch (e) {
      window.gridrunErrors.push('chart ' + c.id + ': ' + e.message);
    }
  });
  var ok = 0, empty = [];
  charts.forEach(function (ch) {
    var drawn = ch.data.datasets.some(function (d, i) {
      return ch.getDatasetMeta(i).data.length > 0;
    });
    if (drawn) ok++; else empty.push(ch.canvas.id);
  });
  var b = document.body;
  b.setAttribute('data-charts', String(charts.length));
  b.setAttribute('data-charts-ok', String(ok));
  b.setAttribute('data-charts-empty', empty.join(' '));
  b.setAttribute('data-notes', String(notes));
  b.setAttribute('data-errors', String(window.gridrunErrors.length));
  b.setAttribute('data-error-text', window.gridrunErrors.join(' | '));
})();
