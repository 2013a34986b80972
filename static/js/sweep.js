/* Sweep: POST the analysis, poll its status and move the progress bar while the workers run, then swap the
   heatmaps and the Pareto chart in under the finished bar (no page reload, so the bar stays readable at 100 %). */
(function () {
  "use strict";
  var api = window.ClusterApi;
  var box = document.getElementById("sweep-progress");
  var bar = document.getElementById("progress-bar");
  var label = document.getElementById("progress-text");
  var results = document.getElementById("sweep-results");
  var POLL_MS = 500;
  if (!box || !bar) return;
  var urls = box.dataset;  // the API's and the pages' URLs, reversed by the template

  function show(fraction, text) {
    // Never move backwards: a late answer to an earlier poll must not undo a newer one.
    var pct = Math.max(Number(bar.value) || 0, Math.round(100 * fraction));
    bar.value = pct; bar.textContent = pct + " %";
    label.textContent = text || pct + " %";
  }

  function setStatus(text) {
    var el = document.getElementById("sweep-status");
    if (el) el.textContent = text;
  }

  function loadResults(id) {
    return fetch(api.url(urls.resultsUrl, id), { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error("results " + r.status); return r.text(); })
      .then(function (html) {
        results.innerHTML = html;
        window.ClusterCharts.renderAll(results);
      });
  }

  function poll(id) {
    api.request("GET", api.url(urls.apiDetailUrl, id)).then(function (res) {
      var data = res.data || {};
      var p = data.progress || {};
      if (data.status === "succeeded") {
        show(1, (p.total || "All") + " of " + (p.total || "all") + " done (100 %)");
        setStatus("succeeded");
        return loadResults(id).catch(function () { window.location.href = api.url(urls.pageUrl, id); });
      }
      if (data.status === "failed") { setStatus("failed"); label.textContent = "Failed: " + (data.error || "unknown error"); return; }
      if (res.ok) {
        setStatus(data.status || "");
        show(p.fraction || 0, (p.done || 0) + " of " + (p.total || "?") + " done (" + Math.round(100 * (p.fraction || 0)) + " %)");
      }
      setTimeout(function () { poll(id); }, POLL_MS);
    }, function () { setTimeout(function () { poll(id); }, 2 * POLL_MS); });
  }

  if (box.dataset.analysis) poll(box.dataset.analysis);

  var form = document.getElementById("sweep-form");
  if (!form) return;
  var defaults = JSON.parse(document.getElementById("sweep-defaults").textContent);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    api.clearErrors(form);
    var checked = function (name) {
      return Array.prototype.map.call(form.querySelectorAll('input[name="' + name + '"]:checked'), function (el) { return el.value; });
    };
    var nodes = document.getElementById("s-nodes").value.split(/[\s,]+/).filter(Boolean).map(Number);
    var params = {
      model: { preset: document.getElementById("s-preset").value },
      // The design defaults (clusterdesigner/engine/cost/defaults.py) for what the form does not ask.
      training: Object.assign({}, defaults.training, { tokens: Number(document.getElementById("s-tokens").value) }),
      accelerators: checked("accelerators"), nodes: nodes, pricing_models: checked("pricing"),
      horizon_years: Number(document.getElementById("s-horizon").value),
      utilization: Number(document.getElementById("s-util").value),
    };
    results.innerHTML = "";
    bar.value = 0;
    box.hidden = false;
    show(0, "starting…");
    var button = document.getElementById("start-sweep");
    button.disabled = true;
    api.request("POST", urls.apiListUrl, { kind: "sweep", params: params }).then(function (res) {
      button.disabled = false;
      if (!res.ok) { api.showErrors(form, res.data); label.textContent = "Not started."; return; }
      box.dataset.analysis = res.data.id;
      history.replaceState(null, "", api.url(urls.pageUrl, res.data.id));
      poll(res.data.id);
    }, function () { button.disabled = false; label.textContent = "Not started: the server did not answer."; });
  });
})();
