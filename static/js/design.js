/* Design page, owner's share links: create one through the API with an optional label and expiry and show its
   URL once (only its hash is stored); revoke one; after either, swap in the server-rendered list again. */
(function () {
  "use strict";
  var panel = document.getElementById("share-panel");
  if (!panel) return;
  var form = document.getElementById("share-form");  // absent when the design cannot be evaluated now
  var out = document.getElementById("share-output");
  var list = document.getElementById("share-link-list");
  // Revoking reports here, not in `out`, so it never wipes a new link's URL before it was copied.
  var status = document.getElementById("share-status");
  var create = document.getElementById("create-share-link");
  var api = panel.dataset.apiUrl;  // the API's share-links URL, reversed by the page
  var DAY_MS = 24 * 3600 * 1000;

  function errorText(res, fallback) {
    var error = (res.data && res.data.error) || {};
    var fields = error.fields || {};
    var details = Object.keys(fields).map(function (name) { return name + ": " + fields[name].join(" "); });
    return details.length ? details.join(" · ") : (error.message || fallback);
  }

  function refreshList(note) {
    return fetch(panel.dataset.listUrl, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) { list.innerHTML = html; })
      .catch(function () { note.textContent += " Reload the page to see the list."; });
  }

  function showUrl(url) {
    out.innerHTML = "";
    var label = document.createElement("label");
    label.htmlFor = "share-url";
    label.textContent = "Read-only link (shown once; copy it now): ";
    var input = document.createElement("input");
    input.id = "share-url"; input.readOnly = true; input.size = 80; input.value = url;
    var open = document.createElement("a");
    open.href = url; open.textContent = "open"; open.id = "share-open"; open.target = "_blank"; open.rel = "noopener";
    out.appendChild(label); out.appendChild(input); out.appendChild(document.createTextNode(" ")); out.appendChild(open);
    input.select();
  }

  if (form) form.addEventListener("submit", function (event) {
    event.preventDefault();
    var days = parseInt(document.getElementById("share-expiry").value, 10);
    var body = {
      label: document.getElementById("share-label").value.trim(),
      expires_at: days > 0 ? new Date(Date.now() + days * DAY_MS).toISOString() : null,
      follow_approved: document.getElementById("share-follow-approved").checked
    };
    create.disabled = true;
    out.textContent = "Creating a link…";
    window.ClusterApi.request("POST", api, body)
      .then(function (res) {
        if (!res.ok) { out.textContent = errorText(res, "Could not create a link."); return null; }
        showUrl(res.data.url);
        document.getElementById("share-label").value = "";
        status.textContent = "";
        return refreshList(status);
      })
      .catch(function () { out.textContent = "Could not reach the server; the link was not created."; })
      .then(function () { create.disabled = false; });
  });

  list.addEventListener("click", function (event) {
    var button = event.target.closest(".revoke-share-link");
    if (!button) return;
    if (!window.confirm("Revoke this link? Whoever opens it will get “not found”. This cannot be undone.")) return;
    button.disabled = true;
    window.ClusterApi.request("POST", button.dataset.revokeUrl)
      .then(function (res) {
        if (!res.ok) { status.textContent = errorText(res, "Could not revoke the link."); button.disabled = false; return null; }
        status.textContent = "Link revoked.";
        return refreshList(status);
      })
      .catch(function () { status.textContent = "Could not reach the server; the link is unchanged."; button.disabled = false; });
  });
})();
