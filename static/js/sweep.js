/* Sweep: POST the analysis, then poll its status and move the progress bar until it is done. */
(function () {
  "use strict";
  var api = window.ClusterApi;
  var bar = document.getElementById("progress-bar");
  var label = document.getElementById("progress-text");

  function show(fraction, text) {
    var pct = Math.round(100 * fraction);
    bar.value = pct; bar.textContent = pct + " %";
    label.textContent = text || pct + " %";
  }

  function poll(id) {
    api.request("GET", "/api/v1/analyses/" + id + "/").then(function (res) {
      var data = res.data || {};
      var p = data.progress || {};
      show(p.fraction || 0, (p.done || 0) + " of " + (p.total || "?") + " done (" + Math.round(100 * (p.fraction || 0)) + " %)");
      if (data.status === "succeeded") { show(1, "100 % done"); window.location.href = "/sweep/" + id + "/"; return; }
      if (data.status === "failed") { label.textContent = "Failed: " + (data.error || "unknown error"); return; }
      setTimeout(function () { poll(id); }, 700);
    });
  }

  var existing = document.getElementById("sweep-progress");
  if (existing && existing.dataset.analysis) poll(existing.dataset.analysis);

  var form = document.getElementById("sweep-form");
  if (!form) return;
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    api.clearErrors(form);
    var checked = function (name) {
      return Array.prototype.map.call(form.querySelectorAll('input[name="' + name + '"]:checked'), function (el) { return el.value; });
    };
    var nodes = document.getElementById("s-nodes").value.split(/[\s,]+/).filter(Boolean).map(Number);
    var params = {
      model: { preset: document.getElementById("s-preset").value },
      training: { tokens: Number(document.getElementById("s-tokens").value), global_batch_tokens: 4194304, precision: "bf16" },
      accelerators: checked("accelerators"), nodes: nodes, pricing_models: checked("pricing"),
      horizon_years: Number(document.getElementById("s-horizon").value),
      utilization: Number(document.getElementById("s-util").value),
    };
    document.getElementById("sweep-progress").hidden = false;
    show(0, "starting…");
    api.request("POST", "/api/v1/analyses/", { kind: "sweep", params: params }).then(function (res) {
      if (!res.ok) { api.showErrors(form, res.data); label.textContent = "Not started."; return; }
      history.replaceState(null, "", "/sweep/" + res.data.id + "/");
      poll(res.data.id);
    });
  });
})();
