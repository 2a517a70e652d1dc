// Service B of issue 11's field case: a plain Express 4 app answering a small JSON REST
// response, as shipped (Node's http server: TCP_NODELAY on, keep-alive with the default
// 5 s timeout). GET /_stats answers how many TCP connections B has accepted so far (that
// request's own connection included), so a test can tell whether proxy A reuses its
// upstream connections. Binds 127.0.0.1 port 0 and prints "PORT <n>" once listening.
const express = require("express");

const app = express();
let connections = 0;

app.get("/_stats", (req, res) => res.json({ connections }));

app.get("/api/items/:id", (req, res) => {
  res.json({ id: Number(req.params.id) || 0, name: "widget", price: 9.99, tags: ["a", "b"] });
});

app.use((req, res) => res.status(404).json({ error: "not found", path: req.path }));

const server = app.listen(0, "127.0.0.1", () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
server.on("connection", () => {
  connections += 1;
});
