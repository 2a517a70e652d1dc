// Node.js `http2` server: h2c by prior knowledge (http2.createServer), or, with --cert and
// --key, h2 over TLS with ALPN (http2.createSecureServer, allowHTTP1: true, so "http/1.1"
// is offered beside "h2"). Every path answers --body-bytes bytes of 'x' after --delay-ms;
// --max-streams is the SETTINGS_MAX_CONCURRENT_STREAMS it advertises. A request body is
// read whole before the answer.
//
// With --nagle it turns TCP_NODELAY off on each connection (socket.setNoDelay(false)) and
// sends the response HEADERS (res.flushHeaders) and the DATA (res.end) in two turns of
// the event loop: node's nghttp2 session writes what is pending once per turn, so they
// are two sends and Nagle holds the second until the client ACKs the first, which the
// client delays (~40 ms on Linux). Without --nagle the connection has TCP_NODELAY on and
// both frames leave in one send. Prints "PORT <n>" once listening; runs until killed.
//
// Flags: --body-bytes N (13), --max-streams N, --delay-ms D (0), --nagle,
// --cert FILE --key FILE (PEM).
const fs = require("fs");
const http2 = require("http2");

const args = process.argv.slice(2);
const known = ["--body-bytes", "--max-streams", "--delay-ms", "--cert", "--key", "--nagle"];
for (const arg of args) {
  if (arg.startsWith("--") && !known.includes(arg)) {
    console.error(`node_http2_server.js: unknown flag ${arg}`);
    process.exit(2);
  }
}
function flag(name, fallback) {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  if (i + 1 >= args.length) {
    console.error(`node_http2_server.js: ${name} needs a value`);
    process.exit(2);
  }
  return args[i + 1];
}
const body = Buffer.alloc(Number(flag("--body-bytes", "13")), "x");
const maxStreams = flag("--max-streams");
const delayMs = Number(flag("--delay-ms", "0"));
const nagle = args.includes("--nagle");
const certFile = flag("--cert");
const keyFile = flag("--key");
if (!certFile !== !keyFile) {
  console.error("node_http2_server.js: --cert and --key go together");
  process.exit(2);
}

const settings = maxStreams === undefined ? {} : { maxConcurrentStreams: Number(maxStreams) };
const server = certFile
  ? http2.createSecureServer({
      cert: fs.readFileSync(certFile),
      key: fs.readFileSync(keyFile),
      allowHTTP1: true,
      settings,
    })
  : http2.createServer({ settings });

// One handler for both protocols (the compatibility API): HTTP/2 streams, and the
// HTTP/1.1 connections the TLS server accepts (allowHTTP1).
server.on("request", (req, res) => {
  req.resume();
  req.on("end", () => (delayMs > 0 ? setTimeout(() => answer(res), delayMs) : answer(res)));
});

function answer(res) {
  res.writeHead(200, { "content-type": "text/plain", "content-length": body.length });
  if (!nagle) {
    res.end(body);
    return;
  }
  // HEADERS now (stream.respond); the DATA in a later turn of the event loop, a send of
  // its own.
  res.flushHeaders();
  setImmediate(() => res.end(body));
}
server.on("connection", (socket) => socket.setNoDelay(!nagle));
server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
