// Go net/http over crypto/tls, HTTP/1.1 with keep-alive, with Nagle turned back on.
//
// Go sets TCP_NODELAY on every connection; the listener here calls
// (*net.TCPConn).SetNoDelay(false) on each accepted connection before the TLS layer sees it,
// as users do to "reduce packets". net/http writes through a 4 KB bufio.Writer, so a body
// larger than that (16 KB by default) reaches tls.Conn in several writes, each its own TLS
// record and send; with Nagle on, the later ones wait for the client's delayed ACK (~40 ms
// on Linux): a server-side Nagle x delayed-ACK stall seen through TLS. -nodelay leaves Go's
// default (TCP_NODELAY on), the fix. HTTP/2 is off (empty TLSNextProto), so clients speak
// HTTP/1.1. Prints "PORT <n>" once listening and runs until killed.
//
// Flags: -cert FILE -key FILE (PEM, required), -nodelay, -body-bytes N (default 16384).
// Standard library only: the tests build it with `go build` of this one file.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
)

// nagleListener turns Nagle's algorithm back on for every TCP connection it accepts.
type nagleListener struct{ net.Listener }

func (l nagleListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		if err := conn.(*net.TCPConn).SetNoDelay(false); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, err
}

func main() {
	certFile := flag.String("cert", "", "PEM certificate chain (required)")
	keyFile := flag.String("key", "", "PEM private key (required)")
	noDelay := flag.Bool("nodelay", false, "keep Go's default TCP_NODELAY on (the fix)")
	bodyBytes := flag.Int("body-bytes", 16384, "response body size")
	flag.Parse()
	if *certFile == "" || *keyFile == "" || *bodyBytes < 0 {
		flag.Usage()
		os.Exit(2)
	}
	body := make([]byte, *bodyBytes)
	for i := range body {
		body[i] = 'x'
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	if !*noDelay {
		listener = nagleListener{listener}
	}
	srv := &http.Server{
		TLSConfig: &tls.Config{},
		// Not nil: no automatic HTTP/2, so ALPN offers nothing and clients use HTTP/1.1.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
		}),
		// A client that gives up on the handshake (an untrusted certificate) is expected.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	fmt.Printf("PORT %d\n", port)
	os.Stdout.Sync()
	// ServeTLS wraps the listener in tls.NewListener: SetNoDelay(false) is applied to the
	// raw TCP connection before the handshake.
	panic(srv.ServeTLS(listener, *certFile, *keyFile))
}
