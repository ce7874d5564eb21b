// egg web's terminal: xterm.js attached to one session over /ws/ID, like egg attach. Its rows are
// text in the DOM (screen-reader mode). Keys and the page's size reach the session only when
// egg web was started with --allow-input; links in the output are never opened.
"use strict";
(function () {
  const element = document.getElementById("terminal");
  const status = document.getElementById("status");
  const id = element.dataset.session;
  const input = element.dataset.input === "1";
  const term = new Terminal({
    screenReaderMode: true,
    disableStdin: !input,
    scrollback: 5000,
    linkHandler: { activate() {} },
  });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(element);
  fit.fit();
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const key = encodeURIComponent(eggWebKey());
  const url = `${scheme}//${location.host}/ws/${encodeURIComponent(id)}?rows=${term.rows}&cols=${term.cols}&key=${key}`;
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  let ended = false;

  function end(text) {
    if (ended) return;
    ended = true;
    term.write(`\r\n${text}\r\n`);
    status.textContent = text;
  }

  socket.onmessage = (event) => {
    if (typeof event.data !== "string") {
      term.write(new Uint8Array(event.data));
      return;
    }
    const message = JSON.parse(event.data);
    if ("exit" in message) end(`[exited ${message.exit}]`);
    else if ("notice" in message) term.write(`\r\n[egg: ${message.notice}]\r\n`);
    else if ("error" in message) end(`[egg: ${message.error}]`);
    else if ("closed" in message) end(`[${message.closed}]`);
  };
  socket.onclose = () => end("[disconnected: if egg web was restarted, open the URL it printed]");
  if (input) {
    const encoder = new TextEncoder();
    const send = (data) => socket.readyState === WebSocket.OPEN && socket.send(data);
    term.onData((data) => send(encoder.encode(data)));
    term.onBinary((data) => send(Uint8Array.from(data, (c) => c.charCodeAt(0))));
  }
  term.onResize(({ rows, cols }) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ resize: [rows, cols] }));
  });
  window.addEventListener("resize", () => fit.fit());
  term.focus();
})();
