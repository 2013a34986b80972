/* Draw every [data-chart] element with Plotly; its figure JSON sits in the json_script element it names.
   Plotly (4.8 MB) is loaded only once a page holds a chart: its URL is this script's data-plotly attribute.
   Parsing and starting it cost Chromium ~0.3 s of CPU per page view, on pages that draw nothing as well. */
(function () {
  "use strict";
  var CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  var PLOTLY_SRC = document.currentScript && document.currentScript.dataset.plotly;
  var waiting = null; // callbacks queued while Plotly loads; null before the first request

  function withPlotly(callback) {
    if (window.Plotly) { callback(); return; }
    if (waiting) { waiting.push(callback); return; }
    if (!PLOTLY_SRC) return;
    waiting = [callback];
    var script = document.createElement("script");
    script.src = PLOTLY_SRC;
    script.onload = function () {
      var queued = waiting;
      waiting = [];
      queued.forEach(function (queuedCallback) { queuedCallback(); });
    };
    document.head.appendChild(script);
  }

  // A title (or subtitle) wider than its chart, as on a phone-width window, is wrapped at its spaces to the
  // chart's width and the top margin raised by the lines it adds; the figure's own text and margin come back
  // once the chart is wide enough (fitTitles runs after every draw and resize).
  var TITLE_PAD = 12; // px kept clear at each side of the chart
  var LINE_HEIGHT = 1.3; // of the font size, per added line

  function wrapText(text, maxChars) {
    var lines = [];
    var line = "";
    text.split(" ").forEach(function (word) {
      if (line && (line + " " + word).length > maxChars) {
        lines.push(line);
        line = word;
      } else {
        line = line ? line + " " + word : word;
      }
    });
    if (line) lines.push(line);
    return lines;
  }

  function longestLine(text) {
    return text.split("<br>").reduce(function (n, line) { return Math.max(n, line.length); }, 1);
  }

  function fittedText(el, selector, own, shown) {
    // Characters that fit: the chart's width over the width of a character as drawn now.
    var node = el.querySelector(selector);
    if (!own || !node) return { text: own, lines: 1 };
    var drawn = node.getBoundingClientRect().width;
    var perChar = drawn / longestLine(shown || own);
    var available = el.getBoundingClientRect().width - 2 * TITLE_PAD;
    if (!perChar || own.length * perChar <= available) return { text: own, lines: 1 };
    var lines = wrapText(own, Math.max(8, Math.floor(available / perChar)));
    return { text: lines.join("<br>"), lines: lines.length };
  }

  function fitTitles(el, own) {
    var layout = el.layout || {};
    var title = layout.title || {};
    var subtitle = title.subtitle || {};
    var main = fittedText(el, ".gtitle", own.title, title.text);
    var sub = fittedText(el, ".gtitle-subtitle", own.subtitle, subtitle.text);
    if (main.text === title.text && (!own.subtitle || sub.text === subtitle.text)) return Promise.resolve();
    var full = el._fullLayout || {};
    var titleSize = (full.title && full.title.font && full.title.font.size) || 17;
    var subSize = (full.title && full.title.subtitle && full.title.subtitle.font && full.title.subtitle.font.size) || 12;
    var update = {
      "title.text": main.text,
      "margin.t": own.top + LINE_HEIGHT * (titleSize * (main.lines - 1) + subSize * (sub.lines - 1)),
    };
    if (own.subtitle) update["title.subtitle.text"] = sub.text;
    return window.Plotly.relayout(el, update);
  }

  function draw(el) {
    if (el.dataset.drawn === "1" || !window.Plotly) return;
    var source = document.getElementById(el.dataset.chart);
    if (!source) return;
    var figure = JSON.parse(source.textContent);
    el.dataset.drawn = "1";
    var title = (figure.layout && figure.layout.title) || {};
    window.Plotly.newPlot(el, figure.data, figure.layout, CONFIG).then(function () {
      var own = {
        title: title.text,
        subtitle: title.subtitle && title.subtitle.text,
        top: el._fullLayout.margin.t,
      };
      el.on("plotly_afterplot", function () { fitTitles(el, own); });
      return fitTitles(el, own);
    }).then(function () {
      el.dataset.rendered = "1";
    });
    // A point whose customdata is a page path opens that page (sweep and compare Pareto charts).
    el.on("plotly_click", function (event) {
      var point = event.points && event.points[0];
      var target = point && point.customdata;
      if (typeof target === "string" && target.charAt(0) === "/") window.location.href = target;
    });
  }

  function renderAll(root) {
    var charts = (root || document).querySelectorAll("[data-chart]");
    if (!charts.length) return;
    withPlotly(function () { charts.forEach(draw); });
  }

  function resizeAll() {
    if (!window.Plotly) return;
    document.querySelectorAll("[data-chart][data-rendered='1']").forEach(function (el) {
      window.Plotly.Plots.resize(el);
    });
  }

  window.ClusterCharts = { renderAll: renderAll, resizeAll: resizeAll };
  // Printing narrows the page: redraw at the print width so no chart is cut.
  window.addEventListener("beforeprint", resizeAll);
  window.addEventListener("afterprint", resizeAll);
  // Print media applied without a print dialog (a headless browser's PDF, print preview emulation): the
  // same redraw, once the print styles have laid the page out.
  var printing = window.matchMedia && window.matchMedia("print");
  if (printing && printing.addEventListener) {
    printing.addEventListener("change", function () { window.requestAnimationFrame(resizeAll); });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", function () { renderAll(document); });
  } else {
    renderAll(document);
  }
})();
