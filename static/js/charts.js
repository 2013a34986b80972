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

  function draw(el) {
    if (el.dataset.drawn === "1" || !window.Plotly) return;
    var source = document.getElementById(el.dataset.chart);
    if (!source) return;
    var figure = JSON.parse(source.textContent);
    el.dataset.drawn = "1";
    window.Plotly.newPlot(el, figure.data, figure.layout, CONFIG).then(function () {
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
