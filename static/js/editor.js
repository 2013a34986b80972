/* The design editor: builds the spec from the form; each change writes the user's draft through the API
   (PUT …/draft/) and swaps in the draft's results, and "Save version" saves the draft with its message as
   the next version (POST …/draft/save/; a new design: POST), evaluates it and swaps in the results, all
   without a page reload. Field errors from the API's
   envelope appear beside their fields. */
(function () {
  "use strict";
  var form = document.getElementById("design-form");
  if (!form) return;
  var api = window.ClusterApi;
  var urls = form.dataset;  // the API's and the pages' URLs, reversed by the template
  var initial = JSON.parse(document.getElementById("initial-spec").textContent);
  var status = document.getElementById("save-status");

  function field(name) { return form.querySelector('[data-field="' + name + '"]'); }
  function text(name) { var el = field(name); return el ? el.value.trim() : ""; }
  function number(name) {
    var raw = text(name);
    if (raw === "") return undefined;
    var value = Number(raw);
    return isNaN(value) ? raw : value;
  }
  function setIf(target, key, value) { if (value !== undefined && value !== "") target[key] = value; }

  // --- Cloud offerings: 0 to MAX rows, each an offering, its pricing models and optional negotiated prices.
  var MAX_CLOUD = 6;
  var rowsBox = document.getElementById("cloud-rows");
  var addButton = document.getElementById("add-cloud");
  var rowTemplate = document.getElementById("cloud-row-template");
  var catalogPrices = JSON.parse((document.getElementById("catalog-prices") || {}).textContent || "{}");

  function cloudRows() { return rowsBox ? Array.prototype.slice.call(rowsBox.querySelectorAll(".cloud-row")) : []; }

  function renumber(row, index) {
    // Every id, for, name, data-field and error slot carries the row's index: rewrite them in place.
    var attrs = ["id", "for", "name", "data-field", "data-error-for", "aria-describedby"];
    [row].concat(Array.prototype.slice.call(row.querySelectorAll("*"))).forEach(function (el) {
      attrs.forEach(function (a) {
        var v = el.getAttribute(a);
        if (v === null) return;
        el.setAttribute(a, v.replace(/cloud-(row-)?(\d+|__i__)/g, function (_, r) { return "cloud-" + (r || "") + index; })
                            .replace(/cloud\.(\d+|__i__)(?=\.|$)/g, "cloud." + index));
      });
    });
    row.dataset.index = index;
    row.querySelector(".row-number").textContent = index + 1;
    row.querySelector(".remove-cloud").setAttribute("aria-label", "Remove cloud offering " + (index + 1));
  }

  function updateCloudControls() {
    var count = cloudRows().length;
    if (addButton) addButton.disabled = count >= MAX_CLOUD;
    var note = document.getElementById("cloud-count");
    if (note) note.textContent = count ? count + " of " + MAX_CLOUD + (count >= MAX_CLOUD ? " (the most a design compares)" : "")
                                       : "None: owning only.";
  }

  function money(n) { return n.toLocaleString("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 }); }

  function showCatalogPrices(row) {
    // The catalog price each blank input stands for, scaled from the instance to the design's node size.
    var entry = catalogPrices[row.querySelector(".cloud-offering").value];
    var gpn = Number(text("spec.cluster.gpus_per_node")) || (entry && entry.gpu_count) || 1;
    row.querySelectorAll("input[data-price-model]").forEach(function (el) {
      var price = entry && entry.usd_per_hour[el.dataset.priceModel];
      el.placeholder = price === undefined ? (entry ? "not in catalog" : "")
                                           : "catalog $" + money(price * gpn / entry.gpu_count);
    });
    updatePricingChoices(row);
  }

  function updatePricingChoices(row) {
    // A pricing model with no catalog price can be compared only with a negotiated price: until one is typed,
    // its box is disabled and says why (the API refuses a ticked model without a price).
    var entry = catalogPrices[row.querySelector(".cloud-offering").value];
    row.querySelectorAll("input[data-pricing-model]").forEach(function (box) {
      var model = box.dataset.pricingModel;
      var price = row.querySelector('input[data-price-model="' + model + '"]');
      var priced = !entry || entry.usd_per_hour[model] !== undefined || (price && price.value.trim() !== "");
      box.disabled = !priced;
      if (!priced) box.checked = false;
      var note = box.parentNode.querySelector(".unpriced");
      if (!note) {
        note = document.createElement("span");
        note.className = "unpriced caption";
        box.parentNode.appendChild(note);
      }
      note.textContent = priced ? "" : " (no catalog price: enter one below to compare it)";
    });
  }

  function addCloudRow() {
    if (!rowTemplate || cloudRows().length >= MAX_CLOUD) return null;
    var holder = document.createElement("div");
    holder.innerHTML = rowTemplate.innerHTML.trim();
    var row = holder.firstElementChild;
    rowsBox.appendChild(row);
    renumber(row, cloudRows().length - 1);
    row.querySelector('input[data-pricing-model="on_demand"]').checked = true;
    updateCloudControls();
    return row;
  }

  function removeCloudRow(row) {
    var index = cloudRows().indexOf(row);
    row.remove();
    cloudRows().forEach(renumber);
    updateCloudControls();
    // Keep keyboard focus in the section: the row that took this one's place, else the add button.
    var next = cloudRows()[Math.min(index, cloudRows().length - 1)];
    (next ? next.querySelector(".cloud-offering") : addButton).focus();
  }

  function duplicateOfferings() {
    var seen = {}, errors = {};
    cloudRows().forEach(function (row, i) {
      var slug = row.querySelector(".cloud-offering").value;
      if (!slug) return;
      if (seen[slug] !== undefined) {
        errors["spec.costs.cloud." + i + ".offering"] = ["already compared in cloud offering " + (seen[slug] + 1) +
                                                         "; choose another or remove this row"];
      } else {
        seen[slug] = i;
      }
    });
    return errors;
  }

  if (addButton) {
    addButton.addEventListener("click", function () {
      var row = addCloudRow();
      if (row) row.querySelector(".cloud-offering").focus();
    });
  }
  if (rowsBox) {
    rowsBox.addEventListener("click", function (event) {
      var button = event.target.closest(".remove-cloud");
      if (!button) return;
      removeCloudRow(button.closest(".cloud-row"));
      scheduleDraft();
    });
    rowsBox.addEventListener("change", function (event) {
      if (event.target.classList.contains("cloud-offering")) showCatalogPrices(event.target.closest(".cloud-row"));
    });
    rowsBox.addEventListener("input", function (event) {
      if (event.target.dataset.priceModel) updatePricingChoices(event.target.closest(".cloud-row"));
    });
  }
  function matchOfferings() {
    // Offer only the instances that rent the design's accelerator (the API refuses any other).
    var accelerator = text("spec.cluster.accelerator");
    cloudRows().forEach(function (row) {
      row.querySelectorAll(".cloud-offering option[data-accelerator]").forEach(function (option) {
        option.disabled = option.dataset.accelerator !== accelerator;
      });
    });
  }
  var acceleratorField = field("spec.cluster.accelerator");
  if (acceleratorField) acceleratorField.addEventListener("change", matchOfferings);
  if (addButton) addButton.addEventListener("click", matchOfferings);
  matchOfferings();
  var gpnField = field("spec.cluster.gpus_per_node");
  if (gpnField) gpnField.addEventListener("change", function () { cloudRows().forEach(showCatalogPrices); });
  cloudRows().forEach(showCatalogPrices);
  updateCloudControls();

  // The model: the stored one, custom fields and all, while the preset stays as stored; another preset is
  // that preset alone (the stored fields shaped the old preset's variant, or a custom model, and are dropped).
  var initialModel = (initial.workload && initial.workload.model) || {};
  function presetKept() { return text("spec.workload.model.preset") === (initialModel.preset || ""); }
  function buildModel() {
    if (presetKept()) return JSON.parse(JSON.stringify(initialModel));
    return { preset: text("spec.workload.model.preset") };
  }
  var keptNote = document.getElementById("f-model-kept");
  var presetField = field("spec.workload.model.preset");
  if (keptNote && presetField) {
    var keptText = keptNote.textContent;
    presetField.addEventListener("change", function () {
      keptNote.textContent = presetKept() ? keptText
        : "Custom shape: " + keptNote.dataset.kept + " — dropped on save: another preset is chosen (choose " +
          (initialModel.preset || "Custom shape") + " again to keep it).";
    });
  }

  var LAYOUT_KEYS = ["tp", "pp", "dp", "cp", "vpp", "micro_batch", "recompute", "sharding", "sequence_parallel"];
  var storedLayout = initial.parallelism && typeof initial.parallelism === "object" ? initial.parallelism : null;
  function layoutValue(k) {
    if (k === "sequence_parallel") return field("spec.parallelism." + k).checked;
    return k === "recompute" || k === "sharding" ? text("spec.parallelism." + k) : number("spec.parallelism." + k);
  }
  var loadedFramework = text("spec.workload.training.framework");
  var loadedLayout = {};
  LAYOUT_KEYS.forEach(function (k) { loadedLayout[k] = layoutValue(k); });

  function buildSpec() {
    var spec = JSON.parse(JSON.stringify(initial));
    spec.workload = spec.workload || {};
    spec.workload.model = buildModel();
    spec.workload.training = Object.assign({}, spec.workload.training || {});
    setIf(spec.workload.training, "tokens", number("spec.workload.training.tokens"));
    // A batch in tokens other than the stored one replaces a stored global_batch_seqs (which the engine
    // prefers); left blank (the page shows a sequences-only batch so), the sequences are kept.
    var batchTokens = number("spec.workload.training.global_batch_tokens");
    if (batchTokens !== undefined && batchTokens !== spec.workload.training.global_batch_tokens) {
      delete spec.workload.training.global_batch_seqs;
    }
    setIf(spec.workload.training, "global_batch_tokens", batchTokens);
    spec.workload.training.precision = text("spec.workload.training.precision");
    // The framework: a stored one is kept as chosen; without one, the key is written only when the user picks a
    // stack other than the default the page showed (so an untouched design's spec stays as stored).
    var framework = text("spec.workload.training.framework");
    if (framework && ("framework" in spec.workload.training || framework !== loadedFramework)) {
      spec.workload.training.framework = framework;
    }
    // The attention kernel: blank leaves it to the framework profile (no key stored).
    var kernel = text("spec.workload.training.attention_kernel");
    if (kernel) spec.workload.training.attention_kernel = kernel;
    else delete spec.workload.training.attention_kernel;
    // The MoE dispatcher and routing: blank leaves them to the framework profile and dropless (no key stored).
    ["moe_dispatcher", "moe_load_balance"].forEach(function (k) {
      var chosen = text("spec.workload.training." + k);
      if (chosen) spec.workload.training[k] = chosen;
      else delete spec.workload.training[k];
    });
    // The optimizer: blank is Adam, the engine's default (no key stored).
    var optimizer = text("spec.workload.training.optimizer");
    if (optimizer) spec.workload.training.optimizer = optimizer;
    else delete spec.workload.training.optimizer;
    var cluster = spec.cluster = Object.assign({}, spec.cluster || {});
    cluster.accelerator = text("spec.cluster.accelerator");
    cluster.fabric = text("spec.cluster.fabric");
    cluster.storage = text("spec.cluster.storage");
    ["gpus_per_node", "nodes", "oversubscription"].forEach(function (k) { setIf(cluster, k, number("spec.cluster." + k)); });
    var mode = form.querySelector('input[name="layout-mode"]:checked');
    if (mode && mode.value === "fixed") {
      // Over the stored layout, so a key the form has no input for (ep) is kept, and a key the stored layout
      // left to the search stays searched unless its input was changed (the page says which).
      var layout = storedLayout ? Object.assign({}, storedLayout) : {};
      LAYOUT_KEYS.forEach(function (k) {
        var value = layoutValue(k);
        if (storedLayout && !(k in storedLayout) && value === loadedLayout[k]) return;
        if (value === undefined || value === "") delete layout[k]; else layout[k] = value;
      });
      spec.parallelism = layout;
    } else {
      spec.parallelism = "search";
    }
    var goals = {};
    setIf(goals, "deadline_days", number("spec.goals.deadline_days"));
    setIf(goals, "budget_usd", number("spec.goals.budget_usd"));
    setIf(goals, "budget_npv_usd", number("spec.goals.budget_npv_usd"));
    if (Object.keys(goals).length) spec.goals = goals; else delete spec.goals;
    // Serving: the fields shown, over what the section held (layout, stack, … kept); all blank = no section.
    var serving = Object.assign({}, spec.serving || {});
    var shown = 0;
    function servingPart(target, key, name) {
      var value = name.indexOf("precision") >= 0 ? text(name) : number(name);
      if (value === undefined || value === "") { delete target[key]; } else { target[key] = value; shown += 1; }
    }
    ["demand", "targets"].forEach(function (part) { serving[part] = Object.assign({}, serving[part] || {}); });
    ["requests_per_s", "output_tokens_per_day", "peak_to_mean"].forEach(function (k) { servingPart(serving.demand, k, "spec.serving.demand." + k); });
    ["ttft_s", "tpot_s", "percentile"].forEach(function (k) { servingPart(serving.targets, k, "spec.serving.targets." + k); });
    ["input_tokens", "output_tokens", "weight_precision", "kv_precision"].forEach(function (k) { servingPart(serving, k, "spec.serving." + k); });
    ["demand", "targets"].forEach(function (part) { if (!Object.keys(serving[part]).length) delete serving[part]; });
    if (shown) spec.serving = serving; else delete spec.serving;
    // The site: a saved one by id (the server fills in its fields; a planned date is kept), the inline one the
    // spec held, or none.
    var site = text("spec.site.id");
    if (site && site !== "inline") {
      var planned = spec.site && spec.site.planned_date;
      spec.site = { id: Number(site) };
      if (planned) spec.site.planned_date = planned;
    } else if (!site) {
      delete spec.site;
    }
    // RL post-training: the fields shown, over what the section held (reference model, … kept); every number
    // blank = no section. A select left on its "default" option stores no key (the engine's default).
    var rl = Object.assign({}, spec.rl || {});
    var rlShown = 0;
    ["prompts_per_step", "group_size", "prompt_tokens", "response_tokens_mean", "response_tokens_max", "steps",
     "algorithm", "mode", "placement"].forEach(function (k) {
      var name = "spec.rl." + k, el = field(name);
      var value = el && el.tagName === "SELECT" ? text(name) : number(name);
      if (value === undefined || value === "") { delete rl[k]; return; }
      rl[k] = value;
      // The selects show the stored (or default) choice, so only a number given makes a section.
      if (!el || el.tagName !== "SELECT") rlShown += 1;
    });
    // The rollout pool of its own (a mixed fleet): its nodes make one; the other fields over what it held.
    var pool = Object.assign({}, rl.rollout || {});
    var poolNodes = number("spec.rl.rollout.nodes");
    if (poolNodes === undefined || poolNodes === "") {
      delete rl.rollout;
    } else if (field("spec.rl.rollout.nodes")) {
      pool.nodes = poolNodes;
      var part = text("spec.rl.rollout.accelerator");
      if (part) pool.accelerator = part; else delete pool.accelerator;
      var poolGpn = number("spec.rl.rollout.gpus_per_node");
      if (poolGpn === undefined || poolGpn === "") delete pool.gpus_per_node; else pool.gpus_per_node = poolGpn;
      var server = number("spec.rl.rollout.on_prem.server_usd");
      pool.on_prem = Object.assign({}, pool.on_prem || {});
      if (server === undefined || server === "") delete pool.on_prem.server_usd; else pool.on_prem.server_usd = server;
      if (!Object.keys(pool.on_prem).length) delete pool.on_prem;
      var offer = text("spec.rl.rollout.cloud.0.offering");
      if (offer === "none") pool.cloud = [];
      else if (offer) {
        var first = (pool.cloud || [])[0];
        pool.cloud = [first && first.offering === offer ? first : { offering: offer }].concat((pool.cloud || []).slice(1));
      }
      else delete pool.cloud;
      rl.rollout = pool;
    }
    if (rl.mode === "async" && rl.off_policy_steps === undefined) rl.off_policy_steps = 1;
    if (rl.mode !== "async") delete rl.off_policy_steps;
    if (rlShown) spec.rl = rl; else delete spec.rl;
    var costs = spec.costs = Object.assign({}, spec.costs || {});
    setIf(costs, "horizon_years", number("spec.costs.horizon_years"));
    setIf(costs, "utilization", number("spec.costs.utilization"));
    costs.on_prem = Object.assign({}, costs.on_prem || {});
    // Every owning input (server price, power, electricity and the "Owning assumptions"): blank = default.
    form.querySelectorAll('[data-field^="spec.costs.on_prem."]').forEach(function (el) {
      var k = el.dataset.field.slice("spec.costs.on_prem.".length), value = number(el.dataset.field);
      if (value === undefined) delete costs.on_prem[k]; else costs.on_prem[k] = value;
    });
    // The money-over-time inputs (spec.costs.<section>.<name>): blank = default; an emptied section is dropped.
    form.querySelectorAll("[data-money]").forEach(function (el) {
      var path = el.dataset.field.slice("spec.costs.".length).split("."), section = path[0], k = path[1];
      var value = el.tagName === "SELECT" ? (el.value || undefined) : number(el.dataset.field);
      var part = costs[section] = Object.assign({}, costs[section] || {});
      if (value === undefined) delete part[k]; else part[k] = value;
      if (!Object.keys(part).length) delete costs[section];
    });
    costs.cloud = cloudRows().map(function (row) {
      var choice = {
        offering: row.querySelector(".cloud-offering").value,
        pricing_models: Array.prototype.map.call(row.querySelectorAll("input[data-pricing-model]:checked"),
                                                 function (el) { return el.value; }),
      };
      var prices = {};
      row.querySelectorAll("input[data-price-model]").forEach(function (el) {
        var raw = el.value.trim();
        if (raw !== "") prices[el.dataset.priceModel] = isNaN(Number(raw)) ? raw : Number(raw);
      });
      if (Object.keys(prices).length) choice.usd_per_node_hour = prices;
      return choice;
    });
    return spec;
  }

  function say(message) { status.textContent = message; }

  function refreshResults(urlTemplate, designId) {
    return fetch(api.url(urlTemplate, designId), { credentials: "same-origin" })
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

  // --- Drafts (issue #36): a change writes the user's draft of the design (PUT …/draft/) and evaluates it,
  // making no version; "Save version" writes the draft and saves it, with the message, as the next version.
  var banner = document.getElementById("draft-banner");
  var messageField = document.getElementById("version-message");
  var saveButton = document.getElementById("save-design");

  function formBody() {
    return { name: text("name"), description: field("description").value, visibility: text("visibility"), spec: buildSpec() };
  }

  function checkLocally(refusal) {
    api.clearErrors(form);
    var local = duplicateOfferings();
    if (Object.keys(local).length) {
      api.showErrors(form, { error: { message: "", fields: local } });
      throw new Error(refusal);
    }
  }

  function showDraft(draft) {
    if (!banner) return;
    banner.hidden = !draft;
    if (!draft) return;
    document.getElementById("draft-base").textContent = draft.base_version;
    document.getElementById("draft-stale").textContent = draft.base_version === draft.current_version ? ""
      : ": the design is now at v" + draft.current_version + ", saved since; discard this draft to edit v" + draft.current_version;
  }

  function putDraft(designId, refusal) {
    var body = formBody();
    body.version = Number(form.dataset.version);
    return api.request("PUT", api.url(urls.apiDraftUrl, designId), body).then(function (res) {
      if (!res.ok) { api.showErrors(form, res.data); throw new Error(refusal); }
      showDraft(res.data);
      return res;
    });
  }

  function writeDraft() {
    var designId = form.dataset.design, refusal = "Draft not evaluated: fix the fields marked in red.";
    checkLocally(refusal);
    say("Evaluating your draft…");
    return putDraft(designId, refusal)
      .then(function () { return refreshResults(urls.draftResultsUrl, designId); })
      .then(function () { say("Draft based on version " + form.dataset.version + " evaluated; not saved as a version."); });
  }

  function evaluateSaved(designId, number) {
    say("Saved version " + number + "; evaluating…");
    return api.request("POST", api.url(urls.apiEvaluateUrl, designId)).then(function (ev) {
      if (ev.status === 202) return waitForAnalysis(ev.data.url);
      if (!ev.ok) { api.showErrors(form, ev.data); throw new Error("Evaluation failed."); }
      return ev;
    }).then(function () { return refreshResults(urls.resultsUrl, designId); })
      .then(function () { say("Saved version " + number + " and evaluated."); });
  }

  function saved(res) {
    form.dataset.design = res.data.id;
    form.dataset.version = res.data.version;
    if (messageField) messageField.value = "";
    saveButton.textContent = "Save version " + (res.data.version + 1);
    showDraft(null);
    return evaluateSaved(res.data.id, res.data.version);
  }

  function save() {
    var designId = form.dataset.design, refusal = "Not saved: fix the fields marked in red.";
    var message = messageField ? messageField.value.trim() : "";
    checkLocally(refusal);
    say("Saving…");
    if (!designId) {
      var body = formBody();
      body.message = message;
      return api.request("POST", urls.apiListUrl, body).then(function (res) {
        if (!res.ok) { api.showErrors(form, res.data); throw new Error(refusal); }
        history.replaceState(null, "", api.url(urls.editUrl, res.data.id));
        return saved(res);
      });
    }
    return putDraft(designId, refusal).then(function () {
      return api.request("POST", api.url(urls.apiSaveUrl, designId), { message: message });
    }).then(function (res) {
      if (res.status === 409) {
        throw new Error("Someone saved this design since the version your draft is based on: your draft is kept; " +
                        "discard it to edit their version.");
      }
      if (!res.ok) { api.showErrors(form, res.data); throw new Error(refusal); }
      return saved(res);
    });
  }

  // One request at a time, in order; a save takes the place of a draft write waiting behind it (it writes the
  // draft itself first).
  var running = false, wantDraft = false, wantSave = false, timer = null;
  function pump() {
    if (running || !(wantSave || wantDraft)) return;
    var job = wantSave ? save : writeDraft;
    wantSave = false;
    wantDraft = false;
    running = true;
    Promise.resolve().then(job).catch(function (err) { say(err.message); })
      .then(function () { running = false; pump(); });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    clearTimeout(timer);
    wantSave = true;
    pump();
  });
  function scheduleDraft() {
    // Only an already-saved design has a draft: a new one is created by the button.
    if (form.dataset.design && document.getElementById("auto-refresh").checked) {
      clearTimeout(timer);
      timer = setTimeout(function () { wantDraft = true; pump(); }, 700);
    }
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "layout-mode") {
      document.getElementById("layout-fields").hidden = event.target.value !== "fixed";
    }
    if (event.target.id !== "auto-refresh" && event.target.id !== "version-message") scheduleDraft();
  });
})();
