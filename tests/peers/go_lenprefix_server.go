// A binary request/response server with 4-byte big-endian length prefixes, like many
// database and RPC protocols. It reads the whole request (prefix, then payload) before it
// answers, in one write, with Go's default TCP_NODELAY. The reply is the payload reversed.
// Prints "PORT <n>" once listening.
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
)

func serve(conn net.Conn) {
	defer conn.Close()
	reader := bufio.NewReader(conn)
	prefix := make([]byte, 4)
	for {
		if _, err := io.ReadFull(reader, prefix); err != nil {
			return
		}
		length := binary.BigEndian.Uint32(prefix)
		if length > 1<<20 {
			return
		}
		payload := make([]byte, length)
		if _, err := io.ReadFull(reader, payload); err != nil {
			return
		}
		reply := make([]byte, 4+len(payload))
		binary.BigEndian.PutUint32(reply, length)
		for i, b := range payload {
			reply[4+len(payload)-1-i] = b
		}
		if _, err := conn.Write(reply); err != nil {
			return
		}
	}
}

func main() {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("PORT %d\n", listener.Addr().(*net.TCPAddr).Port)
	for {
		conn, err := listener.Accept()
		if err != nil {
			continue
		}
		go serve(conn)
	}
}
