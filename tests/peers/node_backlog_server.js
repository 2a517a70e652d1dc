// Node.js http.createServer with a small listen backlog and a CPU-bound handler.
// While a request's synchronous busy work holds the event loop, nothing accepts: new
// connections pile up in the kernel's accept queue, which overflows under a burst (backlog 2),
// so the kernel drops SYNs (or the handshake's last ACK) and clients wait for a retransmission
// after the 1 s initial RTO (then 3 s). With a large backlog (--backlog 511, Node's default)
// the same burst only queues.
//
// Each request does --work-ms of busy work on the event loop, then answers 200
// "Hello, world!" with Connection: close, so every request needs a new connection.
// Binds 127.0.0.1 port 0 and prints "PORT <n>" once listening; runs until killed.
//
// Usage: node node_backlog_server.js [--backlog N (default 2)] [--work-ms M (default 3)]
const http = require("http");

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}
const backlog = option("--backlog", 2);
const workMs = option("--work-ms", 3);
const body = Buffer.from("Hello, world!");

function busyWork(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin: a CPU-bound handler blocks the event loop the same way
  }
}

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    busyWork(workMs);
    res.writeHead(200, {
      "Content-Type": "text/plain",
      "Content-Length": body.length,
      Connection: "close",
    });
    res.end(body);
  });
});
server.listen({ host: "127.0.0.1", port: 0, backlog }, () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
