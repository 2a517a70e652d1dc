// Node.js http.createServer answering 200 "Hello, world!" with keep-alive, and closing a
// keep-alive connection that stays idle past server.keepAliveTimeout (--idle-ms). Node
// announces the limit in a `Keep-Alive: timeout=<s>` response header (whole seconds, rounded
// down), so a client that reads it can retire the connection before reusing it into the
// server's close. Node closes later than it announces: v20 sets the socket's idle timeout to
// keepAliveTimeout + 1000 ms (HTTP_SERVER_KEEP_ALIVE_TIMEOUT_BUFFER in lib/_http_server.js),
// so with the default the header says timeout=2 and the FIN comes ~3 s after the response.
// Binds 127.0.0.1 port 0 and prints "PORT <n>" once listening; runs until killed.
//
// Usage: node node_idle_server.js [--idle-ms N (default 2000)]
const http = require("http");

const args = process.argv.slice(2);
const idleArg = args.indexOf("--idle-ms");
const idleMs = idleArg >= 0 ? Number(args[idleArg + 1]) : 2000;
const body = Buffer.from("Hello, world!");

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = idleMs;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
