/* fetch wrapper for the REST API: JSON in and out, the CSRF token, and the error envelope's fields. */
(function () {
  "use strict";
  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) return decodeURIComponent(match[1]);
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function request(method, url, body) {
    var options = { method: method, credentials: "same-origin",
                    headers: { "Accept": "application/json", "X-CSRFToken": csrfToken() } };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    return fetch(url, options).then(function (response) {
      var type = response.headers.get("Content-Type") || "";
      var parse = type.indexOf("json") >= 0 ? response.json() : response.text();
      return parse.then(function (data) { return { status: response.status, ok: response.ok, data: data }; });
    });
  }

  function label(path) {
    var last = String(path).split(".").filter(function (p) { return !/^\d+$/.test(p); }).pop() || "input";
    last = last.replace(/_/g, " ");
    return last.charAt(0).toUpperCase() + last.slice(1);
  }

  function showErrors(form, envelope) {
    clearErrors(form);
    var error = (envelope && envelope.error) || {};
    var fields = error.fields || {};
    var unplaced = [];
    Object.keys(fields).forEach(function (name) {
      // The most specific error slot whose name is a prefix of the field's path.
      var path = name, slot = null;
      while (path && !slot) {
        slot = form.querySelector('[data-error-for="' + path + '"]');
        if (!slot) path = path.indexOf(".") >= 0 ? path.slice(0, path.lastIndexOf(".")) : "";
      }
      var text = fields[name].join(" ");
      if (slot) {
        slot.textContent = (slot.textContent ? slot.textContent + " " : "") + text;
        var input = slot.parentElement.querySelector("input, select, textarea");
        if (!slot.id) slot.id = "error-" + path.replace(/[^\w-]/g, "-");
        if (input) { input.setAttribute("aria-invalid", "true"); input.setAttribute("aria-describedby", slot.id); }
        // An error inside a closed section (the editor's "Owning assumptions") opens it, so it is seen.
        var section = slot.closest("details");
        if (section) section.open = true;
      } else {
        unplaced.push(label(name) + ": " + text);
      }
    });
    // Above the form, words for people: the field's name, never its dotted spec path (that is for the API).
    var box = form.querySelector("#form-error");
    if (box) box.textContent = unplaced.length ? unplaced.join(" · ")
                                               : (Object.keys(fields).length ? "Fix the fields marked in red below."
                                                                              : (error.message || ""));
  }

  function clearErrors(form) {
    form.querySelectorAll(".field-error").forEach(function (el) { el.textContent = ""; });
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
    var box = form.querySelector("#form-error");
    if (box) box.textContent = "";
  }

  // The pages give URLs reversed by Django (data-*-url attributes); one that names an object not known when the
  // page was drawn is reversed with the id 0 ({% url 'name' 0 %}), and this puts the id in its place.
  function url(template, id) { return template.replace("/0/", "/" + encodeURIComponent(id) + "/"); }

  window.ClusterApi = { request: request, showErrors: showErrors, clearErrors: clearErrors, url: url };
})();
