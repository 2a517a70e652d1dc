// Node.js http.createServer as shipped (noDelay is on by default since Node 18).
// Prints "PORT <n>" once listening.
const http = require("http");

const args = process.argv.slice(2);
const sizeArg = args.indexOf("--body-bytes");
const body = Buffer.alloc(sizeArg >= 0 ? Number(args[sizeArg + 1]) : 13, "x");

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": body.length });
    res.end(body);
  });
});
server.listen(0, "127.0.0.1", () => console.log(`PORT ${server.address().port}`));
