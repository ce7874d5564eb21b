// egg web's page key (see plugins/web/gate.py): the login's redirect hands it over in the
// address's fragment, which no server ever sees; it is kept in this origin's storage (per port,
// unlike a cookie) and taken out of the address bar. The session list and the terminals send it.
"use strict";
function eggWebKey() {
  const given = new URLSearchParams(location.hash.slice(1)).get("key");
  if (given) {
    localStorage.setItem("egg-web-key", given);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return localStorage.getItem("egg-web-key") || "";
}
