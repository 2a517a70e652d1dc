// Node.js `net` server speaking just enough HTTP/1.1: head and body in two socket.write()
// calls, as hand-written Node servers do. Nagle is on by default for `net` sockets;
// --nodelay applies the fix (socket.setNoDelay(true)). Prints "PORT <n>" once listening.
const net = require("net");

const args = process.argv.slice(2);
const nodelay = args.includes("--nodelay");
const sizeArg = args.indexOf("--body-bytes");
const bodyBytes = sizeArg >= 0 ? Number(args[sizeArg + 1]) : 13;
const body = Buffer.alloc(bodyBytes, "x");
const head = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${bodyBytes}\r\n\r\n`;

const server = net.createServer((socket) => {
  socket.setNoDelay(nodelay);
  let pending = "";
  socket.on("data", (chunk) => {
    pending += chunk.toString("latin1");
    let end;
    while ((end = pending.indexOf("\r\n\r\n")) >= 0) {
      pending = pending.slice(end + 4);
      socket.write(head);
      socket.write(body);
    }
  });
  socket.on("error", () => {});
});
server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
