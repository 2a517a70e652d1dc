// Node.js http.createServer answering 200 "Hello, world!" with keep-alive, whose event loop
// freezes for --pause-ms (default 100) once every --period-ms (default 1000): a busy-wait, as a
// stop-the-world garbage collection would freeze it. Requests that arrive during a pause wait
// until it ends; the open-loop tests compare nodelay's corrected and uncorrected percentiles
// with what this pattern implies. The first pause comes one period after "PORT <n>" is
// printed (one pause runs before, so the JIT has compiled the loop).
// Binds 127.0.0.1 port 0; runs until killed.
//
// Usage: node node_pause_server.js [--pause-ms N] [--period-ms N]
const http = require("http");

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number(args[at + 1]) : fallback;
};
const pauseMs = option("--pause-ms", 100);
const periodMs = option("--period-ms", 1000);
if (!(pauseMs >= 0 && periodMs > pauseMs)) {
  console.error("need 0 <= --pause-ms < --period-ms");
  process.exit(2);
}
const body = Buffer.from("Hello, world!");

function freeze() {
  const until = process.hrtime.bigint() + BigInt(Math.round(pauseMs * 1e6));
  while (process.hrtime.bigint() < until) {
    // The whole event loop waits, as in a stop-the-world pause.
  }
}

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, "127.0.0.1", () => {
  freeze();
  setInterval(freeze, periodMs);
  process.stdout.write(`PORT ${server.address().port}\n`);
});
