// HelixFS web view: the history page follows the store live. Shipped in the package;
// no build step, nothing fetched from elsewhere. Polls the refs' version every 2 s and,
// when a ref moved, fetches this page again and swaps in its commit list.
(function () {
  "use strict";
  var body = document.body;
  var poll = body.dataset.poll;
  if (!poll) { return; }
  var version = body.dataset.version;
  function refresh() {
    fetch(location.pathname + location.search, { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector("main");
        if (fresh) { document.querySelector("main").innerHTML = fresh.innerHTML; }
        body.dataset.version = version;
        var note = document.createElement("div");
        note.className = "live";
        note.textContent = "updated " + new Date().toLocaleTimeString();
        document.body.appendChild(note);
        setTimeout(function () { note.remove(); }, 2500);
      });
  }
  function tick() {
    fetch(poll, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (data && data.version !== version) { version = data.version; refresh(); }
      })
      .catch(function () {})
      .then(function () { setTimeout(tick, 2000); });
  }
  setTimeout(tick, 2000);
})();
