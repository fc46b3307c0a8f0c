// The dashboard's panel, asked for again every few seconds and swapped in place
// (no reload). The session cookie goes with each request; a refused one (signed
// out, revoked token) goes back to the sign-in form.
(function () {
  "use strict";
  var panel = document.getElementById("panel");
  if (!panel) { return; }
  var every = Math.max(1, Number(panel.dataset.refresh || "2")) * 1000;
  var url = "/ui/panel?ns=" + encodeURIComponent(panel.dataset.ns);

  function tick() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "text/x-fragment" } })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) {
          window.location.assign("/ui/login");
          return null;
        }
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html !== null) {
          panel.innerHTML = html;
          panel.dataset.updated = String(Date.now());
        }
      })
      .catch(function () { /* the server is away: try again at the next tick */ })
      .then(function () { window.setTimeout(tick, every); });
  }
  window.setTimeout(tick, every);
})();
