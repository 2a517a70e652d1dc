// Go net/http server. As shipped Go sets TCP_NODELAY on every connection; with
// -nagle the listener turns it back off (SetNoDelay(false)), which stalls responses
// larger than net/http's 4 KB write buffer. Prints "PORT <n>" once listening.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
)

type nagleListener struct{ net.Listener }

func (l nagleListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		conn.(*net.TCPConn).SetNoDelay(false)
	}
	return conn, err
}

func main() {
	nagle := flag.Bool("nagle", false, "SetNoDelay(false) on accepted connections")
	bodyBytes := flag.Int("body-bytes", 13, "response body size")
	flag.Parse()
	body := make([]byte, *bodyBytes)
	for i := range body {
		body[i] = 'x'
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	if *nagle {
		listener = nagleListener{listener}
	}
	fmt.Printf("PORT %d\n", listener.Addr().(*net.TCPAddr).Port)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})
	panic(http.Serve(listener, handler))
}
