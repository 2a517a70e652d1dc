// A line protocol server in Node.js `net` (memcached/Redis-inline style): each request is
// one line, each reply one line ("OK <n> <request>"), written in one socket.write.
// Prints "PORT <n>" once listening.
const net = require("net");

let served = 0;
const server = net.createServer((socket) => {
  let pending = "";
  socket.on("data", (chunk) => {
    pending += chunk.toString("latin1");
    let end;
    while ((end = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, end).replace(/\r$/, "");
      pending = pending.slice(end + 1);
      served += 1;
      socket.write(`OK ${served} ${line}\n`);
    }
  });
  socket.on("error", () => {});
});
server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
