/* The design editor: builds the spec from the form, saves it through the API (POST, then PATCH with the
   version), evaluates it and swaps in the results without a page reload. Field errors from the API's
   envelope appear beside their fields. */
(function () {
  "use strict";
  var form = document.getElementById("design-form");
  if (!form) return;
  var api = window.ClusterApi;
  var initial = JSON.parse(document.getElementById("initial-spec").textContent);
  var status = document.getElementById("save-status");
  var busy = false, pending = false, timer = null;

  function field(name) { return form.querySelector('[data-field="' + name + '"]'); }
  function text(name) { var el = field(name); return el ? el.value.trim() : ""; }
  function number(name) {
    var raw = text(name);
    if (raw === "") return undefined;
    var value = Number(raw);
    return isNaN(value) ? raw : value;
  }
  function setIf(target, key, value) { if (value !== undefined && value !== "") target[key] = value; }

  function buildSpec() {
    var spec = JSON.parse(JSON.stringify(initial));
    spec.workload = spec.workload || {};
    spec.workload.model = { preset: text("spec.workload.model.preset") };
    spec.workload.training = Object.assign({}, spec.workload.training || {});
    setIf(spec.workload.training, "tokens", number("spec.workload.training.tokens"));
    setIf(spec.workload.training, "global_batch_tokens", number("spec.workload.training.global_batch_tokens"));
    spec.workload.training.precision = text("spec.workload.training.precision");
    var cluster = spec.cluster = Object.assign({}, spec.cluster || {});
    cluster.accelerator = text("spec.cluster.accelerator");
    cluster.fabric = text("spec.cluster.fabric");
    cluster.storage = text("spec.cluster.storage");
    ["gpus_per_node", "nodes", "oversubscription"].forEach(function (k) { setIf(cluster, k, number("spec.cluster." + k)); });
    var mode = form.querySelector('input[name="layout-mode"]:checked');
    if (mode && mode.value === "fixed") {
      var layout = {};
      ["tp", "pp", "dp", "cp", "vpp", "micro_batch"].forEach(function (k) { setIf(layout, k, number("spec.parallelism." + k)); });
      layout.recompute = text("spec.parallelism.recompute");
      layout.sharding = text("spec.parallelism.sharding");
      layout.sequence_parallel = field("spec.parallelism.sequence_parallel").checked;
      spec.parallelism = layout;
    } else {
      spec.parallelism = "search";
    }
    var costs = spec.costs = Object.assign({}, spec.costs || {});
    setIf(costs, "horizon_years", number("spec.costs.horizon_years"));
    setIf(costs, "utilization", number("spec.costs.utilization"));
    costs.on_prem = Object.assign({}, costs.on_prem || {});
    ["server_usd", "node_power_kw", "usd_per_kwh"].forEach(function (k) {
      var value = number("spec.costs.on_prem." + k);
      if (value === undefined) delete costs.on_prem[k]; else costs.on_prem[k] = value;
    });
    var offering = text("spec.costs.cloud.0.offering");
    var others = (costs.cloud || []).slice(1);
    if (offering) {
      var previous = (costs.cloud || [])[0] || {};
      var choice = { offering: offering, pricing_models: Array.prototype.map.call(
        form.querySelectorAll('input[name="pricing"]:checked'), function (el) { return el.value; }) };
      if (previous.offering === offering && previous.usd_per_node_hour) choice.usd_per_node_hour = previous.usd_per_node_hour;
      costs.cloud = [choice].concat(others);
    } else {
      costs.cloud = others;
    }
    return spec;
  }

  function say(message) { status.textContent = message; }

  function refreshResults(designId) {
    return fetch("/designs/" + designId + "/results/", { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error("results " + r.status); return r.text(); })
      .then(function (html) {
        var container = document.getElementById("results-container");
        container.innerHTML = html;
        window.ClusterCharts.renderAll(container);
      });
  }

  function waitForAnalysis(url) {
    return api.request("GET", url).then(function (res) {
      var s = res.data && res.data.status;
      if (s === "succeeded") return res;
      if (s === "failed") throw new Error(res.data.error || "evaluation failed");
      var p = (res.data && res.data.progress) || {};
      say("Searching layouts… " + Math.round(100 * (p.fraction || 0)) + " %");
      return new Promise(function (resolve) { setTimeout(resolve, 800); }).then(function () { return waitForAnalysis(url); });
    });
  }

  function save() {
    if (busy) { pending = true; return; }
    busy = true;
    api.clearErrors(form);
    var designId = form.dataset.design;
    var body = { name: text("name"), description: field("description").value, visibility: text("visibility"), spec: buildSpec() };
    var call;
    if (designId) {
      body.version = Number(form.dataset.version);
      call = api.request("PATCH", "/api/v1/designs/" + designId + "/", body);
    } else {
      call = api.request("POST", "/api/v1/designs/", body);
    }
    say("Saving…");
    call.then(function (res) {
      if (!res.ok) {
        api.showErrors(form, res.data);
        throw new Error(res.status === 409 ? "Someone saved this design since you opened it: reload to see their change."
                                           : "Not saved: fix the fields marked in red.");
      }
      form.dataset.design = res.data.id;
      form.dataset.version = res.data.version;
      if (!designId) history.replaceState(null, "", "/designs/" + res.data.id + "/edit/");
      say("Saved version " + res.data.version + "; evaluating…");
      return api.request("POST", "/api/v1/designs/" + res.data.id + "/evaluate/").then(function (ev) {
        if (ev.status === 202) return waitForAnalysis(ev.data.url);
        if (!ev.ok) { api.showErrors(form, ev.data); throw new Error("Evaluation failed."); }
        return ev;
      }).then(function () { return refreshResults(res.data.id); })
        .then(function () { say("Saved version " + res.data.version + " and evaluated."); });
    }).catch(function (err) {
      say(err.message);
    }).then(function () {
      busy = false;
      if (pending) { pending = false; save(); }
    });
  }

  form.addEventListener("submit", function (event) { event.preventDefault(); clearTimeout(timer); save(); });
  form.addEventListener("change", function (event) {
    if (event.target.name === "layout-mode") {
      document.getElementById("layout-fields").hidden = event.target.value !== "fixed";
    }
    // Only an already-saved design re-evaluates on change: a new one is created by the button.
    if (form.dataset.design && document.getElementById("auto-refresh").checked && event.target.id !== "auto-refresh") {
      clearTimeout(timer);
      timer = setTimeout(save, 700);
    }
  });
})();
