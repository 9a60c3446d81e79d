
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
  function axis(title, log) {
    var a = { type: log ? 'logarithmic' : 'linear', title: { display: !!title, text: title } };
    if (log) a.ticks = { callback: function (v) {  // powers of ten only, with SI prefixes
      var l = Math.log10(v);
      return Math.abs(l - Math.round(l)) < 1e-6 ? si(v) : '';
    } };
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
             options: { scales: { x: axis(c.xlabel, c.logx), y: axis(c.ylabel, c.logy) },
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
      scales = { x: axis(c.ylabel, false), y: { ticks: { autoSkip: false } } };
    } else {
      scales = { x: { ticks: { autoSkip: false } }, y: axis(c.ylabel, false) };
      if (right) {
        scales.y1 = axis(c.y1label, false);
        scales.y1.position = 'right';
        scales.y1.grid = { drawOnChartArea: false };
      }
    }
    return { type: 'bar', data: { labels: c.labels, datasets: sets },
             options: { indexAxis: c.horizontal ? 'y' : 'x', scales: scales,
                        plugins: { legend: { display: sets.length > 1, position: 'bottom' } } } };
  }
  data.charts.forEach(function (c) {
    var card = el('div', 'card');
    card.id = 'card-' + c.id;
    card.appendChild(el('h2', null, c.title));
    root.appendChild(card);
    if (c.note) {
      card.appendChild(el('p', 'note', c.note));
      card.setAttribute('data-note', '1');
      notes++;
      return;
    }
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
