// Charts of the dashboard's pages, drawn with uPlot from JSON in each chart element's data-chart
// attribute (CSP: no inline script). data-chart-kind says which figure of the JSON to draw:
//   daily    (app overview)  {"days": ["2026-01-31", …], "series": {"opened": [n, …], …}}
//   accepted (report page)   {"accepted": {"x": [epoch s, …], "y": [per second, …], "bucket": s}}
//   opens    (report page)   {"opens": {"x": [epoch s of the hour, …], "opened": [n, …], "clicked": [n, …]}}
(function () {
  'use strict';
  const COLORS = ['#2454d6', '#12b76a', '#f79009', '#b42318', '#7a5af8', '#667085']; // as .key-0 … in dashboard.css

  // pad: the width of one bucket in seconds; the x range is the data's plus half a bucket each side,
  // so a send that lasted one bucket draws one bar, not a range uPlot guesses (years, for one point)
  function options(width, series, bars, pad) {
    return {
      width: width,
      height: 220,
      scales: { x: { time: true, range: (u, min, max) => [min - pad / 2, max + pad / 2] } },
      legend: { show: false }, // the page's caption names each colour (classes key-0 …)
      series: [{}].concat(series.map((label, i) => ({
        label: label,
        stroke: COLORS[i % COLORS.length],
        width: 2,
        fill: bars ? COLORS[i % COLORS.length] + '33' : undefined,
        paths: bars && uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.8, 40] }) : undefined,
        points: { show: false }
      }))),
      axes: [{}, { size: 50 }]
    };
  }

  function figure(kind, data) {
    if (kind === 'daily') {
      const x = data.days.map((d) => Date.parse(d + 'T00:00:00Z') / 1000);
      const names = Object.keys(data.series);
      return { labels: names, rows: [x].concat(names.map((n) => data.series[n])), bars: false, pad: 86400 };
    }
    if (kind === 'accepted') {
      return { labels: ['accepted per second'], rows: [data.accepted.x, data.accepted.y], bars: true, pad: data.accepted.bucket || 1 };
    }
    if (kind === 'opens') {
      return { labels: ['opened', 'clicked'], rows: [data.opens.x, data.opens.opened, data.opens.clicked], bars: true, pad: 3600 };
    }
    return null;
  }

  function draw(element) {
    let data;
    try {
      data = JSON.parse(element.dataset.chart);
    } catch (e) {
      return;
    }
    const f = figure(element.dataset.chartKind, data);
    if (!f || f.rows[0].length === 0) return;
    element.textContent = '';
    const width = () => {
      const style = getComputedStyle(element);
      return Math.max(200, element.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
    };
    const plot = new uPlot(options(width(), f.labels, f.bars, f.pad), f.rows, element);
    // follows its box (a window resized, a scroll bar that appeared once the page grew)
    let pending = null;
    let last = width();
    const follow = () => {
      clearTimeout(pending);
      pending = setTimeout(() => {
        const now = width();
        if (now !== last) {
          last = now;
          plot.setSize({ width: now, height: 220 });
        }
      }, 100);
    };
    if (typeof ResizeObserver !== 'undefined') new ResizeObserver(follow).observe(element);
    else window.addEventListener('resize', follow);
  }

  function start() {
    if (typeof uPlot === 'undefined') return;
    document.querySelectorAll('[data-chart][data-chart-kind]').forEach(draw);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
