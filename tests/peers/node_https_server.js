// Node.js https.createServer with Nagle left on (noDelay: false), HTTP/1.1 with keep-alive.
//
// The handler answers in two ticks, as streaming code does: writeHead and a first
// res.write of part of the body (the head alone when the body has under two bytes) go out
// at once, the rest follows on setImmediate with res.end. Each tick is its own TLS record
// and its own TCP segment; with Nagle on, the second waits until the client ACKs the first,
// and the client delays that ACK (~40 ms on Linux): a server-side Nagle x delayed-ACK stall
// seen through TLS. Node turns TCP_NODELAY on by default since 18, so the stall needs
// noDelay: false, which is what users set to "send fewer packets"; --nodelay is the fix
// (noDelay: true). Prints "PORT <n>" once listening and runs until killed.
//
// Flags: --cert FILE --key FILE (PEM, required), --nodelay, --body-bytes N (default 13).
const fs = require("fs");
const https = require("https");

const args = process.argv.slice(2);
function flag(name, fallback) {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  if (i + 1 >= args.length) throw new Error(`${name} needs a value`);
  return args[i + 1];
}
const certFile = flag("--cert");
const keyFile = flag("--key");
if (!certFile || !keyFile) {
  console.error("usage: node_https_server.js --cert FILE --key FILE [--nodelay] [--body-bytes N]");
  process.exit(2);
}
const noDelay = args.includes("--nodelay");
const bodyBytes = Number(flag("--body-bytes", "13"));
if (!Number.isInteger(bodyBytes) || bodyBytes < 0) throw new Error("--body-bytes wants a count");
const body = Buffer.from("Hello, world!".repeat(Math.ceil(bodyBytes / 13) + 1)).subarray(0, bodyBytes);
// The first tick carries the head and the first half of the body, the second tick the rest.
const first = body.subarray(0, Math.floor(body.length / 2));
const rest = body.subarray(first.length);

const options = { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile), noDelay };
const server = https.createServer(options, (req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": body.length });
    if (first.length) res.write(first);
    else res.flushHeaders();
    setImmediate(() => res.end(rest));
  });
});
// A client that gives up on the handshake (an untrusted certificate) is expected.
server.on("tlsClientError", () => {});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
