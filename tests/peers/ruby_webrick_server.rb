#!/usr/bin/env ruby
# Ruby's WEBrick (Debian ruby + ruby-webrick) as shipped, HTTP/1.1 keep-alive: it writes the
# response head and then the body in separate writes on a socket with Nagle on, the classic
# server-side Nagle x delayed-ACK stall. --nodelay applies the fix a WEBrick user would:
# TCP_NODELAY on the server's listening sockets (accepted sockets inherit it on Linux).
# Usage: ruby_webrick_server.rb [--nodelay] [--body-bytes N]. Prints "PORT <n>" once bound.
require "optparse"
require "socket"
require "webrick"

nodelay = false
body_bytes = 13
OptionParser.new do |opts|
  opts.on("--nodelay") { nodelay = true }
  opts.on("--body-bytes N", Integer) { |n| body_bytes = n }
end.parse!
body = "x" * body_bytes

server = WEBrick::HTTPServer.new(
  BindAddress: "127.0.0.1",
  Port: 0,
  Logger: WEBrick::Log.new(File::NULL),
  AccessLog: []
)
server.listeners.each { |s| s.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1) } if nodelay
server.mount_proc("/") do |_request, response|
  response["Content-Type"] = "text/plain"
  response.body = body
end
$stdout.puts "PORT #{server.config[:Port]}"
$stdout.flush
server.start
