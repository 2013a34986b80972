/* Design page: create a share link through the API and show its URL once (only its hash is stored). */
(function () {
  "use strict";
  var button = document.getElementById("create-share-link");
  if (!button) return;
  button.addEventListener("click", function () {
    var out = document.getElementById("share-output");
    out.textContent = "Creating a link…";
    window.ClusterApi.request("POST", "/api/v1/designs/" + button.dataset.design + "/share-links/", { label: "" })
      .then(function (res) {
        if (!res.ok) { out.textContent = (res.data.error && res.data.error.message) || "Could not create a link."; return; }
        out.innerHTML = "";
        var label = document.createElement("label");
        label.htmlFor = "share-url";
        label.textContent = "Read-only link (shown once; copy it now): ";
        var input = document.createElement("input");
        input.id = "share-url"; input.readOnly = true; input.size = 80; input.value = res.data.url;
        var open = document.createElement("a");
        open.href = res.data.url; open.textContent = " open"; open.id = "share-open";
        out.appendChild(label); out.appendChild(input); out.appendChild(open);
        input.select();
      });
  });
})();
