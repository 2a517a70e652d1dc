// Proxy A of issue 11's field case: an Express 4 app that pipes every request to service B
// with the `request` module (2.88.2), the code of the report:
//   app.use((req, res) => request(upstream + req.url, { agent }).pipe(res))
// `request` copies all of B's response headers onto A's response, Connection included.
//   --upstream PORT            B's port on 127.0.0.1
//   --agent fresh|keepalive    fresh: new http.Agent({ keepAlive: false }), the default agent
//                              of Node <= 18 the report ran (a new connection to B per
//                              request, and B answers Connection: close); keepalive:
//                              new http.Agent({ keepAlive: true }), as Node >= 19's default.
// Binds 127.0.0.1 port 0 and prints "PORT <n>" once listening.
const http = require("http");
const express = require("express");
const request = require("request");

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const upstreamPort = Number(option("--upstream", NaN));
const agentKind = option("--agent", "fresh");
if (!Number.isInteger(upstreamPort) || upstreamPort <= 0) {
  console.error("usage: proxy_a.js --upstream PORT [--agent fresh|keepalive]");
  process.exit(2);
}
if (agentKind !== "fresh" && agentKind !== "keepalive") {
  console.error(`--agent must be fresh or keepalive, not ${agentKind}`);
  process.exit(2);
}
const agent = new http.Agent({ keepAlive: agentKind === "keepalive" });
const upstreamUrl = `http://127.0.0.1:${upstreamPort}`;

const app = express();
app.use((req, res) => request(upstreamUrl + req.url, { agent }).pipe(res));

const server = app.listen(0, "127.0.0.1", () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
