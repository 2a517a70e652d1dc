// Node.js http server that turns TCP_NODELAY off on every connection it accepts
// (socket.setNoDelay(false) in a "connection" handler, as some servers do to "save
// packets"), and writes each response's head and body in two writes: a keep-alive client
// waits for its delayed ACK on every response but the first. `nodelay fix` on its
// listener cannot help: the program turns the option off again on each new connection.
// Prints "PORT <n>" once listening.
const http = require("http");

const body = Buffer.alloc(13, "x");

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": body.length });
    res.flushHeaders();
    // The body in a later turn of the event loop: a write of its own.
    setImmediate(() => res.end(body));
  });
});
server.on("connection", (socket) => socket.setNoDelay(false));
server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
