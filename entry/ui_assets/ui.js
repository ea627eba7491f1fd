// bosun web view: a running run's page refreshes its body every 2 s (server-rendered, escaped HTML) until it ends.
(function () {
  "use strict";
  var body = document.getElementById("run-body");
  if (!body) { return; }
  var open = function () {
    var ids = [];
    body.querySelectorAll("details[open][id]").forEach(function (d) { ids.push(d.id); });
    return ids;
  };
  var refresh = function () {
    if (body.getAttribute("data-running") !== "1") { return; }
    if (body.contains(document.activeElement) && document.activeElement.tagName === "INPUT") {
      setTimeout(refresh, 2000);  // someone is typing a message: do not replace the form under them
      return;
    }
    var keep = open();
    fetch("/run/fragment?id=" + encodeURIComponent(body.getAttribute("data-id")), {credentials: "same-origin"})
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("run-body");
        if (!fresh) { return; }
        body.innerHTML = fresh.innerHTML;
        body.setAttribute("data-running", fresh.getAttribute("data-running"));
        keep.forEach(function (id) { var d = document.getElementById(id); if (d) { d.open = true; } });
      })
      .catch(function () {})
      .then(function () { setTimeout(refresh, 2000); });
  };
  setTimeout(refresh, 2000);
}());
