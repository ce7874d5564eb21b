// egg web's session list: /api/sessions every second, drawn with textContent only (a session's
// name or directory is a sandbox's text: never markup).
"use strict";
(function () {
  const body = document.querySelector("#sessions tbody");
  const empty = document.getElementById("empty");
  const KEYS = ["id", "name", "agent", "state", "cwd", "clients", "idle"];

  function cell(text) {
    const td = document.createElement("td");
    td.textContent = text === null || text === undefined ? "-" : String(text);
    return td;
  }

  function draw(sessions) {
    const rows = sessions.map((s) => {
      const tr = document.createElement("tr");
      tr.dataset.session = s.id;
      for (const key of KEYS) {
        let value = s[key];
        if (key === "idle" && typeof value === "number") value = Math.round(value) + " s";
        const td = cell(value);
        if (key === "id") {
          td.textContent = "";
          const a = document.createElement("a");
          a.href = "/s/" + encodeURIComponent(s.id);
          a.textContent = s.id;
          td.appendChild(a);
        }
        tr.appendChild(td);
      }
      return tr;
    });
    body.replaceChildren(...rows);
    empty.hidden = rows.length > 0;
  }

  const key = eggWebKey();

  async function refresh() {
    try {
      const answer = await fetch("/api/sessions", {
        credentials: "same-origin",
        cache: "no-store",
        headers: { Authorization: `Bearer ${key}` },
      });
      if (answer.ok) draw(await answer.json());
      else if (answer.status === 401) {
        empty.textContent = "egg web does not know this page: open the URL it printed";
        empty.hidden = false;
      }
    } catch (e) {
      /* the server is gone or restarting: try again */
    }
    setTimeout(refresh, 1000);
  }
  refresh();
})();
